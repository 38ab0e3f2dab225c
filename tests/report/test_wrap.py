"""kvir.report.wrap: where a line may break on the pages (expected markup written out by hand)."""
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
