"""Layout facts of a report page in headless Chromium at a given window width, read from the DOM: the page
is copied beside itself with a measuring script (its Content-Security-Policy, which forbids scripts, taken
out of the copy only) and loaded with --dump-dom; the script writes what it measured into the DOM.

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
    html = page.read_text(encoding="utf-8")
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html, count=1)
    html = html.replace("</body>", SCRIPT + "</body>", 1)
    copy = page.with_name(f".layout-{width}-{page.name}")     # beside the page: its relative links still resolve
    copy.write_text(html, encoding="utf-8")
    try:
        proc = subprocess.run([chromium(), *FLAGS, f"--window-size={width},900", "--hide-scrollbars",
                               "--virtual-time-budget=2000", "--dump-dom", copy.resolve().as_uri()],
                              capture_output=True, text=True, timeout=120)
    finally:
        copy.unlink()
    found = re.search(r'<pre id="kvir-layout">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"chromium gave no layout facts for {page.name}: {proc.stderr[-500:]}"
    import html as htmlmod
    return json.loads(htmlmod.unescape(found.group(1)))


def screenshot(page: Path, width: int, out: Path, height: int = 1400) -> None:
    """A PNG of the top of the page at `width` px (the docs' screenshots)."""
    subprocess.run([chromium(), *FLAGS, f"--window-size={width},{height}", "--hide-scrollbars",
                    "--virtual-time-budget=2000", f"--screenshot={out}", page.resolve().as_uri()],
                   capture_output=True, timeout=120, check=True)
