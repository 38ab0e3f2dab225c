"""The reports of `kvir demo` (the reference incident, README "The reference incident"): 155 affected responses in the
2026-08-27 → 2026-09-09 window, the 2026-09-09 events in order, an index that renders offline."""
from __future__ import annotations

import json
import re

from .browser import external_refs, open_page

DAY = [("13:22", "Incident declared"), ("14:00", "Model made private"), ("14:35", "Root cause found"),
       ("14:52", "All prefill nodes on the fixed config"), ("19:40", "Model public again")]


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
    # the data confirms the day: the pause in customer traffic (inferred: its end lies after the window, so no
    # "public again" is inferred from it) and the prefill restarts (start-up log lines)
    kinds = {r["kind"] for r in rows if r["origin"] == "data"}
    assert {"model-private", "all-prefill-fixed", "first-affected", "last-affected"} <= kinds
    assert "model-public" not in kinds
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


def _cards(index_html: str) -> dict[str, str]:
    """The index's headline numbers by name: <div class="card" data-count="NAME"><div class="v">VALUE</div>,
    and the counts named inside a card's text (<span data-count="NAME">VALUE</span>)."""
    cards = dict(re.findall(r'<div class="card[^"]*" data-count="(\w+)"><div class="v">(.*?)</div>', index_html))
    cards.update(re.findall(r'<span data-count="(\w+)">([^<]+)</span>', index_html))
    return {k: re.sub(r"<[^>]+>", "", v) for k, v in cards.items()}    # less the .nb spans around dates


def test_index_states_the_terminal_summary_and_the_ground_truth(demo_run, demo_reports, ground_truth):
    """The index's numbers are the ones `kvir triage` printed (summary.json, the triage summary) and the
    ones the simulator planned: 155 responses to N accounts (68 at the default size), 2 of them the
    labelled researcher's and provider's accounts (10 responses), N - 2 customers; one notice per account."""
    cards = _cards((demo_reports / "index.html").read_text())
    terminal = json.loads((demo_run.case / "summary.json").read_text())["summary"]
    labelled = {ground_truth["researcher_account"], ground_truth["provider_account"]}
    expected = {"affected": ground_truth["affected"], "affected_accounts": ground_truth["affected_accounts"],
                "customer_accounts": ground_truth["affected_accounts"] - len(labelled),
                "labelled_accounts": len(labelled)}
    assert expected["affected"] == 155 and expected["labelled_accounts"] == 2
    for name, value in expected.items():
        assert int(cards[name].replace(",", "")) == value == terminal[name], name
    assert demo_run.stages["triage"]["accounts"] == expected["affected_accounts"]     # the demo's own table
    assert demo_run.stages["triage"]["affected"] == 155
    labelled_responses = ground_truth["researcher_affected"] + ground_truth["provider_affected"]
    assert terminal["affected_labelled"] == labelled_responses == 10
    assert f"{155 - labelled_responses} to customers, {labelled_responses} to labelled test accounts" in \
        (demo_reports / "index.html").read_text()
    assert len(list((demo_reports / "notices" / "affected").glob("*.md"))) == expected["affected_accounts"]
    assert cards["window"] == "2026-08-27 → 2026-09-09"


def test_report_queries_run_once_over_all_accounts(demo_run):
    """compiled/ holds one file per report query (set-based: no query runs once per account); the demo's
    68 affected and ~100 source accounts would otherwise give hundreds of files."""
    from collections import Counter

    from kvir.core.sql import all_query_names

    names = Counter(re.sub(r"^\d+_", "", p.name) for p in (demo_run.case / "compiled").glob("*.sql"))
    report_files = {n: k for n, k in names.items() if n.startswith("report__")}
    assert report_files and set(report_files.values()) == {1}, report_files
    known = {f"{n.replace('/', '__')}.sql" for n in all_query_names() if n.startswith("report/")}
    assert set(report_files) <= known
    assert sum(names.values()) < 80, names


def test_reports_name_no_absolute_local_path(demo_run, demo_reports):
    """Evidence files are named relative to the case (the demo's fleet lies beside it: ../fleet/...)."""
    root = str(demo_run.out.resolve())
    for p in demo_reports.rglob("*"):
        if p.suffix in (".md", ".html", ".csv", ".jsonl", ".json", ".txt"):
            assert root not in p.read_text(), p
    pm = (demo_reports / "postmortem.md").read_text()
    assert re.search(r"\.\./fleet/engine/glm53-prefill-0/server\.log:\d+", pm)


def test_demo_documents_have_no_recommended_warnings(demo_reports):
    """The Python CSAF validator with every test set (network and spell-check tests aside): no error and
    no warning in either CSAF document; the index shows each document as valid."""
    man = json.loads((demo_reports / "manifest.json").read_text())
    for v in man["validations"]:
        assert v["valid"] is True and v["errors"] == [] and v["warnings"] == [], v
    index = (demo_reports / "index.html").read_text()
    assert index.count('<span class="badge ok">valid</span>') == 4 and "not validated" not in index
    assert "badge warn" not in index and "[disclosure] keys not set" not in index


def test_response_day_figure_labels_do_not_overlap(demo_run):
    """On the demo's response-day panel every event number and every key line stands apart from the others
    (their drawn extents do not intersect), and each of the day's hand-entered events is in the key."""
    import itertools

    from kvir import open_case
    from kvir.report.build import build_model
    from kvir.report.figures import affected_time_figure

    case = open_case(demo_run.case)
    try:
        model = build_model(case)
    finally:
        case.close()
    fig, _ = affected_time_figure(model)
    renderer = fig.canvas.get_renderer()
    texts = [t for ax in fig.axes for t in ax.texts if t.get_text().strip()]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    numbers = [b for b in boxes if b[0].isdigit()]
    assert len(numbers) >= len(DAY)
    for (a, ba), (b, bb) in itertools.combinations(boxes, 2):
        assert not ba.overlaps(bb), (a[:40], b[:40])
    key = "\n".join(t for t, _ in boxes if not t.isdigit())
    for hhmm, title in DAY:
        assert f"{hhmm}  {title}" in key, (hhmm, title)
