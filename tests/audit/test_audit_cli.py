"""`kvir audit` on the command line: formats, SARIF 2.1.0 validity, --fail-on exit status, --case, errors."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from kvir.cli.app import app

from .conftest import write
from .grammar import dump, golden_message, pool_line, startup

SARIF_SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "sarif" / "sarif-schema-2.1.0.json"

# every line in the grammar of the build it stands for (tests/audit/grammar.py)
HEALTHY = "\n".join(startup("0.5.23", "2026-09-01 10:00:00", mode="null", context=131_072, pool=262_144))
# A PD decode node whose dump a shipper cut after 3,000 characters (a 0.5.21 dict: >= 0.5.19, so the build
# may or may not transfer the stub, and the flags are past the cut): every finding is unknown, none failed.
DECODE_UNKNOWN = (f"[2026-09-01 10:00:00] {golden_message('0.5.21')[:3000]}\n"
                  f"[2026-09-01 10:01:02 TP0] {pool_line(262_144, 131_072)}\n")
BAD_PREFILL = (f"[2026-09-01 10:00:00] {dump('0.5.19', context_length=1_048_576)}\n"
               f"[2026-09-01 10:01:02 TP0] {pool_line(681_280, 1_048_576)}\n")

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
    assert invoke(u, "--source-tz", "UTC", "-q", "--fail-on", "high", "--strict").exit_code == 1     # ...unless strict
    assert invoke(u, "--source-tz", "UTC", "-q", "--fail-on", "critical", "--strict").exit_code == 0  # KVA004 is high
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
    unknown = [x for x in by_rule["KVA004"]           # the cut dump's build spans the fix
               if x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("decode-0.log")][0]
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
    # the findings query that ran is the default mechanism's own (queries/mechanisms/<m>/, issue 30)
    assert {"queries/audit/startup_lines.sql", "queries/audit/node_configs.sql",
            "queries/mechanisms/oversized_prompt/audit/findings.sql"} <= queries
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


def test_naive_times_without_zone_are_shown_host_local(logs):
    """Pool vs context, the build and the flags need no clock: without --source-tz the audit runs, shows the
    host's times with the zone unknown, and says so once per file."""
    r = runner.invoke(app, ["audit", str(logs["bad"]), "-f", "json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    nc = doc["node_configs"][0]
    assert nc["ts"] is None and nc["ts_host"].startswith("2026-09-01T10:00:00") and nc["ts_zone"] == "host-local, zone unknown"
    assert [p["problem"][:42] for p in doc["problems"]] == ["times are host-local and no zone was given"]
    assert doc["summary"]["findings"]["critical"] == 1
