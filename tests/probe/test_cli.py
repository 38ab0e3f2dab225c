"""`kvir probe` and `kvir serve` on the command line: help shows the one command, --dry-run sends nothing,
exit status says the verdict, keys never appear in the output, option errors are one line with status 2."""
from __future__ import annotations

import json

from typer.testing import CliRunner

from kvir.cli.app import app

from .conftest import KEY_A, KEY_B, AppThread
from .fakes import fake_app

runner = CliRunner()


def test_help_shows_how_to_check_a_deployment_in_one_command():
    r = runner.invoke(app, ["probe", "--help"], env={"COLUMNS": "120"})
    assert r.exit_code == 0
    for s in ("kvir probe --endpoint", "--api-key-env KEY_A --tenant-b-key-env KEY_B", "--dry-run",
              "0 not exposed, 1 exposed, 3 inconclusive"):
        assert s in r.output, s
    r = runner.invoke(app, ["serve", "--help"], env={"COLUMNS": "120"})
    assert r.exit_code == 0 and "--build" in r.output and "0.5.19" in r.output


def test_dry_run_prints_the_plan_and_sends_nothing():
    fake = fake_app("ok")
    with AppThread(fake) as srv:
        r = runner.invoke(app, ["probe", "-e", srv.url + "/v1", "--context", "8192", "--pool", "4096",
                                "--engine", "sglang", "--dry-run", "--json"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert fake.state.log == []
    doc = json.loads(r.stdout)
    assert doc["dry_run"] and doc["requests_sent"] == 0
    assert [x["tokens"] for x in doc["plan"]["lengths"]] == [4089, 4090, 4091, 4096, 8191, 8192, 8193]
    assert "Probe plan" in r.stderr and "budget" in r.stderr


def test_exit_status_and_no_key_in_output(keys, tmp_path):
    from kvir.serve import ServeConfig, ServerThread

    with ServerThread(ServeConfig(build="leaking", pool=4096, context=8192)) as srv:
        r = runner.invoke(app, ["probe", "-e", srv.url, "--api-key-env", "KVIR_TEST_KEY_A", "--tenant-b-key-env",
                                "KVIR_TEST_KEY_B", "--checks", "length", "--json", "--sarif", str(tmp_path / "p.sarif"),
                                "--quiet"])
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "exposed" and doc["options"]["tenants"][0]["key"].startswith("sha256:")
    out = r.output + (tmp_path / "p.sarif").read_text()
    assert KEY_A not in out and KEY_B not in out


def test_healthy_endpoint_exits_0_and_failing_one_3():
    with AppThread(fake_app("ok")) as srv:
        r = runner.invoke(app, ["probe", "-e", srv.url, "--checks", "length", "-q"])
    assert r.exit_code == 0, r.output
    with AppThread(fake_app("5xx")) as srv:
        r = runner.invoke(app, ["probe", "-e", srv.url, "--checks", "length", "-q", "--retries", "0",
                                "--max-requests", "20"])
    assert r.exit_code == 3, r.output


def test_option_errors_are_one_line_with_status_2(monkeypatch):
    monkeypatch.delenv("KVIR_UNSET_VAR", raising=False)
    for args in (["--checks", "bogus"], ["--api-key-env", "KVIR_UNSET_VAR"], ["--engine", "tgi"]):
        r = runner.invoke(app, ["probe", "-e", "http://127.0.0.1:9", *args])
        assert r.exit_code == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("kvir:"), (args, r.stderr)
    r = runner.invoke(app, ["serve", "--build", "nightly"])
    assert r.exit_code == 2 and "unknown build" in r.stderr
