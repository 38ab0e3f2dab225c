"""The mechanism registry and the contract every registered mechanism keeps (kvir.spec.mechanism): as the
format contract test runs over every format, these run over every mechanism the registry holds."""
from __future__ import annotations

import json
import tomllib

import pytest

from kvir.core.errors import KvirError, SpecError
from kvir.spec import mechanism as registry
from kvir.spec.mechanism import STAGES, Mechanism, SpecContext, hookspec_members, mechanism, mechanisms, names
from kvir.spec.model import parse_spec
from kvir.spec.template import template

ALL = [m.name for m in mechanisms()]


def test_the_shipped_mechanisms_are_registered_the_default_first():
    assert names()[0] == "oversized-prompt" and set(names()) >= {"oversized-prompt", "prefix-cache"}
    assert mechanism(None) is mechanism("oversized-prompt")
    with pytest.raises(KvirError, match="unknown mechanism 'cache-poisoning'; kvir knows 'oversized-prompt'"):
        mechanism("cache-poisoning")


@pytest.mark.parametrize("name", ALL)
def test_every_part_has_every_member_of_its_stage_hookspec(name):
    m = mechanism(name)
    for stage in STAGES:
        part = m.part(stage)
        assert [n for n in hookspec_members(stage) if not hasattr(part, n)] == [], (name, stage)


@pytest.mark.parametrize("name", ALL)
def test_the_template_parses_to_this_mechanism_and_its_params_survive_the_case(name):
    m = mechanism(name)
    spec = parse_spec(tomllib.loads(template(name)))
    assert spec.mechanism == name and spec.mech is m
    record = m.spec.record(spec.params)
    assert json.loads(json.dumps(record)) == record                     # JSON-able: stored as one value
    assert m.spec.restore(json.loads(json.dumps(record))) == m.spec.restore(record)
    assert m.folder == name.replace("-", "_")


@pytest.mark.parametrize("name", ALL)
def test_a_section_of_another_mechanism_is_refused_naming_its_owner(name):
    others = [o for o in mechanisms() if o.name != name and o.spec.section]
    data = tomllib.loads(template(name))
    for o in others:
        bad = {**data, o.spec.section: {}}
        with pytest.raises(SpecError) as e:
            parse_spec(bad)
        assert e.value.key == o.spec.section and o.name in str(e.value)


def test_registration_refuses_a_part_missing_a_hookspec_member(tmp_path, monkeypatch):
    pkg = tmp_path / "kvirtest_incomplete"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for stage in STAGES:     # every stage's part copied from the default mechanism's, but spec lacks restore
        src = f"from {mechanism(None).package}.{stage} import PART as _P\n"
        if stage == "spec":
            src += ("class _Spec:\n    def __getattr__(self, n):\n        if n == 'restore': raise AttributeError(n)\n"
                    "        return getattr(_P, n)\nPART = _Spec()\n")
        else:
            src += "PART = _P\n"
        (pkg / f"{stage}.py").write_text(src)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(KvirError, match=r"its spec part \(kvirtest_incomplete.spec\) lacks restore"):
        registry.register(Mechanism("incomplete", "a test", "kvirtest_incomplete"))
    assert "incomplete" not in names()


@pytest.mark.parametrize("bad, why", [("Prefix_Cache", "kebab-case"), ("prefix-cache", "registered twice")])
def test_registration_refuses_a_bad_or_taken_name(bad, why):
    with pytest.raises(KvirError, match=why):
        registry.register(Mechanism(bad, "a test", mechanism(None).package))


def test_spec_context_carries_the_declared_engine_into_the_section():
    trig = mechanism("oversized-prompt").spec
    err = lambda k, msg: SpecError(msg, key=k)     # noqa: E731
    t = trig.parse({"pool_tokens": 10, "context_tokens": 20}, SpecContext(err, "vllm"))
    assert t.engine == "vllm" and trig.engine(t) == "vllm"
    with pytest.raises(SpecError) as e:
        trig.parse({"pool_tokens": 10, "context_tokens": 20, "engine": "sglang"}, SpecContext(err, "vllm"))
    assert e.value.key == "incident.engine"
