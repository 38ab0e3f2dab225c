"""Replay says what it ran on and why it could not (issue 21 point 5): on a gateway-only case no build is
"ran"; every inconclusive replay shows its reason on the terminal and in the documents."""
from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

import kvir
from kvir.cli.app import app
from kvir.report import report

from .test_model_identity import ROWS, _spec


def test_gateway_only_case_assumes_and_says_why(tmp_path):
    rows = tmp_path / "SpendLogs.json"
    shutil.copy(ROWS / "SpendLogs.json", rows)
    r = kvir.triage(_spec(tmp_path, ["llama-long"]), [rows], out=tmp_path / "case")
    r.case.close()
    res = CliRunner().invoke(app, ["replay", "--case", str(tmp_path / "case")])
    assert res.exit_code == 0, res.output
    assert "sglang-0.5.19 (ran)" not in res.stderr and "(assumed)" in res.stderr
    assert "3 response(s) inconclusive: no decode node in the logs (gateway-only evidence)" in res.stderr
    case = kvir.open_case(tmp_path / "case")
    try:
        rr = case.df("SELECT build_basis, build_source, verdict FROM replay_results WHERE build_role = 'incident'")
    finally:
        case.close()
    assert set(rr["build_basis"]) == {"assumed"} and set(rr["verdict"]) == {"inconclusive"}
    assert all(s.startswith("not replayed: no decode node") for s in rr["build_source"])
    result = report(tmp_path / "case")
    for doc in ("public_report.md", "postmortem.md", "gdpr_art33.md"):
        text = (result.out_dir / doc).read_text()
        assert "could not be replayed" in text and "no decode node in the logs" in text, doc
        assert "reproduced the exposure for 0" not in text, doc
    notice = next((result.out_dir / "notices" / "affected").glob("*.md")).read_text()
    assert "inconclusive (no decode node in the logs" in notice
