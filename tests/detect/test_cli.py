"""`kvir detect` and `kvir vex` as commands: what they write, and exit 2 for what cannot be used."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("sigma", reason="kvir detect needs the kvir[detect] extra (pySigma)")

ROOT = Path(__file__).resolve().parents[2]


def _kvir(*args: str):
    from kvir.cli.app import app

    return CliRunner().invoke(app, list(args), env={"COLUMNS": "80"})


@pytest.fixture
def spec(tmp_path):
    from kvir.spec.template import template

    p = tmp_path / "incident.toml"
    p.write_text(template("oversized-prompt"))
    tomllib.loads(p.read_text())
    return p


def test_detect_from_a_spec(spec, tmp_path):
    out = tmp_path / "det"
    res = _kvir("detect", "-i", str(spec), "-o", str(out))
    assert res.exit_code == 0, res.output
    names = {p.stem for p in (out / "sigma").glob("*.yml")}
    assert {"sglang_rejected_prompt_served", "sglang_kv_canary_violation", "vllm_abort_then_allocation"} <= names
    for sub in ("loki/rules.yml", "loki/queries.logql", "duckdb/rules.sql", "prometheus/kvir-alerts.yml",
                "timesketch/sigma_config.yaml", "README.md"):
        assert (out / sub).is_file(), sub
    assert "kvir.incident." in (out / "sigma" / "sglang_kv_canary_violation.yml").read_text()


def test_detect_for_a_mechanism_without_lines(tmp_path):
    out = tmp_path / "det"
    res = _kvir("detect", "--mechanism", "prefix-cache", "-o", str(out))
    assert res.exit_code == 0, res.output
    names = {p.stem for p in (out / "sigma").glob("*.yml")}
    assert names and not any(n.startswith("sglang_rejected") for n in names)   # only the shared transfer rules
    assert "prints no line" in (out / "README.md").read_text()


def test_hunt_table_fits_80_columns():
    log = ROOT / "tests" / "fixtures" / "real" / "sglang-pd-lines" / "0.5.23.log"
    res = _kvir("detect", "--hunt", str(log), "--source-tz", "UTC")
    assert res.exit_code == 0, res.output
    assert max(len(x) for x in res.output.splitlines()) <= 80 and "sglang_kv_checksum_mismatch" in res.output


@pytest.mark.parametrize("args", [[], ["--mechanism", "no-such-thing", "-o", "x"], ["-i", "a.toml", "--mechanism", "prefix-cache", "-o", "x"]])
def test_detect_unusable_options_exit_2(args):
    assert _kvir("detect", *args).exit_code == 2


def test_vex_command(tmp_path):
    deploy = ROOT / "tests" / "preflight" / "fixtures"
    res = _kvir("vex", str(deploy / "k8s-sglang-pd.yaml"), "-o", str(tmp_path / "vex"))
    assert res.exit_code == 0, res.output
    assert len(list((tmp_path / "vex" / "csaf").glob("*.json"))) == 2 == len(list((tmp_path / "vex" / "openvex").glob("*.json")))
    assert _kvir("vex", "-o", str(tmp_path / "v2")).exit_code == 2                # neither paths nor --case
