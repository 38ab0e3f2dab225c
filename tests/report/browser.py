"""Headless Chromium (Debian's `chromium`) for the report tests: DOM dump, console log, screenshot."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium; .ci/run installs it): "
                    "the browser checks of reports/index.html cannot run here")
    return exe


def open_page(page: Path, screenshot: Path | None = None) -> tuple[str, list[str]]:
    """(DOM after load, console messages: CSP violations, failed loads, script errors)."""
    exe = chromium()
    args = [exe, *FLAGS, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000"]
    if screenshot is not None:
        args += ["--window-size=1280,2200", f"--screenshot={screenshot}"]
    else:
        args += ["--dump-dom"]
    proc = subprocess.run(args + [page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line or "net::ERR_" in line
               or "Failed to load resource" in line]
    return proc.stdout, console


def external_refs(dom: str) -> list[str]:
    """Every URL the page would load or navigate to that is not a local file or a data: URI."""
    refs = re.findall(r'\b(?:src|href|action|poster|data)\s*=\s*"([^"]*)"', dom)
    refs += re.findall(r"url\(\s*['\"]?([^)'\"]+)", dom)
    return [r for r in refs if re.match(r"^(?:[a-z][a-z0-9+.-]*:|//)", r, re.I) and not r.startswith("data:")]
