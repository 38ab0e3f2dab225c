"""The check every foreign case's documents must pass: no fact of the reference incident, and no date or
version that neither the case's evidence nor its spec holds.

The reference facts are built from the reference spec and world (kvir.sim.spec, kvir.sim.world: written
once, imported here), plus the words of its mechanism that only its evidence can justify."""
from __future__ import annotations

import re
from pathlib import Path

from kvir.rules.builds import TABLE
from kvir.sim import spec as ref
from kvir.sim import world as w


def _numbers(n: int) -> list[str]:
    return [str(n), f"{n:,}"]


REFERENCE_FACTS: tuple[str, ...] = tuple(dict.fromkeys([
    ref.ID, ref.TITLE, w.GW_MODEL, w.ENGINE_MODEL, "GLM", "glm-5", "zai-org", "Mooncake",
    *_numbers(w.POOL_BUG), *_numbers(w.CONTEXT), *_numbers(w.POOL_FIXED), *_numbers(w.ENGINE_LIMIT),
    *(t.strftime("%Y-%m-%d") for t in (w.WINDOW_START, w.WINDOW_END, w.DECLARED, w.REPORT_RECEIVED)),
    "2026-10-26", "2026-10-19", "2026-10-02",                          # the provider statement and release dates
    *(v for v in TABLE.read),                                           # SGLang builds
    "Example Inference Co", "bug-bounty",
]))
# the reference mechanism's words: only evidence of it (a placeholder count, PD nodes, SGLang) may bring them
MECHANISM_WORDS = ("placeholder", "prefill/decode", "SGLang", "sglang", "max_req_input_len")
STANDARD_VERSIONS = {"2.0", "1.7.5", "5.1", "5.1.1", "3.1", "3.0"}   # CSAF, OSV, CVE record, CVSS
CSAF_TEST_ID = re.compile(r"6\.[123]\.\d+$")                      # CSAF 2.0 §6 test numbers in validation notes


def documents(reports: Path) -> dict[str, str]:
    """Every rendered text artifact (figures are images: their captions are in the HTML)."""
    out = {}
    for p in sorted(reports.rglob("*")):
        if p.is_file() and p.suffix in (".md", ".html", ".json", ".csv", ".jsonl", ".txt"):
            text = p.read_text(encoding="utf-8")
            if p.suffix == ".html":
                text = re.sub(r'src="data:image/png;base64,[^"]*"', 'src=""', text)   # embedded figures
            out[str(p.relative_to(reports))] = text
    return out


def reference_leaks(docs: dict[str, str], allowed: tuple[str, ...] = ()) -> list[str]:
    hits = []
    for name, text in docs.items():
        for fact in REFERENCE_FACTS + MECHANISM_WORDS:
            if fact in allowed:
                continue
            if re.search(r"(?<![\w.])" + re.escape(fact) + r"(?![\w-])", text):   # not format names (sglang-json)
                hits.append(f"{name}: {fact!r}")
    return hits


def unowned(docs: dict[str, str], dates: set[str], versions: set[str]) -> list[str]:
    """Dates (YYYY-MM-DD) and versions (X.Y.Z) in the documents that neither the evidence nor the spec holds."""
    bad = []
    for name, text in docs.items():
        for d in set(re.findall(r"(?<!\d)(20\d\d-\d\d-\d\d)", text)):
            if d not in dates:
                bad.append(f"{name}: date {d}")
        for v in set(re.findall(r"(?<![\w.])v?(\d+\.\d+\.\d+(?:\.post\d+)?)(?![\w.])", text)):
            if v not in versions and v not in STANDARD_VERSIONS and not CSAF_TEST_ID.match(v):
                bad.append(f"{name}: version {v}")
    return bad
