"""No text reaches the case, the terminal or a file: `kvir confirm` as a user runs it, then every output
searched for every 16-character window of every prompt, response and needle (and for the key)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.confirm.helpers import triaged
from tests.confirm.privacy import leaks, windows
from tests.confirm.test_confirm_e2e import base

KVIR = [sys.executable, "-m", "kvir.cli.app"]
NEEDLES = ["Operation Kingfisher", "never said by anyone at all"]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.run(KVIR + args, cwd=cwd, capture_output=True, text=True, env=env, timeout=600)


def test_no_text_needle_or_key_in_any_output(tmp_path):
    reqs = base()
    case, log = triaged(tmp_path, reqs)
    args = ["confirm", "--case", str(case), "--key", str(tmp_path / "k"), "--map", "request_id=request_id",
            "--map", "prompt=prompt", "--map", "response=response", "--json"]
    for n in NEEDLES:
        args += ["--needle", n]
    p = _run(args + [str(log)], tmp_path)
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)
    assert summary["verdicts"]["confirmed foreign content"] == 1 and summary["needles"]["responses_with_a_needle"] == 1
    texts = [t for r in reqs for t in (r.prompt, r.response) if t] + NEEDLES
    key_hex = (tmp_path / "k").read_text().split()[1]
    # the search finds what it looks for: the log itself holds every text
    assert len(leaks(tmp_path, texts)) >= len(windows(texts)) * 0.9
    assert leaks(case, texts + [key_hex], also=[p.stdout, p.stderr]) == []
    assert "sha256" in p.stderr or summary["key_sha256"] in (case / "manifest.json").read_text()
    assert key_hex not in (case / "manifest.json").read_text()
