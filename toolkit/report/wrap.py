"""Where a line may break on the HTML pages: never inside a timestamp, an id or a number, and inside a path
only after a separator.

A browser breaks text after any hyphen, so `2026-09-09T13:55:21Z`, `acct-74ddd5e7` or
`logs-2026-09-09-p001.json:444` would split mid-token in a narrow table cell (and `word-break: break-all`
splits anywhere). `unbreakable` runs over a rendered page once, after Jinja and markdown-it, on the text
between tags only (never inside a tag, a <style> or a <title>): each such token becomes
`<span class="nb">` (CSS: white-space: nowrap), and a path becomes its segments, each unbreakable, with a
break opportunity (<wbr>) after every `/`. The text itself (what a reader copies, what a search finds) is
unchanged: only tags are added.
"""
from __future__ import annotations

import re

_SKIP = re.compile(r"(<style\b.*?</style>|<title>.*?</title>|<script\b.*?</script>|<[^>]*>)", re.S | re.I)
# a token: letters, digits and the punctuation ids, times and paths are made of (no space, no entity)
_TOKEN = re.compile(r"[\w.:@+~/\\-]*[\w/\\]")
_SEGMENT = re.compile(r"[^/\\]*[/\\]+|[^/\\]+")


def _protected(token: str) -> bool:
    """A path (has a separator), or an id, date or time (a hyphen or colon joining parts and a digit)."""
    if "/" in token or "\\" in token:
        return len(token) > 1
    return any(c.isdigit() for c in token) and ("-" in token or ":" in token)


def _token_html(m: re.Match) -> str:
    token = m.group(0)
    if not _protected(token):
        return token
    segments = _SEGMENT.findall(token)
    return "<wbr>".join(f'<span class="nb">{s}</span>' for s in segments)


def unbreakable(html: str) -> str:
    """The page with every timestamp, id and path segment unbreakable, paths breakable after separators."""
    parts = _SKIP.split(html)
    for i in range(0, len(parts), 2):          # even items: text between tags
        parts[i] = _TOKEN.sub(_token_html, parts[i])
    return "".join(parts)
