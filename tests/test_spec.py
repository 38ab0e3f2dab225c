"""incident.toml: the minimal spec works as written; every invalid spec names its key."""
from __future__ import annotations

import datetime as dt

import pytest

from kvir.core.errors import SpecError
from kvir.spec.model import load_spec, parse_spec
from kvir.spec.template import template
from tests.conftest import spec_text

UTC = dt.timezone.utc


def test_minimal_spec_exactly_as_in_the_issue(tmp_path):
    p = tmp_path / "incident.toml"
    p.write_text(spec_text())
    s = load_spec(p)
    assert s.id == "KVIR-2026-0001"
    assert s.models == ("@cf/zai-org/glm-5.3", "zai-org/GLM-5.3")
    assert s.window_start == dt.datetime(2026, 8, 27, tzinfo=UTC)
    assert s.window_end == dt.datetime(2026, 9, 9, 19, 40, tzinfo=UTC)
    assert (s.params.pool_tokens, s.params.context_tokens, s.params.rule) == (681280, 1048576, "public")
    # no engine named: the engine rule waits for the evidence; on SGLang min(1048575, 681279) - 5 = 681,274
    assert s.engine is None and s.params.engine_limit is None
    assert s.params.with_engine("sglang").engine_limit == 681274
    assert s.params.other_rule == "engine"


def test_template_written_by_init_parses(tmp_path):
    p = tmp_path / "incident.toml"
    p.write_text(template())
    assert load_spec(p).params.rule == "public"


def test_offsets_are_converted_to_utc(tmp_path):
    p = tmp_path / "incident.toml"
    p.write_text(spec_text().replace("2026-08-27T00:00:00Z", "2026-08-27T02:00:00+02:00"))
    assert load_spec(p).window_start == dt.datetime(2026, 8, 27, tzinfo=UTC)


@pytest.mark.parametrize("change, key, words", [
    (("2026-08-27T00:00:00Z", "2026-08-27T00:00:00"), "incident.window_start", "no UTC offset"),
    (("2026-08-27T00:00:00Z", "2026-08-27"), "incident.window_start", "bare date"),
    (('rule = "public"', 'rule = "strict"'), "trigger.rule", '"public"'),
    (("pool_tokens = 681280", "pool_tokens = -1"), "trigger.pool_tokens", "positive integer"),
    (("pool_tokens = 681280", 'pool_tokens = "681280"'), "trigger.pool_tokens", "positive integer"),
    (("2026-09-09T19:40:00Z", "2026-08-01T00:00:00Z"), "incident.window_end", "before window_start"),
    (('models = ["@cf/zai-org/glm-5.3", "zai-org/GLM-5.3"]', "models = []"), "incident.models", "non-empty list"),
    (('title = "Cross-tenant KV cache exposure on GLM-5.3"', 'titel = "x"'), "incident.titel", "unknown key"),
])
def test_invalid_specs_name_the_key(tmp_path, change, key, words):
    p = tmp_path / "incident.toml"
    p.write_text(spec_text().replace(*change))
    with pytest.raises(SpecError) as e:
        load_spec(p)
    assert f"[{key}]" in str(e.value) and words in str(e.value)
    assert str(p) in str(e.value)


def test_missing_table_and_file(tmp_path):
    with pytest.raises(SpecError, match="missing \\[trigger\\] table"):
        parse_spec({"incident": {}})
    with pytest.raises(SpecError, match="not found"):
        load_spec(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[incident\nid=")
    with pytest.raises(SpecError, match="not valid TOML"):
        load_spec(bad)


def test_accounts_events_sources(tmp_path):
    extra = """
[[accounts]]
id = "acct-researcher"
label = "reporting researcher"
reason = "bug bounty"
exclude = true

[[events]]
ts = 2026-09-09T14:00:00Z
title = "Model made private"

[[events]]
ts = 2026-09-09T13:22:00Z
title = "Incident declared"

[[sources]]
path = "engine/*.log"
format = "sglang-text"
source_tz = "+05:30"
[sources.columns]
request_id = "id"
"""
    p = tmp_path / "incident.toml"
    p.write_text(spec_text(extra=extra))
    s = load_spec(p)
    assert s.accounts[0].exclude and s.accounts[0].label == "reporting researcher"
    assert [e.title for e in s.events] == ["Incident declared", "Model made private"]   # sorted by time
    assert s.sources[0].source_tz == "+05:30" and s.sources[0].columns == {"request_id": "id"}


@pytest.mark.parametrize("extra, key", [
    ('\n[[sources]]\npath = "x"\nsource_tz = "Mars/Olympus"\n', "sources[0].source_tz"),
    ('\n[[sources]]\npath = "x"\nrole = "router"\n', "sources[0].role"),
    ('\n[[sources]]\npath = "x"\n[sources.columns]\nprompt = "p"\n', "sources[0].columns.prompt"),
    ('\n[[accounts]]\nid = "a"\nlabel = "l"\nreason = "r"\n[[accounts]]\nid = "a"\nlabel = "l"\nreason = "r"\n', "accounts"),
    ('\n[[events]]\ntitle = "no time"\n', "events[0].ts"),
])
def test_invalid_lists_name_the_key(tmp_path, extra, key):
    p = tmp_path / "incident.toml"
    p.write_text(spec_text(extra=extra))
    with pytest.raises(SpecError) as e:
        load_spec(p)
    assert f"[{key}]" in str(e.value)


def test_init_template_holds_no_fact_of_the_reference_incident():
    from tests.foreign.facts import MECHANISM_WORDS, REFERENCE_FACTS

    # the engines may be named where the template documents a key (pool_tokens: "SGLang: max_total_num_tokens")
    found = [f for f in REFERENCE_FACTS + MECHANISM_WORDS if f in template() and f not in ("SGLang", "sglang")]
    assert found == []
    s = parse_spec(__import__("tomllib").loads(template()))
    assert s.engine is None and s.params.engine == "unknown" and s.defect == {}


def test_engine_and_defect_are_checked(tmp_path):
    p = tmp_path / "incident.toml"
    p.write_text(spec_text() .replace('rule = "public"', 'rule = "public"\nengine = "vllm"'))
    s = load_spec(p)
    assert s.engine == "vllm" and s.params.engine_limit == 1_048_576       # vLLM: max_model_len
    p.write_text(spec_text().replace('rule = "public"', 'rule = "public"\nengine = "tgi"'))
    with pytest.raises(SpecError, match=r"\[trigger.engine\].*sglang, vllm or unknown|\[trigger.engine\]"):
        load_spec(p)
    p.write_text(spec_text(extra='[disclosure]\nfixed_version = "1.2"\n'))
    with pytest.raises(SpecError, match=r"\[disclosure.fixed_version\].*\[defect\]"):
        load_spec(p)
    p.write_text(spec_text(extra='[defect]\npackage = "vllm"\nfixd_version = "1.2"\n'))
    with pytest.raises(SpecError, match=r"\[defect.fixd_version\]"):
        load_spec(p)
    p.write_text(spec_text(extra='[defect]\npackage = "vllm"\nfixed_version = "1.2"\ndescription = "x"\n'))
    assert load_spec(p).defect["fixed_version"] == "1.2"


def test_model_names_strip_a_gateway_prefix_of_three_part_aliases(tmp_path):
    p = tmp_path / "incident.toml"
    p.write_text(spec_text().replace('models = ["@cf/zai-org/glm-5.3", "zai-org/GLM-5.3"]',
                                     'models = ["hosted_vllm/acme/Llama-4-Long", "openai/gpt-oss-20b"]'))
    assert load_spec(p).model_names == ("hosted_vllm/acme/Llama-4-Long", "openai/gpt-oss-20b", "acme/Llama-4-Long")


_PC_INCIDENT = '''[incident]
id = "PC-1"
title = "prefix cache shared across tenants"
models = ["acme/tiny"]
window_start = 2026-11-01T00:00:00Z
window_end = 2026-11-02T00:00:00Z
mechanism = "prefix-cache"
engine = "vllm"
'''


def test_mechanism_defaults_to_oversized_prompt_and_prefix_cache_takes_its_own_table():
    import tomllib

    assert parse_spec(tomllib.loads(spec_text())).mechanism == "oversized-prompt"
    s = parse_spec(tomllib.loads(_PC_INCIDENT + '''
[prefix_cache]
instances = ["vllm-0", " vllm-1 "]
isolation = "gateway-salt"
lifetime_s = 900
block_tokens = 128
'''))
    assert (s.mechanism, s.engine) == ("prefix-cache", "vllm")
    pc = s.params
    assert (pc.instances, pc.isolation, pc.salt_field, pc.lifetime_s, pc.block_tokens) == \
        (("vllm-0", "vllm-1"), "gateway-salt", "cache_salt", 900, 128)
    assert "pool_tokens" not in s.query_params() and not hasattr(s.params, "pool_tokens")
    # nothing declared is nothing known: no instances, isolation unknown, no lifetime
    bare = parse_spec(tomllib.loads(_PC_INCIDENT)).params
    assert (bare.instances_known, bare.isolation, bare.lifetime_s, bare.block_tokens) == (False, "unknown", None, None)


@pytest.mark.parametrize("extra, key", [
    ('[trigger]\npool_tokens = 10\ncontext_tokens = 20\n', "trigger"),
    ('[prefix_cache]\nisolation = "tenant"\n', "prefix_cache.isolation"),
    ('[prefix_cache]\nlifetime_s = 0\n', "prefix_cache.lifetime_s"),
    ('[prefix_cache]\ninstances = [""]\n', "prefix_cache.instances"),
    ('[prefix_cache]\nttl = 5\n', "prefix_cache.ttl"),
])
def test_prefix_cache_spec_errors_name_the_key(extra, key):
    import tomllib

    with pytest.raises(SpecError) as e:
        parse_spec(tomllib.loads(_PC_INCIDENT + extra))
    assert e.value.key == key


def test_mechanism_and_engine_errors_name_the_key():
    import tomllib

    with pytest.raises(SpecError) as e:
        parse_spec(tomllib.loads(_PC_INCIDENT.replace('"prefix-cache"', '"rowhammer"')))
    assert e.value.key == "incident.mechanism"
    # the oversized-prompt mechanism has no [prefix_cache]
    with pytest.raises(SpecError) as e:
        parse_spec(tomllib.loads(spec_text() + '\n[prefix_cache]\nisolation = "none"\n'))
    assert e.value.key == "prefix_cache"
    # incident.engine and [trigger] engine are one fact: they must agree
    with pytest.raises(SpecError) as e:
        parse_spec(tomllib.loads(spec_text().replace("[trigger]", '[trigger]\nengine = "vllm"').replace(
            "[incident]", '[incident]\nengine = "sglang"')))
    assert e.value.key == "incident.engine"
