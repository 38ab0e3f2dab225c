"""The merged timeline: derived events at the times worked out by hand, hand events paired with them,
conflicts shown (never dropped)."""
from __future__ import annotations

import csv
import io
import json
import shutil

from .fleet import EXPECTED

import kvir
from kvir.report import build_model
from kvir.report.times import iso


def _by_kind(m, kind):
    return [e for e in m.timeline if e.kind == kind and e.origin == "data"]


def test_derived_events(rendered):
    m = rendered.model
    assert [e.iso for e in _by_kind(m, "first-affected")] == [EXPECTED["first_affected"]]
    assert [e.iso for e in _by_kind(m, "last-affected")] == [EXPECTED["last_affected"]]
    assert [e.iso for e in _by_kind(m, "model-private")] == [EXPECTED["private_seen"]]
    # the pause ends with a request after the window (19:42 > 19:40): no inferred end is written from it
    assert EXPECTED["public_seen"] > m.facts.window_end.isoformat().replace("+00:00", "Z")
    assert [e.iso for e in _by_kind(m, "model-public")] == []
    assert {e.category for e in _by_kind(m, "model-private")} == {"inferred"}
    fixed = {e.actor: e.iso for e in _by_kind(m, "node-fixed")}
    assert fixed == EXPECTED["prefill_fixed"]           # decode nodes never had a short pool
    assert [e.iso for e in _by_kind(m, "all-prefill-fixed")] == [EXPECTED["all_prefill_fixed"]]
    assert [e.iso for e in _by_kind(m, "runtime-indicator")] == ["2026-08-27T06:15:03Z"]
    tests = [(e.iso, e.actor) for e in _by_kind(m, "test-request")]
    assert tests == [("2026-09-08T10:05:00Z", "reporting researcher"), ("2026-09-08T10:20:00Z", "reporting researcher"),
                     ("2026-09-09T13:40:00Z", "provider's own tests"), ("2026-09-09T15:00:00Z", "provider's own tests")]
    # every derived event names its query and, where there is one, the log record
    for e in m.timeline:
        if e.origin == "data":
            assert e.source.startswith("queries/report/") and e.source.endswith(".sql")
    assert _by_kind(m, "first-affected")[0].evidence.endswith("page-1.json:1")
    assert _by_kind(m, "all-prefill-fixed")[0].evidence == "engine/prefill-1/server.log:388"


def test_order_and_hand_events(rendered):
    m = rendered.model
    assert [e.ts for e in m.timeline] == sorted(e.ts for e in m.timeline)
    hand = [e.title for e in m.timeline if e.origin == "hand"]
    assert hand[2:] == ["Incident declared", "Model made private", "Root cause found",
                        "All prefill nodes on the fixed config", "Model public again",
                        "@support sent the customer notices"]


def test_conflicts_are_shown(rendered):
    m = rendered.model
    began = next(e for e in m.timeline if e.title.startswith("Exposure began"))
    assert began.conflicts and "15 min later" in began.conflicts[0]
    assert _by_kind(m, "first-affected")[0].conflicts          # on both sides
    for title in ("Model made private", "Model public again", "All prefill nodes on the fixed config"):
        e = next(x for x in m.timeline if x.title == title and x.origin == "hand")
        assert e.conflicts == [] and e.notes, title               # confirmed by the data
    md = rendered.path("timeline.md").read_text()
    assert "CONFLICT" in md and "Exposure began" in md.split("## Conflicts")[1]
    html = rendered.path("timeline.html").read_text()
    assert 'class="hand conflict"' in html
    assert "1 hand-entered event(s) that the data contradicts" in html


def test_private_too_early_is_a_conflict(tmp_path, small_case):
    dst = tmp_path / "case"
    shutil.copytree(small_case, dst)
    case = kvir.open_case(dst)
    try:
        # say the model went private at 13:00 although customers were served until 13:58
        case.con.execute("UPDATE hand_events SET ts = TIMESTAMPTZ '2026-09-09 13:00:00+00' WHERE title = 'Model made private'")
        case.con.execute("UPDATE hand_events SET ts = TIMESTAMPTZ '2026-09-09 14:30:00+00' "
                         "WHERE title = 'All prefill nodes on the fixed config'")
        m = build_model(case)
    finally:
        case.close()
    private = next(e for e in m.timeline if e.title == "Model made private")
    assert private.conflicts and "r16" in private.conflicts[0] and "58 min after" in private.conflicts[0]
    fixed = next(e for e in m.timeline if e.title == "All prefill nodes on the fixed config" and e.origin == "hand")
    assert fixed.conflicts and "21 min 30 s later" in fixed.conflicts[0]


def test_timesketch_jsonl(rendered):
    lines = rendered.path("timeline.jsonl").read_text().splitlines()
    assert len(lines) == len(rendered.model.timeline)
    for line, e in zip(lines, rendered.model.timeline):
        rec = json.loads(line)
        assert rec["message"] and rec["timestamp_desc"] and rec["datetime"] == iso(e.ts)
        assert rec["timestamp"] == int(e.ts.timestamp() * 1_000_000)


def test_timeline_csv_neutralises_formulas(rendered):
    rows = list(csv.DictReader(io.StringIO(rendered.path("timeline.csv").read_text())))
    assert len(rows) == len(rendered.model.timeline)
    notice = next(r for r in rows if "@support" in r["title"])
    assert notice["title"] == "'@support sent the customer notices"
    for r in rows:
        for v in r.values():
            assert not v or v[0] not in "=+-@\t\r", v


def test_events_table_in_case(small_case, rendered):
    case = kvir.open_case(small_case, read_only=True)
    try:
        n = case.con.execute("SELECT count(*) FROM events").fetchone()[0]
    finally:
        case.close()
    assert n == len(rendered.model.timeline)
