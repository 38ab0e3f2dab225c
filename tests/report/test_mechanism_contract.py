"""The report stage's contract with every registered mechanism (kvir.report.plugin.ReportPart and the story
interface kvir.report.story.Story), run over kvir.spec.mechanism.mechanisms() as the format contract runs
over every format: each mechanism's story writes every member the documents read, with the type the
interface declares; every document renders from a small case of that mechanism, loading no template but
the shared ones its artifact lists and the mechanism's own; its own templates are listed by its part and
say what they are; a story or a part that lacks a member fails when the mechanism registers.

A mechanism added to the registry needs a small case here (CASES): its test fails until it has one.
"""
from __future__ import annotations

import re
import typing
from importlib import resources
from pathlib import Path

import pytest

import kvir
from kvir.core.errors import KvirError
from kvir.report import ARTIFACTS, report
from kvir.report.artifacts import INDEX_TEMPLATES, kind
from kvir.report.markup import loader
from kvir.report.plugin import report_part
from kvir.report.story import Story
from kvir.spec import mechanism as registry
from kvir.spec.mechanism import STAGES, Mechanism, mechanism, mechanisms, names
from tests.conftest import write

from . import fleet

ALL = [m.name for m in mechanisms()]
REAL_LOG = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "vllm-0.32.0-cpu-prefix-cache" / "server.log"


def _oversized(root: Path, staged: bool) -> Path:
    """The report tests' small fleet (fleet.py); staged: with its hand-made audit and replay rows."""
    result = kvir.triage(fleet.write_fleet(root / "fleet"), [], out=root / "case")
    if staged:
        fleet.add_audit_rows(result.case.con)
        fleet.add_replay_rows(result.case.con)
    result.case.close()
    return root / "case"


PREFIX_SPEC = '''[incident]
id = "PC-CONTRACT"
title = "Prefix cache shared across tenants"
models = ["acme/tiny"]
window_start = 2026-11-01T10:00:00Z
window_end = 2026-11-01T11:00:00Z
mechanism = "prefix-cache"
engine = "vllm"

[prefix_cache]
isolation = "none"
{defect}
[[sources]]
path = "gw.csv"
format = "generic-csv"
[sources.columns]
request_id = "id"
ts = "ts"
account_id = "account"
model = "model"
prompt_tokens = "prompt"
cached_tokens = "cached"
http_status = "status"
prefill_node = "node"
'''
DEFECT = '''
[defect]
package = "vllm"
fixed_version = "0.99.0"
description = "Declared for the contract test: tenants share the prefix cache."
references = ["https://example.org/issue/1"]
'''
# id, time, account, node, prompt tokens, cached tokens: r2 affected (only acme came before), r3 possibly
GATEWAY = "id,ts,account,model,prompt,cached,status,node\n" + "".join(
    f"{i},2026-11-01T{t}Z,{a},acme/tiny,{p},{c},200,n1\n" for i, t, a, p, c in (
        ("r1", "10:00:00", "acme", 1000, 0), ("r2", "10:01:00", "beta", 900, 512),
        ("r3", "10:02:00", "acme", 1200, 512)))


def _prefix(root: Path, staged: bool) -> Path:
    """A gateway CSV with cached-token counts; staged: the real vLLM-CPU start-up log audited, and a [defect]."""
    write(root / "incident.toml", PREFIX_SPEC.format(defect=DEFECT if staged else ""))
    write(root / "gw.csv", GATEWAY)
    kvir.triage(root / "incident.toml", [root / "gw.csv"], out=root / "case").case.close()
    if staged:
        kvir.audit.audit([REAL_LOG], case=root / "case")
    return root / "case"


CASES = {"oversized-prompt": _oversized, "prefix-cache": _prefix}


class _Recording:
    """The mechanism's own loader (kvir.report.markup.loader), recording every template a render loads."""

    def __init__(self, folder: str):
        self.inner, self.loaded = loader(folder), set()

    def get_source(self, environment, name):
        self.loaded.add(name)
        return self.inner.get_source(environment, name)

    def load(self, environment, name, globals=None):
        from jinja2 import BaseLoader

        return BaseLoader.load(self, environment, name, globals)


@pytest.fixture(scope="module", params=[(n, staged) for n in ALL for staged in (True, False)],
                ids=lambda p: f"{p[0]}-{'staged' if p[1] else 'bare'}")
def rendered_case(request, tmp_path_factory):
    name, staged = request.param
    assert name in CASES, f"mechanism {name!r} has no small case in tests/report/test_mechanism_contract.py CASES"
    case = CASES[name](tmp_path_factory.mktemp(name.replace("-", "_")), staged)
    rec = _Recording(mechanism(name).folder)
    return name, report(case, template_loader=rec), rec.loaded


def _conforms(value, hint) -> bool:
    """`value` is of the type hint (str, int, tuple[str, ...], list[str] | None)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is type(None):
        return value is None
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return any(_conforms(value, a) for a in args)
    if origin in (tuple, list):
        return isinstance(value, origin) and all(isinstance(x, args[0]) for x in value)
    return isinstance(value, hint) and not (hint is int and isinstance(value, bool))


SAMPLE_ARGS = {"other_rule_sentence": (3, 1), "trigger_sentence": ("acme/tiny",), "source_what": ("acme/tiny",),
               "served_on": ("node-a", "node-b")}


def test_the_story_writes_every_member_of_the_interface_with_its_type(rendered_case):
    name, result, _ = rendered_case
    story = result.model.story
    assert isinstance(story, Story) and not type(story).__abstractmethods__
    members = sorted(Story.__abstractmethods__)
    assert {"rule_text", "cause_short", "notice_what", "served_on"} <= set(members)
    for member in members:
        spec = Story.__dict__[member]
        fn = spec.fget if isinstance(spec, property) else spec
        hint = typing.get_type_hints(fn)["return"]
        value = getattr(story, member)
        if not isinstance(spec, property):
            assert member in SAMPLE_ARGS, f"Story.{member} takes arguments: give SAMPLE_ARGS an example"
            value = value(*SAMPLE_ARGS[member])
        assert _conforms(value, hint), (name, member, hint, value)
        assert "None" not in (value if isinstance(value, str) else ""), (name, member, value)


def test_every_document_renders_from_the_shared_and_the_mechanisms_own_templates(rendered_case):
    name, result, loaded = rendered_case
    part = report_part(name)
    assert result.ok, [(v.document, v.errors) for v in result.validations if v.valid is False]
    rendered = {a.path.split("/")[0].split(".")[0] for a in result.artifacts}
    expected = {"timeline", "postmortem", "public_report", "csaf", "notices", "gdpr_art33", "figures"}
    if result.model.defect is not None:
        expected |= {"advisory", "osv", "cve"}
    assert expected <= rendered, sorted(expected - rendered)
    listed = {t for a in ARTIFACTS for t in kind(a).templates} | set(INDEX_TEMPLATES)
    own = {t for ts in part.templates.values() for t in ts}
    assert loaded <= listed | own, sorted(loaded - listed - own)
    assert result.model.facts.mechanism.name == name


@pytest.mark.parametrize("name", ALL)
def test_the_mechanisms_own_templates_are_its_parts_and_say_what_they_are(name):
    m, part = mechanism(name), report_part(name)
    folder = resources.files("kvir.templates").joinpath("mechanisms", m.folder)
    found = {p.name for p in folder.iterdir() if p.name.endswith(".j2")} if folder.is_dir() else set()
    listed = {t for ts in part.templates.values() for t in ts}
    assert found == listed, f"templates/mechanisms/{m.folder}/ holds {sorted(found)}, its part lists {sorted(listed)}"
    assert set(part.templates) <= set(ARTIFACTS)
    if part.candidate_notice is not None:
        assert part.candidate_notice.template in part.templates.get("notices", ())
    for t in found:
        text = folder.joinpath(t).read_text()
        head = re.match(r"\{#-?\s*(\S+)[: ](.+?)-?#\}", text, re.S)
        assert head and head.group(1).rstrip(":") == t and "Variables:" in head.group(2), t


def test_a_story_that_lacks_a_member_fails_when_it_is_defined():
    with pytest.raises(KvirError, match=r"story .*Partial lacks .*cause_short.*rule_text"):
        class Partial(Story):          # noqa: F841 (its definition is what fails)
            notice_what = "x"
    # an intermediate class may leave members to its subclasses, saying so
    class Shared(Story, abstract=True):
        notice_what = "x"

    assert "notice_what" not in Shared.__abstractmethods__ and "rule_text" in Shared.__abstractmethods__


def test_registration_refuses_a_mechanism_whose_story_lacks_a_member(tmp_path, monkeypatch):
    pkg = tmp_path / "kvirtest_storyless"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    default = mechanism(None).package
    for stage in STAGES:         # every part the default mechanism's, but the report part's story lacks one
        src = f"from {default}.{stage} import PART\n"
        if stage == "report":     # its story writes one sentence of the interface
            src += "from kvir.report.story import Story\nclass Wordless(Story):\n    rule_text = 'r'\n"
        (pkg / f"{stage}.py").write_text(src)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(KvirError, match=r"story kvirtest_storyless\.report\.Wordless lacks .*notice_what"):
        registry.register(Mechanism("storyless", "a test", "kvirtest_storyless"))
    assert "storyless" not in names()
