"""`kvir confirm` on the command line: problems a user can fix end with one line and exit 2, naming the file
or option; a run prints its summary (--json on stdout, tables on stderr)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.confirm.helpers import triaged
from tests.confirm.test_confirm_e2e import base

MAP = ["--map", "request_id=request_id", "--map", "prompt=prompt", "--map", "response=response"]


def kvir(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvir.cli.app", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600, env={**os.environ, "COLUMNS": "80"})


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    return tmp, *triaged(tmp, base())


def _one_line_exit_2(p: subprocess.CompletedProcess, *words: str) -> None:
    assert p.returncode == 2, p.stderr
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("kvir: ") and all(w in lines[0] for w in words), p.stderr


def test_user_errors_are_one_line(case):
    tmp, case_dir, log = case
    key = tmp / "shared.key"
    p = kvir("confirm", "--case", str(case_dir), "--key", str(key), *MAP, "-q", str(log), cwd=tmp)
    assert p.returncode == 0, p.stderr
    os.chmod(key, 0o644)
    _one_line_exit_2(kvir("confirm", "--case", str(case_dir), "--key", str(key), *MAP, str(log), cwd=tmp),
                     str(key), "other users", "chmod 600")
    os.chmod(key, 0o600)
    _one_line_exit_2(kvir("confirm", "--case", str(case_dir), "--key", str(case_dir / "k"), *MAP, str(log), cwd=tmp),
                     "inside the case folder")
    _one_line_exit_2(kvir("confirm", "--case", str(case_dir), "--key", str(key), "--format", "nginx", str(log), cwd=tmp),
                     "nginx", "holds no text")
    _one_line_exit_2(kvir("confirm", "--case", str(case_dir), "--key", str(key), "--map", "prompt", str(log), cwd=tmp),
                     "--map wants FIELD=PATH")
    _one_line_exit_2(kvir("confirm", "--case", str(tmp / "nothing"), "--key", str(key), *MAP, str(log), cwd=tmp),
                     "not a kvir case")
    _one_line_exit_2(kvir("confirm", "--case", str(case_dir), "--key", str(key), *MAP, str(tmp / "missing.jsonl"),
                          cwd=tmp), "missing.jsonl", "no such file")


def test_a_run_prints_its_summary(case):
    tmp, case_dir, log = case
    p = kvir("confirm", "--case", str(case_dir), "--key", str(tmp / "k2"), *MAP, "--json", str(log), cwd=tmp)
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert s["verdicts"] == {"cannot decide": 1, "confirmed foreign content": 1,
                             "corruption without foreign content": 1, "not confirmed": 1}
    assert "created the key file" in p.stderr and "confirmed foreign content" in p.stderr
    assert "not proof of absence" in p.stderr
    assert all(len(x) <= 80 for x in p.stderr.splitlines())
