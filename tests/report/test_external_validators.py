"""The reference validators over the demo's documents: the BSI Secvisogram library
(@secvisogram/csaf-validator-lib, every CSAF 2.0 test set: schema, mandatory, optional, informative) on
both CSAF documents and Microsoft's SARIF Multitool (@microsoft/sarif-multitool, rule kinds Sarif, Gh and
Ghas) on `kvir audit --format sarif` of the demo fleet: no error and no warning.

Pinned in tests/validators/package.json + package-lock.json (`npm ci` there: .ci/run does it; the fixture
runs it when node_modules is missing). Offline: the URL-reachability tests (CSAF 6.3.6 / 6.3.7, SARIF2006)
are not run. Informative CSAF findings (6.3.x infos: no CVE id yet, a version range, spell check) are
allowed: they are not warnings. Skips only when Node.js is not installed.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1] / "validators"


@pytest.fixture(scope="module")
def node() -> str:
    exe = shutil.which("node")
    if exe is None:
        pytest.skip("Node.js is not installed (apt-get install -y nodejs npm): the reference CSAF and SARIF "
                    "validators cannot run here")
    if not (HERE / "node_modules" / "@secvisogram" / "csaf-validator-lib").is_dir() or \
            not (HERE / "node_modules" / "@microsoft" / "sarif-multitool").is_dir():
        npm = shutil.which("npm")
        assert npm, "node is installed but npm is not: cannot install tests/validators (npm ci)"
        proc = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=HERE, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, f"npm ci in {HERE} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return exe


def _run(node: str, script: str, files: list[Path], *extra: str, cwd: Path | None = None) -> list[dict]:
    proc = subprocess.run([node, str(HERE / script), *map(str, files), "--compact", *extra], capture_output=True,
                          text=True, timeout=600, cwd=cwd)
    assert proc.returncode in (0, 1), f"{script} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    out = json.loads(proc.stdout)
    return out if isinstance(out, list) else [out]


@pytest.mark.slow   # every Secvisogram test set incl. the spell check, ~25 s: its own step in .ci/run
def test_secvisogram_all_tests_on_the_demo_csaf(node, demo_reports):
    docs = sorted((demo_reports / "csaf").glob("*.json"))
    assert [d.name for d in docs] == ["kvir-2026-0001-sglang.json", "kvir-2026-0001.json"]
    for run in _run(node, "csaf_validate.mjs", docs, "--dictionary", str(HERE / "kvir-words.dic")):
        assert run["valid"] is True, run["file"]
        assert run["summary"]["crashed"] == 0
        assert run["summary"]["tests_run"] >= 70          # 76 tests less the two that need the network
        bad = [f for f in run["findings"] if f["level"] in ("error", "warning")]
        assert bad == [], (run["file"], bad)


def test_sarif_multitool_on_kvir_audit(node, demo_run, tmp_path):
    fleet = demo_run.fleet
    sarif = tmp_path / "audit.sarif"
    from typer.testing import CliRunner

    from kvir.cli.app import app

    logs = sorted(str(p.relative_to(fleet)) for p in fleet.glob("engine/*/server.log"))
    import os

    here = os.getcwd()
    os.chdir(fleet)       # as a responder runs it: from the folder of the logs (relative artifact URIs)
    try:
        res = CliRunner().invoke(app, ["audit", *logs, "--inventory", "inventory.toml", "--format", "sarif",
                                       "--output", str(sarif)])
    finally:
        os.chdir(here)
    assert res.exit_code == 0, res.output
    doc = json.loads(sarif.read_text())
    assert doc["runs"][0]["tool"]["driver"]["informationUri"].startswith("https://")
    [run] = _run(node, "sarif_validate.mjs", [sarif], "--rule-kind", "Sarif;Gh;Ghas")
    assert run["valid"] is True
    bad = [r for r in run["results"] if r["level"] in ("error", "warning")]
    assert bad == [], bad
    assert run["summary"]["errors"] == 0 and run["summary"]["warnings"] == 0
