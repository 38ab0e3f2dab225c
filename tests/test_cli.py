"""The kvir command line: thin wrappers, results on stdout, everything else on stderr, exit status 2 on user errors."""
from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from kvir.cli.app import app
from kvir.spec.model import load_spec
from tests.conftest import sglang_finished as fin, write

runner = CliRunner()


def kvir_cmd(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvir.cli.app", *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_every_command_has_help():
    res = runner.invoke(app, ["--help"])
    assert res.exit_code == 0
    for cmd in ("init", "triage", "formats", "simulate", "demo"):
        assert cmd in res.output
        sub = runner.invoke(app, [cmd, "--help"])
        assert sub.exit_code == 0 and "Usage" in sub.output, cmd


def test_init_writes_a_valid_template_and_refuses_to_overwrite(tmp_path):
    p = tmp_path / "incident.toml"
    res = runner.invoke(app, ["init", str(p)])
    assert res.exit_code == 0
    assert load_spec(p).id == "INC-0001"                     # example values only: no incident's facts
    assert res.stdout.strip() == str(p)                     # the result: the file written
    steps = [line.split("#")[0].strip() for line in res.stderr.splitlines() if line.startswith("  kvir ")]
    # the first steps on one's own incident, replay among them (issue 24), in the order they are run
    assert [s.split()[1] for s in steps] == ["triage", "audit", "replay", "report"]
    assert f"-i {p}" in steps[0] and "--case case" in steps[1]
    assert steps[2:] == ["kvir replay --case case", "kvir report --case case"]
    res = runner.invoke(app, ["init", str(p)])
    assert res.exit_code == 2
    assert runner.invoke(app, ["init", str(p), "--force"]).exit_code == 0


def test_triage_json_goes_to_stdout_and_tables_to_stderr(spec, tmp_path):
    log = write(tmp_path / "decode-0.jsonl", fin("2026-08-30T10:00:00", "a1", 700000) + "\n")
    proc = kvir_cmd("triage", "--incident", str(spec()), "--out", str(tmp_path / "case"),
                    "--source-tz", "America/Chicago", "--json", str(log))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)                         # stdout is pure JSON
    assert data["summary"]["affected"] == 1
    assert "Triage KVIR-2026-0001" in proc.stderr and "affected responses" in proc.stderr


def test_user_errors_exit_2_with_one_line(spec, tmp_path):
    proc = kvir_cmd("triage", "--incident", str(spec()), "--out", str(tmp_path / "c"), str(tmp_path / "missing.log"))
    assert proc.returncode == 2
    assert "missing.log" in proc.stderr and "Traceback" not in proc.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("[incident]\nid = 3\n")
    proc = kvir_cmd("triage", "--incident", str(bad), "--out", str(tmp_path / "c"), str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_formats_lists_every_format_with_its_needs():
    from kvir.ingest.formats import FORMATS

    proc = kvir_cmd("formats")
    assert proc.returncode == 0
    for name in FORMATS:
        assert name in proc.stdout
    assert "--source-tz" in proc.stdout


def test_init_mechanism_prefix_cache_writes_that_mechanisms_spec_and_both_parse(tmp_path):
    pc, default = tmp_path / "pc.toml", tmp_path / "default.toml"
    assert runner.invoke(app, ["init", str(default)]).exit_code == 0
    res = runner.invoke(app, ["init", "--mechanism", "prefix-cache", str(pc)])
    assert res.exit_code == 0 and "[prefix_cache]" in res.stderr      # what to fill in is that mechanism's
    s, d = load_spec(pc), load_spec(default)
    assert (s.mechanism, s.params.isolation, s.params.instances) == (
        "prefix-cache", "salt", ("vllm-0",))
    assert s.params.lifetime_s is None and s.engine is None     # unknowns stay unknown
    assert (d.mechanism, d.params.rule) == ("oversized-prompt", "public")
    text = pc.read_text()
    assert "[trigger]" not in text and "pool_tokens" not in text and "placeholder" not in text.lower()
    bad = runner.invoke(app, ["init", "--mechanism", "rowhammer", str(tmp_path / "x.toml")])
    assert bad.exit_code == 2 and not (tmp_path / "x.toml").exists()
