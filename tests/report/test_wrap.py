"""kvir.report.wrap (where a line may break on the pages) and kvir.report.read.shown_path (the one base of
every path the documents name); expected values written out by hand."""
from __future__ import annotations

import re

from kvir.report.wrap import unbreakable

NB = '<span class="nb">{}</span>'


def test_a_path_breaks_only_after_its_separators():
    assert unbreakable("<td>../fleet/logs-2026-09-09-p001.json:444</td>") == "<td>" + "<wbr>".join(
        NB.format(s) for s in ("../", "fleet/", "logs-2026-09-09-p001.json:444")) + "</td>"


def test_times_ids_and_versions_are_one_token_and_prose_is_left_alone():
    out = unbreakable("<p>at 2026-09-09T13:55:21.160147Z on glm53-prefill-3, a bug-bounty report (v0.5.19).</p>")
    assert out == ("<p>at " + NB.format("2026-09-09T13:55:21.160147Z") + " on " + NB.format("glm53-prefill-3")
                   + ", a bug-bounty report (v0.5.19).</p>")


def test_tags_styles_titles_and_entities_are_untouched():
    page = ('<html><head><title>a/b 2026-01-01</title><style>a { content: "x/y-1"; }</style></head>'
            '<body><a href="notices/affected/acct-1.html">acct-1 &lt;x/y&gt;</a></body></html>')
    out = unbreakable(page)
    assert out.startswith('<html><head><title>a/b 2026-01-01</title><style>a { content: "x/y-1"; }</style>')
    assert '<a href="notices/affected/acct-1.html">' + NB.format("acct-1") + " &lt;" in out
    assert re.sub(r"<[^>]+>", "", out) == re.sub(r"<[^>]+>", "", page)      # the text a reader copies


def test_every_input_is_named_from_the_case_folder(tmp_path):
    """One base: a file beside the case, one elsewhere and a relative path as given on the command line
    (resolved when read) are all named relative to the case folder."""
    from kvir.report.read import shown_path

    case = tmp_path / "work" / "case"
    case.mkdir(parents=True)
    resolved = {"fleet/gw.json": str(tmp_path / "work" / "fleet" / "gw.json")}
    assert shown_path(tmp_path / "work" / "fleet" / "engine.log", case) == "../fleet/engine.log"
    assert shown_path(tmp_path / "var" / "log" / "n0.log", case) == "../../var/log/n0.log"
    assert shown_path("fleet/gw.json", case, resolved) == "../fleet/gw.json"
    assert shown_path(case / "inputs" / "x.log", case) == "inputs/x.log"
    assert shown_path("elsewhere/x.log", case, resolved) == "elsewhere/x.log"    # not placed: as recorded
