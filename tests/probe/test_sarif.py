"""Probe output as SARIF 2.1.0, validated against the official schema (tests/schemas/sarif, a verbatim copy)."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "sarif" / "sarif-schema-2.1.0.json").read_text())


def errors(doc: dict) -> list[str]:
    v = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)
    return [f"{'/'.join(map(str, e.path))}: {e.message}" for e in v.iter_errors(doc)]


def test_exposed_run_is_valid_sarif_with_failed_checks(leaking_run):
    doc = leaking_run["result"].to_sarif()
    assert errors(doc) == []
    res = doc["runs"][0]["results"]
    kinds = {r["ruleId"]: r["kind"] for r in res if r["ruleId"] in ("KVIR-P100", "KVIR-P101")}
    assert kinds == {"KVIR-P100": "fail", "KVIR-P101": "fail"}
    canary = [r for r in res if r["ruleId"] == "KVIR-P004"]
    assert canary and all(r["level"] == "error" and r["properties"]["requestIds"] for r in canary)
    assert doc["runs"][0]["properties"]["verdict"] == "exposed"


def test_not_exposed_run_is_valid_sarif_with_passed_checks(fixed_run):
    doc = fixed_run["result"].to_sarif()
    assert errors(doc) == []
    checks = [r for r in doc["runs"][0]["results"] if r["ruleId"].startswith("KVIR-P10")]
    assert {r["kind"] for r in checks} == {"pass"} and {r["level"] for r in checks} == {"none"}


def test_inconclusive_and_dry_runs_are_valid_sarif():
    import kvir

    dry = kvir.probe("http://127.0.0.1:9", context=2048, dry_run=True, progress=False)
    assert errors(dry.to_sarif()) == []
    from kvir.probe.result import CheckResult, ProbeResult

    r = ProbeResult(options={"endpoint": "http://127.0.0.1:9"}, plan={}, started_at="2026-12-01T00:00:00Z",
                    ended_at="2026-12-01T00:00:05Z", checks=[CheckResult("length", "inconclusive", "no answer")])
    doc = r.to_sarif()
    assert errors(doc) == [] and doc["runs"][0]["results"][0]["kind"] == "open"
