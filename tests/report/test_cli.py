"""`kvir report` on the command line."""
from __future__ import annotations

import shutil

from typer.testing import CliRunner

from kvir.cli.app import app


def test_report_command(tmp_path, small_case):
    dst = tmp_path / "case"
    shutil.copytree(small_case, dst, ignore=shutil.ignore_patterns("reports"))
    res = CliRunner().invoke(app, ["report", "--case", str(dst), "--only", "timeline", "--only", "csaf",
                                   "--format", "md", "--quiet"])
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == str(dst / "reports" / "index.html")
    assert (dst / "reports" / "timeline.md").exists() and not (dst / "reports" / "timeline.html").exists()
    assert (dst / "reports" / "csaf" / "kvir-2026-0001-sglang.json").exists()


def test_report_command_errors(tmp_path):
    res = CliRunner().invoke(app, ["report", "--case", str(tmp_path)])
    assert res.exit_code == 2 and "not a kvir case" in res.output
    res = CliRunner().invoke(app, ["report", "--case", str(tmp_path), "--only", "bogus"])
    assert res.exit_code == 2
