"""Every command's terminal tables at 80 columns (issue 24), on the demo's fleet and on the small case:
each line fits, and every number, id, time and path the tables show stays whole on one line."""
from __future__ import annotations

import json
import re
import shutil

import pytest
from typer.testing import CliRunner

from kvir.cli.app import app
from kvir.core.progress import stderr

runner = CliRunner()


@pytest.fixture
def at80(monkeypatch):
    """kvir's stderr console at 80 columns (a laptop terminal, a pager, a CI log)."""
    monkeypatch.setattr(stderr, "_width", 80)


def fits(out: str, whole: list[str]) -> None:
    lines = out.splitlines()
    long = [line for line in lines if len(line) > 80]
    assert not long, long[:3]
    for value in whole:
        assert any(value in line for line in lines), (value, out[:3000])


def kvir(*args: str) -> str:
    res = runner.invoke(app, list(args), env={"COLUMNS": "80"})
    assert res.exit_code in (0, 1), res.output
    return res.stderr


def test_audit_at_80_columns(at80, demo_run):
    """The audit tables of the demo's fleet (12 node starts, 67 findings): each start's pool, context and
    start time, each finding's rule, node and evidence file:line, whole."""
    fleet = demo_run.fleet
    out = kvir("audit", str(fleet / "engine"), "--inventory", str(fleet / "inventory.toml"))
    doc = json.loads(runner.invoke(app, ["audit", str(fleet / "engine"), "--inventory", str(fleet / "inventory.toml"),
                                         "-q", "-f", "json"]).stdout)
    whole = []
    for n in doc["node_configs"]:
        whole += [n["node"], f"{n['pool_tokens']:,}", f"{n['context_len']:,}"]
    for f in doc["findings"]:
        whole += [f["rule_id"], f"{f['evidence_file'].split('/')[-1]}:{f['evidence_line']}"]
    fits(out, whole)
    assert re.search(r"^glm53-prefill-0\s+prefill\s+2026-08-26 22:10:00Z\s+681,280\s+1,048,576\s+681,274$", out, re.M)


def test_triage_at_80_columns(at80, demo_run, ground_truth, tmp_path):
    fleet = demo_run.fleet
    out = kvir("triage", "-i", str(fleet / "incident.toml"), "-o", str(tmp_path / "case"))
    fits(out, ["cloudflare-gateway", "sglang-json", "America/Chicago", "zai-org/GLM-5.3"])
    assert re.search(rf"^affected responses\s+{ground_truth['affected']:,}$", out, re.M), out
    assert re.search(rf"^accounts affected \(known ids\)\s+{ground_truth['affected_accounts']:,}$", out, re.M)
    assert re.search(r"^first affected \(UTC\)\s+2026-08-\d\d \d\d:\d\d:\d\d(\.\d+)?Z$", out, re.M)
    assert re.search(r"^all inputs\s+[\d,]+\s+[\d,]+\s+[\d,]+\s+0$", out, re.M)    # read parsed requests quarantined


def test_replay_at_80_columns(at80, demo_run, tmp_path):
    """The responses table: each request id whole, the build and verdict beside it, what it read below."""
    from kvir.cli.present.replay import print_replay
    from kvir.replay import replay_case

    case = tmp_path / "case"
    shutil.copytree(demo_run.case, case)
    run = replay_case(case, limit=2, scale=1 / 64)
    with stderr.capture() as cap:
        print_replay(run)
    out = cap.get()
    ids = sorted(set(run.results.request_id))
    fits(out, ids + ["sglang-0.5.19 (ran)", "sglang-0.5.20"])
    for rid in ids:
        assert re.search(rf"^{rid}\s+sglang-0\.5\.19 \(ran\)\s+(exposed|served-unwritten)\s+200$", out, re.M), out


def test_report_and_demo_summaries_at_80_columns(at80, demo_run, rendered):
    from kvir.cli.present.demo import print_demo
    from kvir.cli.present.report import print_report

    with stderr.capture() as cap:
        print_report(rendered)
        print_demo(demo_run)
    out = cap.get()
    fits(out, [v.document for v in rendered.validations] + [str(demo_run.case)])
    assert "by_severity" not in out and "{'" not in out          # no raw Python dicts (issue 24)
    assert re.search(r"findings \d+ \(critical \d+, ", out.replace("\n    ", " ")), out
    # the summary ends with the commands to run on one's own logs, replay among them
    tail = out.rstrip().splitlines()[-5:]
    assert [line.split()[1] for line in tail] == ["init", "triage", "audit", "replay", "report"], tail
