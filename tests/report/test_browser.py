"""reports/*.html in headless Chromium: they render, reference nothing outside the folder, and load no
resource that fails (every attempt would show as a console message: the pages' CSP allows only data:
images and inline styles)."""
from __future__ import annotations

import pytest
from .browser import external_refs, open_page

PAGES = ["index.html", "timeline.html", "public_report.html", "postmortem.html", "advisory.html", "gdpr_art33.html"]


def test_the_console_check_can_fail(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text('<html><head><meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
                   'img-src data:"></head><body><img src="missing.png"><img src="https://example.com/x.png">'
                   '</body></html>')
    dom, console = open_page(bad)
    assert len(console) >= 2 and "missing.png" in " ".join(console)
    assert external_refs(dom) == ["https://example.com/x.png"]


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_offline(rendered, page):
    dom, console = open_page(rendered.path(page))
    assert console == []
    assert external_refs(dom) == []
    assert "<h1>" in dom and "KVIR-2026-0001" in dom
    if page == "index.html":
        assert dom.count('src="data:image/png;base64,') == 3
        assert "affected responses" in dom


def test_screenshot(rendered, tmp_path):
    shot = tmp_path / "index.png"
    _, console = open_page(rendered.index, screenshot=shot)
    assert console == []
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
