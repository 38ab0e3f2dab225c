"""The reports of `kvir demo` (the reference incident of DESIGN.md §1): 155 affected responses in the
2026-08-27 → 2026-09-09 window, the 2026-09-09 events in order, an index that renders offline."""
from __future__ import annotations

import json
import re

import pytest
from .browser import external_refs, open_page

DAY = [("13:22", "Incident declared"), ("14:00", "Model made private"), ("14:35", "Root cause found"),
       ("14:52", "All prefill nodes on the fixed config"), ("19:40", "Model public again")]


@pytest.fixture(scope="module")
def demo_reports(tmp_path_factory):
    try:
        from kvir.sim.demo import demo
    except ImportError as e:
        pytest.skip(f"kvir demo is not available in this build: {e}")
    # fewer background requests and replays than the default demo: the incident (155 responses) is the same
    result = demo(tmp_path_factory.mktemp("demo") / "out", requests=8000, replay_limit=4, progress=False)
    reports = result.case / "reports"
    assert (reports / "index.html").exists(), result.stages.get("report")
    return reports


def test_public_report_states_155_in_the_window(demo_reports):
    md = (demo_reports / "public_report.md").read_text()
    assert "**155 responses**" in md
    assert "| affected responses | 155 |" in md
    row = re.search(r"\| investigated window \(UTC\) \| (\S+) → (\S+) \|", md)
    assert row and row.group(1).startswith("2026-08-27") and row.group(2).startswith("2026-09-09")
    first = re.search(r"\| first affected response \| (\S+) \|", md).group(1)
    last = re.search(r"\| last affected response \| (\S+) \|", md).group(1)
    assert first.startswith("2026-08-27") and last.startswith("2026-09-09")


def test_timeline_has_the_day_of_the_response_in_order(demo_reports):
    rows = [json.loads(line) for line in (demo_reports / "timeline.jsonl").read_text().splitlines()]
    hand = [(r["datetime"], r["title"]) for r in rows if r["origin"] == "hand" and r["datetime"].startswith("2026-09-09")]
    got = [(t[11:16], title) for t, title in hand]
    assert [g[0] for g in got] == [d[0] for d in DAY]
    for (_, want), (_, title) in zip(DAY, got):
        assert title.lower().startswith(want.lower()), (want, title)
    assert [r["timestamp"] for r in rows] == sorted(r["timestamp"] for r in rows)
    # the data confirms the day: the pause in customer traffic and the prefill restarts
    kinds = {r["kind"] for r in rows if r["origin"] == "data"}
    assert {"model-private", "model-public", "all-prefill-fixed", "first-affected", "last-affected"} <= kinds
    md = (demo_reports / "timeline.md").read_text()
    positions = [md.index(f"2026-09-09T{hhmm}:00Z | {title[:12]}") for hhmm, title in DAY]
    assert positions == sorted(positions)


def test_demo_machine_documents_valid(demo_reports):
    man = json.loads((demo_reports / "manifest.json").read_text())
    assert {v["document"] for v in man["validations"] if v["valid"]} == {
        "csaf/kvir-2026-0001-sglang.json", "csaf/kvir-2026-0001.json", "osv/x_KVIR-2026-0001.json",
        "cve/cna_container.json"}
    assert man["numbers"]["affected"]["value"] == 155


def test_demo_index_in_chromium(demo_reports, tmp_path):
    dom, console = open_page(demo_reports / "index.html")
    assert console == [] and external_refs(dom) == []
    assert "155" in dom and dom.count('src="data:image/png;base64,') == 3
    shot = tmp_path / "demo_index.png"
    _, console = open_page(demo_reports / "index.html", screenshot=shot)
    assert console == [] and shot.read_bytes()[:4] == b"\x89PNG"
