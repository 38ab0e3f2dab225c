"""`kvir preflight` as CI runs it: exit status by --fail-on, SARIF 2.1.0 valid against the official schema (and,
where Node.js is installed, the SARIF Multitool with GitHub's ingestion rules, as tests/report does for the
audit), JUnit XML with one test case per rule and node, the table within 80 columns, exit 2 for unusable input."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from .test_preflight import DEPLOY, INPUTS, ROOT

VALIDATORS = ROOT / "tests" / "validators"


def _run(args: list[str], cwd: Path | None = None):
    from kvir.cli.app import app

    here = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(app, ["preflight", *args], env={"COLUMNS": "80"})
    finally:
        os.chdir(here)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    out = tmp_path_factory.mktemp("preflight")
    files = [str(Path(p).relative_to(ROOT)) for p in INPUTS]
    res = _run([*files, "--sarif", str(out / "p.sarif"), "--junit", str(out / "p.xml"), "--fail-on", "high"], cwd=ROOT)
    return res, out


def test_exit_status_follows_the_threshold(outputs):
    res, _ = outputs
    assert res.exit_code == 1, res.output
    clean = [str(DEPLOY / "k8s-sglang-fixed.yaml")]
    assert _run([*clean, "--fail-on", "high", "-q"]).exit_code == 0          # its worst is an unknown
    assert _run([str(DEPLOY / "compose-vllm-lmcache.yaml"), "--fail-on", "critical", "-q"]).exit_code == 0
    assert _run([str(DEPLOY / "compose-vllm-lmcache.yaml"), str(DEPLOY / "requirements.txt"), "-q"]).exit_code == 1


def test_unusable_input_exits_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("services: [\n")
    res = _run([str(bad)])
    assert res.exit_code == 2 and "bad.yaml" in res.output and "not valid YAML" in res.output
    assert _run(["--fail-on", "severe", str(bad)]).exit_code == 2
    assert _run([]).exit_code == 2


def test_launch_after_double_dash():
    res = _run(["-q", "--", "vllm", "serve", "m", "--enable-prefix-caching", "--prefix-caching-hash-algo", "xxhash"])
    assert res.exit_code == 0, res.output           # KVA015 is medium without PYTHONHASHSEED, below high
    res = _run(["-q", "--fail-on", "medium", "--", "vllm", "serve", "m", "--enable-prefix-caching",
                "--prefix-caching-hash-algo", "xxhash"])
    assert res.exit_code == 1
    # no version and no --enable-prefix-caching: whether the cache is on is unknown, so KVA015 cannot fail
    res = _run(["-q", "--fail-on", "low", "--", "vllm", "serve", "m", "--prefix-caching-hash-algo", "xxhash"])
    assert res.exit_code == 0


def test_table_fits_80_columns(outputs):
    res, _ = outputs
    lines = res.output.splitlines()
    assert lines and max(len(x) for x in lines) <= 80
    assert any("KVA016" in x for x in lines)


def test_sarif_is_valid_and_points_at_the_files(outputs):
    from jsonschema import Draft7Validator

    _, out = outputs
    doc = json.loads((out / "p.sarif").read_text())
    schema = json.loads((ROOT / "tests" / "schemas" / "sarif" / "sarif-schema-2.1.0.json").read_text())
    errors = list(Draft7Validator(schema).iter_errors(doc))
    assert errors == []
    run = doc["runs"][0]
    ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert {"KVA001", "KVA015", "KVA016", "KVT001"} <= ids
    hit = next(r for r in run["results"] if r["ruleId"] == "KVA016")
    loc = hit["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "tests/preflight/fixtures/requirements.txt"
    assert loc["region"]["startLine"] == 2 and hit["kind"] == "fail" and hit["level"] == "error"
    unknown = [r for r in run["results"] if r["properties"]["status"] == "unknown"]
    assert unknown and all(r["kind"] == "open" and r["level"] == "none" for r in unknown)


def test_sarif_multitool_with_github_rules(outputs):
    node = shutil.which("node")
    if node is None or not (VALIDATORS / "node_modules" / "@microsoft" / "sarif-multitool").is_dir():
        pytest.skip("Node.js or tests/validators/node_modules missing (.ci/run installs them: npm ci)")
    _, out = outputs
    proc = subprocess.run([node, str(VALIDATORS / "sarif_validate.mjs"), str(out / "p.sarif"), "--compact",
                           "--rule-kind", "Sarif;Gh;Ghas"], capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    run = json.loads(proc.stdout)
    run = run[0] if isinstance(run, list) else run
    bad = [r for r in run["results"] if r["level"] in ("error", "warning")]
    assert run["valid"] is True and bad == []


def test_junit_one_case_per_rule_and_node(outputs):
    from kvir.preflight.result import PreflightResult

    _, out = outputs
    root = ET.parse(out / "p.xml").getroot()
    n_rules = len(PreflightResult.rules())
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert len(suites) == 10
    for s in suites.values():
        assert len(s.findall("testcase")) == n_rules == int(s.get("tests"))
    case = {c.get("name").split()[0]: c for c in suites["cache"].findall("testcase")}
    assert case["KVA016"].find("failure").get("type") == "high"
    assert case["KVA013"].find("skipped") is not None             # unknown: skipped, never passed
    assert case["KVA004"].find("failure") is None and case["KVA004"].find("skipped") is None
    prefill = {c.get("name").split()[0]: c for c in suites["glm53-prefill-sglang"].findall("testcase")}
    assert prefill["KVA001"].find("failure").get("type") == "critical"
    # medium findings are below --fail-on high: not failures, reported in system-out
    assert prefill["KVA005"].find("failure") is None and "medium" in prefill["KVA005"].find("system-out").text
    fails = sum(len(s.findall("testcase/failure")) for s in suites.values())
    # cases failing at --fail-on high: prefill KVA001, KVA004; decode KVA004; chat KVA015; cache KVA016
    assert int(root.get("failures")) == fails == 5


def test_vex_beside_the_gate(tmp_path):
    res = _run([str(DEPLOY / "k8s-sglang-pd.yaml"), "--vex", str(tmp_path / "vex"), "-q"])
    assert res.exit_code == 1                      # the gate still decides the status
    assert len(list((tmp_path / "vex" / "csaf").glob("*.json"))) == 2
