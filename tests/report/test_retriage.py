"""Triage again into a case that audit, replay and report have extended (issue #26 item 14): what still holds
for the new evidence is kept, everything else is named with its reason, on the terminal and in the manifest
(on main the replay results and the reports vanished, exit 0, without a word)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import duckdb
import pytest

import kvir


@pytest.fixture
def extended(demo_run, tmp_path):
    """A copy of the demo's fleet and case (triaged, audited, replayed, reported)."""
    out = tmp_path / "demo"
    shutil.copytree(demo_run.out, out, symlinks=True)
    return out


def _rows(case, sql):
    con = duckdb.connect(str(case / "case.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_the_same_evidence_keeps_every_replay_and_the_audit(extended):
    case = extended / "case"
    before_csv = (case / "replay_results.csv").read_bytes()
    n_replayed = _rows(case, "SELECT count(DISTINCT request_id) FROM replay_results")[0][0]
    findings = _rows(case, "SELECT count(*) FROM findings")[0][0]
    assert n_replayed and findings
    r = kvir.triage(extended / "fleet" / "incident.toml", out=case)
    r.case.close()
    kept = " | ".join(r.carried.kept)
    assert f"replay: {n_replayed} of {n_replayed} replayed responses" in kept and "audit:" in kept
    assert [x["what"] for x in r.carried.removed] == ["reports/"]
    assert (case / "replay_results.csv").read_bytes() == before_csv
    assert _rows(case, "SELECT count(*) FROM findings")[0][0] == findings
    manifest = json.loads((case / "manifest.json").read_text())
    assert manifest["carried_over"] == r.carried.as_dict() and "audit" in manifest and "replay" in manifest
    assert not (case / "reports").exists()


def test_changed_evidence_keeps_what_still_holds_and_names_the_rest(extended):
    """The first replayed response's decode record is removed from its node's log: its result goes ("no longer
    an affected response", or its record changed when a gateway still names it), later replays on that node
    go (their node's history changed), the others stay; the CSV holds exactly the rows kept."""
    case = extended / "case"
    targets = _rows(case, "SELECT DISTINCT r.request_id, a.decode_node, a.ts FROM replay_results AS r "
                          "JOIN affected AS a USING (request_id) ORDER BY a.ts")
    gone_id, node, gone_ts = targets[0]
    log = next(f for f in (extended / "fleet" / "engine" / node).iterdir() if gone_id in f.read_text())
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(x for x in lines if gone_id not in x))
    assert len(log.read_text().splitlines()) < len(lines)
    res = subprocess.run([sys.executable, "-m", "kvir.cli.app", "triage", "-i", str(extended / "fleet" / "incident.toml"),
                          "-o", str(case), "-q"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    why = {}
    for rid, n, ts in targets:
        if rid == gone_id:
            why[rid] = "gone"
        elif n == node and ts > gone_ts:
            why[rid] = "the history of its decode node up to it changed"
        else:
            why[rid] = None
    kept_now = {r[0] for r in _rows(case, "SELECT DISTINCT request_id FROM replay_results")}
    assert kept_now == {rid for rid, w in why.items() if w is None}
    manifest = json.loads((case / "manifest.json").read_text())
    removed = manifest["carried_over"]["removed"]
    reasons = {x["why"] for x in removed if x["what"].startswith("replay results")}
    assert reasons & {"no longer an affected response", "its record changed (time, account, lengths or nodes)"}
    if any(w and "history" in w for w in why.values()):
        assert "the history of its decode node up to it changed (requests the replay rebuilt)" in reasons
    said = " ".join(res.stderr.split())            # the terminal wraps long lines at spaces
    assert all(" ".join(f"removed from the previous case: {x['what']}: {x['why']}".split()) in said for x in removed)
    csv_ids = {line.split(",")[0] for line in (case / "replay_results.csv").read_text().splitlines()[1:]}
    assert csv_ids == kept_now
    assert {r[0] for r in _rows(case, "SELECT DISTINCT reader_request_id FROM replay_exposure")} <= kept_now
