"""kvir probe --metrics: the verdicts of real probe runs (against kvir serve's leaking build 0.5.19 and its fixed
build, the session's runs in conftest.py) in Prometheus' text exposition format, written atomically for the
textfile collector, linted by `promtool check metrics`, and read by kvir detect's probe alerts under
`promtool test rules`: KvirProbeExposed fires for each check that found the leaking build exposed (length and
canary: tests/probe/test_probe_serve.py), and for none on the fixed build."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest


def _samples(text: str) -> list[tuple[str, float]]:
    return [(m.group(1), float(m.group(2))) for m in re.finditer(r"^(kvir_\w+\{[^}]*\}) (\S+)$", text, re.M)]


def test_textfile_of_a_leaking_run(leaking_run, tmp_path):
    from kvir.probe.metrics import write_metrics

    r = leaking_run["result"]
    path = write_metrics(r, tmp_path / "kvir_probe.prom")
    text = path.read_text()
    assert os.listdir(tmp_path) == ["kvir_probe.prom"] and (path.stat().st_mode & 0o777) == 0o644
    s = dict(_samples(text))
    ep = re.search(r'endpoint="([^"]+)"', text).group(1)
    assert ep.startswith("http://127.0.0.1:")
    assert s[f'kvir_probe_verdict{{endpoint="{ep}",verdict="exposed"}}'] == 1.0
    assert s[f'kvir_probe_verdict{{endpoint="{ep}",verdict="not exposed"}}'] == 0.0
    for check in ("length", "canary"):
        assert s[f'kvir_probe_check_verdict{{endpoint="{ep}",check="{check}",verdict="exposed"}}'] == 1.0
    assert s[f'kvir_probe_requests_sent{{endpoint="{ep}"}}'] == r.sent
    assert "KEY" not in text and "sk-" not in text


def test_endpoint_label_drops_credentials():
    from kvir.probe.metrics import endpoint_label

    assert endpoint_label("https://user:secret@llm.example.com:8443/v1/?key=abc#x") == "https://llm.example.com:8443/v1"


@pytest.fixture(scope="module")
def promtool():
    exe = shutil.which("promtool")
    if exe is None:
        pytest.skip("promtool not installed (Debian's prometheus package: .ci/run installs it)")
    return exe


def test_promtool_lints_the_textfile(leaking_run, tmp_path, promtool):
    from kvir.probe.metrics import to_text

    proc = subprocess.run([promtool, "check", "metrics"], input=to_text(leaking_run["result"]), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_probe_alerts_over_the_runs_metrics(leaking_run, fixed_run, tmp_path, promtool):
    pytest.importorskip("sigma", reason="kvir detect needs the kvir[detect] extra")
    import yaml

    from kvir.detect import content, write
    from kvir.probe.metrics import to_text

    write(content(), tmp_path)
    rules = yaml.safe_load((tmp_path / "prometheus" / "kvir-alerts.yml").read_text())
    exposed_rule = next(r for g in rules["groups"] for r in g["rules"] if r["alert"] == "KvirProbeExposed")
    tests = []
    for run, exposed in ((leaking_run, ("canary", "length")), (fixed_run, ())):
        text = to_text(run["result"])
        ep = re.search(r'endpoint="([^"]+)"', text).group(1)
        series = [{"series": name, "values": f"{value:g}x10"} for name, value in _samples(text)
                  if not name.startswith("kvir_probe_last_run_timestamp")]
        exp = [{"exp_labels": {"severity": "critical", "kvir_source": "probe", "endpoint": ep, "check": c},
                "exp_annotations": exposed_rule["annotations"]} for c in exposed]
        tests.append({"interval": "1m", "input_series": series,
                      "alert_rule_test": [{"eval_time": "5m", "alertname": "KvirProbeExposed", "exp_alerts": exp}]})
    test = tmp_path / "prometheus" / "probe_test.yml"
    test.write_text(yaml.safe_dump({"rule_files": ["kvir-alerts.yml"], "evaluation_interval": "1m", "tests": tests}))
    proc = subprocess.run([promtool, "test", "rules", str(test)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
