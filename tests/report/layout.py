"""Layout facts of report pages in headless Chromium at given window widths, read from the DOM: each page is
copied beside itself with a measuring script (its Content-Security-Policy, which forbids scripts, taken out
of the copy only); the copies load in iframes as wide as the windows to check (an iframe is its page's
viewport: media queries and widths as in a window that wide), all in one `chromium --dump-dom` run, and a
script of the harness page writes what each copy measured into the DOM.

Measured, for every table cell (th, td) and every figure caption and paragraph:
    overflow     content wider than the box (a token wider than its cell: scrollWidth > clientWidth)
    broken       a word split over two lines although it is a time, an id, a number or a path segment (it
                 has a digit or one of / _ . : @); words of plain prose may break at their hyphens
and for the page: its scroll width against the window's (horizontal overflow)."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from .browser import FLAGS, chromium

SCRIPT = r"""
<script>
(function () {
  const out = {width: window.innerWidth, page: document.documentElement.scrollWidth, overflow: [], broken: []};
  const where = el => (el.tagName + ' ' + el.textContent.trim().replace(/\s+/g, ' ')).slice(0, 90);
  for (const el of document.querySelectorAll('main th, main td, main p, main li, figcaption, .card')) {
    if (el.scrollWidth > el.clientWidth + 1) out.overflow.push(where(el));
  }
  const walker = document.createTreeWalker(document.querySelector('main'), NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const re = /\S+/g; let m;
    while ((m = re.exec(n.data)) !== null) {
      if (!/[0-9\/_.:@]/.test(m[0])) continue;           // plain prose: may break at a hyphen
      range.setStart(n, m.index); range.setEnd(n, m.index + m[0].length);
      const tops = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (tops.size > 1) out.broken.push(m[0].slice(0, 80));
    }
  }
  const pre = document.createElement('pre'); pre.id = 'kvir-layout'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def layout_facts(page: Path, width: int, work: Path) -> dict:
    """{'width', 'page' (scroll width), 'overflow': [cells], 'broken': [words]} of `page` at `width` px."""
    return layout_facts_many([(page, width)], work)[0]


def layout_facts_many(views: list[tuple[Path, int]], work: Path) -> list[dict]:
    """layout_facts of several (page, width) views in one browser start: each page's measuring copy in an
    iframe of that width (its own viewport: media queries and window width as in a window that wide)."""
    copies, frames = [], []
    try:
        for i, (page, width) in enumerate(views):
            html = page.read_text(encoding="utf-8")
            html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html, count=1)
            copy = page.with_name(f".layout-{i}-{width}-{page.name}")   # beside the page: its links still resolve
            copy.write_text(html.replace("</body>", SCRIPT + "</body>", 1), encoding="utf-8")
            copies.append(copy)
            frames.append(f'<iframe scrolling="no" style="width:{width}px;height:900px;border:0;display:block" '
                          f'src="{copy.resolve().as_uri()}"></iframe>')
        harness = work / "layout-harness.html"
        harness.write_text("<!DOCTYPE html><html><body style='margin:0'>" + "".join(frames) + COLLECT + "</body></html>")
        copies.append(harness)
        proc = subprocess.run([chromium(), *FLAGS, "--window-size=1400,900", "--hide-scrollbars",
                               "--allow-file-access-from-files", "--virtual-time-budget=5000", "--dump-dom",
                               harness.resolve().as_uri()], capture_output=True, text=True, timeout=180)
    finally:
        for c in copies:
            c.unlink(missing_ok=True)
    found = re.search(r'<pre id="kvir-layout-all">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"chromium gave no layout facts: {proc.stderr[-500:]}"
    import html as htmlmod
    facts = json.loads(htmlmod.unescape(found.group(1)))
    assert len(facts) == len(views) and all(facts), f"a page gave no layout facts: {facts}"
    return facts


COLLECT = r"""
<script>
window.addEventListener('load', function () {
  const all = Array.from(document.querySelectorAll('iframe')).map(f => {
    const pre = f.contentDocument && f.contentDocument.getElementById('kvir-layout');
    return pre ? JSON.parse(pre.textContent) : null;
  });
  const pre = document.createElement('pre'); pre.id = 'kvir-layout-all'; pre.textContent = JSON.stringify(all);
  document.body.appendChild(pre);
});
</script>
"""


def screenshot(page: Path, width: int, out: Path, height: int = 1400) -> None:
    """A PNG of the top of the page at `width` px (the docs' screenshots)."""
    subprocess.run([chromium(), *FLAGS, f"--window-size={width},{height}", "--hide-scrollbars",
                    "--virtual-time-budget=2000", f"--screenshot={out}", page.resolve().as_uri()],
                   capture_output=True, timeout=120, check=True)
