"""Per-deployment VEX from kvir preflight: CSAF 2.0 (csaf_vex) and OpenVEX v0.2.0 documents, one per node and
known defect, validated by the csaf package (schema and mandatory tests), by Secvisogram's validator (every
CSAF 2.0 test set; tests/validators, where Node.js is installed) and by OpenVEX's JSON schema (vendored under
tests/schemas/openvex, its source in tests/schemas/SOURCES.md).

Statuses worked out by hand from tests/preflight/fixtures (see tests/preflight/test_preflight.py) for the defect
"sglang before 0.5.20" (the build table: 0.5.11-0.5.19 forward the over-long stub to decode in PD mode):
  glm53-prefill, glm53-decode   0.5.19, PD                      known_affected (vendor_fix: 0.5.20 or later)
  qwen-pd-mixed                 0.5.19, --disaggregation-mode null  known_not_affected, vulnerable_code_not_in_execute_path
  qwen-pd-prefill, -decode      0.5.23                          fixed
  launch-sglang                 0.5.21                          fixed
  cache, chat, safe, vllm-server  vLLM                          known_not_affected, component_not_present
"""
from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.preflight.test_preflight import INPUTS, ROOT

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)
EXPECTED = {
    "glm53-prefill-sglang": ("known_affected", None), "glm53-decode-sglang": ("known_affected", None),
    "qwen-pd-mixed": ("known_not_affected", "vulnerable_code_not_in_execute_path"),
    "qwen-pd-prefill": ("fixed", None), "qwen-pd-decode": ("fixed", None), "launch-sglang": ("fixed", None),
    "cache": ("known_not_affected", "component_not_present"), "chat": ("known_not_affected", "component_not_present"),
    "safe": ("known_not_affected", "component_not_present"),
    "vllm-server": ("known_not_affected", "component_not_present"),
}
SPEC = """
[incident]
id = "ACME-2026-7"
title = "Cross-tenant KV exposure"
models = ["zai-org/GLM-5.3"]
window_start = 2026-08-27T00:00:00Z
window_end = 2026-09-09T00:00:00Z
[trigger]
pool_tokens = 681280
context_tokens = 1048576
[defect]
package = "sglang"
vendor = "sgl-project"
introduced_version = "0.5.11"
fixed_version = "0.5.20"
description = "With prefill/decode disaggregation a prompt the pool cannot hold is served from KV nobody wrote for it."
references = ["https://github.com/sgl-project/sglang"]
cwe = "CWE-226"
[disclosure]
provider = "ACME Inference"
provider_namespace = "https://acme.example"
csaf_base_url = "https://acme.example/.well-known/csaf/white"
cvss_v3 = "CVSS:3.1/AV:N/AC:L/PR:L/UI:N/S:U/C:H/I:N/A:N"
tlp = "WHITE"
csaf_status = "final"
"""


@pytest.fixture(scope="module")
def result():
    from kvir.preflight import preflight

    return preflight(INPUTS)


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    from kvir.spec.model import load_spec

    p = tmp_path_factory.mktemp("vex") / "incident.toml"
    p.write_text(SPEC)
    return load_spec(p)


@pytest.mark.parametrize("with_spec", [False, True])
def test_statuses_per_deployment(result, spec, with_spec):
    from kvir.vex import vex_documents

    docs = vex_documents(result.node_configs, spec if with_spec else None, NOW)
    got = {st.node: (st.status, st.justification) for st, *_ in docs}
    assert got == EXPECTED
    how = {k.defect.source for _, k, _, _ in docs}
    assert how == ({"spec"} if with_spec else {"build table"})     # the table matched glm53-prefill's evidence
    aff = next(d for st, _, d, _ in docs if st.node == "glm53-prefill-sglang")
    [rem] = aff["vulnerabilities"][0]["remediations"]
    assert rem["category"] == "vendor_fix" and "0.5.20 or later" in rem["details"]


def test_unknown_build_is_under_investigation():
    from kvir.preflight import preflight
    from kvir.vex import vex_documents

    r = preflight(INPUTS, ["python3", "-m", "sglang.launch_server", "--model-path", "m", "--disaggregation-mode",
                           "decode"])
    docs = {st.node: st for st, *_ in vex_documents(r.node_configs, None, NOW)}
    assert docs["command-line"].status == "under_investigation" and docs["command-line"].version is None


def test_no_defect_no_vex(tmp_path):
    """Evidence that matches no known defect, and no [defect]: nothing is written (never invented)."""
    from kvir.preflight import preflight
    from kvir.vex import write_vex

    r = preflight([str(ROOT / "tests" / "preflight" / "fixtures" / "k8s-sglang-fixed.yaml")])
    assert write_vex(r, tmp_path, now=NOW) == []


@pytest.fixture(scope="module")
def written(result, spec, tmp_path_factory):
    from kvir.vex import write_vex

    out = tmp_path_factory.mktemp("vexout")
    return out, write_vex(result, out, incident=spec, now=NOW)


def test_csaf_valid_by_the_csaf_package(written):
    from kvir.report.validate import validate_csaf

    out, paths = written
    csaf = sorted((out / "csaf").glob("*.json"))
    assert len(csaf) == len(EXPECTED) and len(paths) == 2 * len(EXPECTED)
    for p in csaf:
        doc = json.loads(p.read_text())
        check = validate_csaf(doc)
        assert check.valid is True and check.errors == [], (p.name, check.errors)
        assert doc["document"]["category"] == "csaf_vex" and doc["document"]["tracking"]["status"] == "final"
        assert p.name == doc["document"]["tracking"]["id"].lower().replace(".", "_") + ".json"
        # the publisher's own URL and score leave no recommended test unmet but the deployment's product helper
        assert all(w.startswith("6.2.16") for w in check.warnings), (p.name, check.warnings)


def test_csaf_valid_by_secvisogram(written):
    node = shutil.which("node")
    validators = ROOT / "tests" / "validators"
    if node is None or not (validators / "node_modules" / "@secvisogram" / "csaf-validator-lib").is_dir():
        pytest.skip("Node.js or tests/validators/node_modules missing (.ci/run installs them: npm ci)")
    out, _ = written
    files = sorted(str(p) for p in (out / "csaf").glob("*.json"))
    proc = subprocess.run([node, str(validators / "csaf_validate.mjs"), *files, "--compact", "--no-spellcheck"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    runs = json.loads(proc.stdout)
    runs = runs if isinstance(runs, list) else [runs]
    assert len(runs) == len(files)
    for run in runs:
        assert run["valid"] is True and run["summary"]["crashed"] == 0, run["file"]
        errors = [f for f in run["findings"] if f["level"] == "error"]
        assert errors == [], (run["file"], errors)


def test_openvex_valid_by_its_schema(written):
    from jsonschema import Draft202012Validator

    out, _ = written
    schema = json.loads((ROOT / "tests" / "schemas" / "openvex" / "openvex_json_schema_0.2.0.json").read_text())
    v = Draft202012Validator(schema)
    statuses = {}
    for p in sorted((out / "openvex").glob("*.json")):
        doc = json.loads(p.read_text())
        assert list(v.iter_errors(doc)) == [], p.name
        [s] = doc["statements"]
        node = s["products"][0]["@id"].rsplit("/", 1)[-1]
        statuses[node] = (s["status"], s.get("justification"))
        if s["status"] == "affected":
            assert s["action_statement"] and s["products"][0]["subcomponents"] == [{"@id": "pkg:pypi/sglang@0.5.19"}]
    openvex_name = {"known_affected": "affected", "known_not_affected": "not_affected", "fixed": "fixed"}
    assert statuses == {n: (openvex_name[s], j) for n, (s, j) in EXPECTED.items()}
