"""The scheduled-canary examples in docs/canary/ are commands kvir accepts: the CronJob's container command and
the systemd service's ExecStart, run as kvir probe's own command line (--dry-run: the plan, nothing sent) with
the example endpoint; and one real run of the same options against kvir serve's leaking build writes the
textfile the alerts read."""
from __future__ import annotations

import configparser
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

DOCS = Path(__file__).resolve().parents[2] / "docs" / "canary"


def _cronjob_argv() -> list[str]:
    from ruamel.yaml import YAML

    doc = YAML(typ="safe").load((DOCS / "kvir-probe-cronjob.yaml").read_text())
    [c] = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert {e["name"] for e in c["env"]} == {"KVIR_KEY_A", "KVIR_KEY_B"}
    return c["command"]


def _service_argv() -> list[str]:
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    cp.read_string((DOCS / "kvir-probe.service").read_text())
    argv = shlex.split(cp["Service"]["ExecStart"])
    timer = configparser.ConfigParser(interpolation=None)
    timer.read_string((DOCS / "kvir-probe.timer").read_text())
    assert timer["Timer"]["OnCalendar"] == "hourly"
    return ["kvir", *argv[1:]]


def _invoke(argv: list[str], env: dict[str, str]):
    from kvir.cli.app import app

    assert argv[:2] == ["kvir", "probe"]
    return CliRunner().invoke(app, argv[1:], env=env)


@pytest.mark.parametrize("argv", [_cronjob_argv(), _service_argv()], ids=["cronjob", "systemd"])
def test_examples_are_valid_probe_commands(argv, tmp_path):
    local = [str(tmp_path / Path(a).name) if a.startswith(("/textfile/", "/var/lib/")) else a for a in argv]
    res = _invoke(local + ["--dry-run"], {"KVIR_KEY_A": "a", "KVIR_KEY_B": "b"})
    assert res.exit_code == 0, res.output
    assert "--metrics" in argv


def test_the_example_options_write_the_textfile(keys, tmp_path):
    from kvir.serve import ServeConfig, ServerThread

    argv = _cronjob_argv()
    i = argv.index("--endpoint")
    with ServerThread(ServeConfig(pool=4096, context=8192, build="0.5.19")) as srv:
        argv = argv[:i + 1] + [srv.url] + argv[i + 2:]
        argv[argv.index("--model") + 1] = "kvir-replay"
        argv[argv.index("--metrics") + 1] = str(tmp_path / "kvir_probe.prom")
        argv[argv.index("--sarif") + 1] = str(tmp_path / "kvir_probe.sarif")
        argv[argv.index("--api-key-env") + 1] = keys["api_key_env"]
        argv[argv.index("--tenant-b-key-env") + 1] = keys["tenant_b_key_env"]
        res = _invoke(argv, {})
    assert res.exit_code == 1, res.output                      # exposed: the Job fails
    text = (tmp_path / "kvir_probe.prom").read_text()
    assert 'kvir_probe_verdict{endpoint="' in text and 'verdict="exposed"} 1' in text
