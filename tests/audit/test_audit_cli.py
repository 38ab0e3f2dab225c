"""`kvir audit` on the command line: formats, SARIF 2.1.0 validity, --fail-on exit status, --case, errors."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from kvir.cli.app import app

from .conftest import write

SARIF_SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "sarif" / "sarif-schema-2.1.0.json"

HEALTHY = """\
[2026-09-01 10:00:00] server_args=ServerArgs(model_path='m', context_length=131072, disaggregation_mode='null')
[2026-09-01 10:01:02 TP0] max_total_num_tokens=262144, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=32, context_len=131072, available_gpu_mem=4.00 GB
"""
# A PD decode node that is fine except that nothing shows whether deferred release is on: unknown only.
DECODE_UNKNOWN = """\
[2026-09-01 10:00:00] SGLang version: 0.5.22
[2026-09-01 10:00:00] server_args=ServerArgs(model_path='m', context_length=131072, disaggregation_mode='decode', disaggregation_enable_kv_checksum=True, kv_canary='log')
[2026-09-01 10:01:02 TP0] max_total_num_tokens=262144, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=32, context_len=131072, available_gpu_mem=4.00 GB
"""
BAD_PREFILL = """\
[2026-09-01 10:00:00] server_args=ServerArgs(model_path='m', context_length=1048576, disaggregation_mode='prefill', disaggregation_enable_kv_checksum=False, kv_canary='off')
[2026-09-01 10:01:02 TP0] max_total_num_tokens=681280, chunked_prefill_size=16384, max_prefill_tokens=16384, max_running_requests=64, context_len=1048576, available_gpu_mem=8.93 GB
"""

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, ["audit", *args], catch_exceptions=False)


@pytest.fixture
def logs(tmp_path: Path) -> dict[str, Path]:
    return {"healthy": write(tmp_path / "healthy-0.log", HEALTHY),
            "unknown": write(tmp_path / "decode-0.log", DECODE_UNKNOWN),
            "bad": write(tmp_path / "prefill-0.log", BAD_PREFILL)}


def test_fail_on_sets_the_exit_status(logs):
    h, u, b = str(logs["healthy"]), str(logs["unknown"]), str(logs["bad"])
    assert invoke(h, "--source-tz", "UTC", "-q").exit_code == 0
    assert invoke(h, "--source-tz", "UTC", "-q", "--fail-on", "low").exit_code == 0      # no findings at all
    assert invoke(b, "--source-tz", "UTC", "-q").exit_code == 0                          # no gate without --fail-on
    assert invoke(b, "--source-tz", "UTC", "-q", "--fail-on", "critical").exit_code == 1  # KVA001 critical
    assert invoke(u, "--source-tz", "UTC", "-q", "--fail-on", "low").exit_code == 0      # unknowns do not fail...
    assert invoke(u, "--source-tz", "UTC", "-q", "--fail-on", "medium", "--strict").exit_code == 1   # ...unless strict
    assert invoke(u, "--source-tz", "UTC", "-q", "--fail-on", "high", "--strict").exit_code == 0     # KVA007 is medium
    r = invoke(b, "--source-tz", "UTC", "-q", "--fail-on", "urgent")
    assert r.exit_code == 2 and "--fail-on must be one of" in r.output


def test_sarif_validates_against_the_2_1_0_schema(logs, tmp_path):
    out = tmp_path / "audit.sarif"
    r = invoke(str(logs["bad"]), str(logs["unknown"]), "--source-tz", "UTC", "-q", "-f", "sarif", "-o", str(out))
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    schema = json.loads(SARIF_SCHEMA.read_text())
    jsonschema.validators.validator_for(schema)(schema).validate(doc)
    run = doc["runs"][0]
    assert doc["version"] == "2.1.0" and run["tool"]["driver"]["name"] == "kvir"
    by_rule = {}
    for res in run["results"]:
        by_rule.setdefault(res["ruleId"], []).append(res)
    crit = by_rule["KVA001"][0]
    assert crit["kind"] == "fail" and crit["level"] == "error"
    loc = crit["locations"][0]["physicalLocation"]
    assert loc["region"]["startLine"] == 2 and loc["artifactLocation"]["uri"].endswith("prefill-0.log")
    assert run["artifacts"][loc["artifactLocation"]["index"]]["hashes"]["sha-256"]
    unknown = by_rule["KVA007"][0]                    # deferred release not in the evidence
    assert unknown["kind"] == "open" and unknown["level"] == "none"
    ids = [x["id"] for x in run["tool"]["driver"]["rules"]]
    assert all(run["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == res["ruleId"] for res in run["results"])
    assert ids == sorted(ids) and "KVA011" in ids


def test_json_on_stdout_and_table_on_stderr(logs):
    r = runner.invoke(app, ["audit", str(logs["bad"]), "--source-tz", "UTC", "-f", "json"], catch_exceptions=False)
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["summary"]["findings"]["critical"] == 1 and doc["summary"]["node_starts"] == 1
    assert doc["node_configs"][0]["pool_tokens"] == 681_280
    assert "Node starts" in r.stderr and "Node starts" not in r.stdout


def test_case_gets_the_tables_and_the_manifest(logs, tmp_path):
    case = tmp_path / "case"
    r = invoke(str(logs["bad"]), "--source-tz", "UTC", "-q", "--case", str(case))
    assert r.exit_code == 0, r.output
    from kvir.case.store import open_case

    with open_case(case) as c:
        assert {"node_configs", "findings", "runtime_indicators", "node_exposure"} <= set(c.tables())
        assert c.df("SELECT count(*) AS n FROM node_configs")["n"][0] == 1
    m = json.loads((case / "manifest.json").read_text())
    inp = m["audit"]["inputs"][0]
    import hashlib

    assert inp["sha256"] == hashlib.sha256(logs["bad"].read_bytes()).hexdigest()
    assert inp["size_bytes"] == logs["bad"].stat().st_size
    queries = {q["query"] for q in m["queries"]}
    assert {"queries/audit/startup_lines.sql", "queries/audit/node_configs.sql", "queries/audit/findings.sql"} <= queries
    assert (case / "findings.csv").exists()


@pytest.mark.parametrize("args, message", [
    (["missing.log"], "no such file or folder"),
    (["{bad}", "--format", "xml"], "--format must be one of"),
    (["{bad}", "--output", "x.json"], "--output needs --format json or sarif"),
    (["{bad}", "--source-tz", "Mars/Olympus"], "unknown time zone"),
    (["{bad}", "--inventory", "nope.toml", "--source-tz", "UTC"], "inventory file not found"),
])
def test_clear_errors_exit_2(logs, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    args = [a.replace("{bad}", str(logs["bad"])) for a in args]
    r = invoke(*args, "-q")
    assert r.exit_code == 2 and message in r.output


def test_naive_times_without_zone_name_the_file(logs):
    r = invoke(str(logs["bad"]), "-q")
    assert r.exit_code == 2
    assert "prefill-0.log:1: start-up log times are host-local" in " ".join(r.output.split())
