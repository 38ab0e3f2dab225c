"""Comments and documents name only files that exist: a path into the repository (toolkit/..., queries/...,
tests/...) must be there, and nothing may point at notes outside it (a design document, research notes,
a helper's scratch file), which a reader of a clean checkout cannot open."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOPS = ("toolkit", "queries", "templates", "replay", "tests", "benchmarks", "notebooks")
# written by the code at run time (git-ignored), or made up by a test
OUTPUTS = ("benchmarks/results/", "benchmarks/data", "benchmarks/out", "queries/t/")
OUTSIDE = re.compile(r"(?<![\w.-])(?:DESIGN\.md|research/[\w.-]+\.md|helpers/[\w.-]+|shared/research)")
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./*-]*[\w*-])" % "|".join(TOPS))
TEXT = re.compile(r"\.(py|sql|j2|md|toml|sh|mjs|ipynb)$|^\.ci/run$")


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    # fixture data is what real software wrote: its paths are the software's, not kvir's
    return [f for f in out if TEXT.search(f) and not (f.startswith("tests/fixtures/") and not f.endswith((".py", ".md", ".sh")))]


# names written in capitals that are real files, not placeholders such as NAME.sql or LAKE/...
REAL_CAPS = {"README", "LICENSE", "CHANGELOG", "NOTES", "SOURCES", "CONTRIBUTING"}


def _placeholder(ref: str) -> bool:
    """A path with a placeholder segment (NAME.sql, LAKE/, X), a glob or a template field."""
    if re.search(r"\*|<|\{", ref):
        return True
    stems = (seg.split(".")[0] for seg in ref.split("/"))
    return any(re.fullmatch(r"[A-Z][A-Z0-9_]*", s) and s not in REAL_CAPS for s in stems)


def _exists(ref: str) -> bool:
    ref = ref.rstrip(".")
    if ref.startswith(OUTPUTS) or _placeholder(ref):
        return True
    p = ROOT / ref
    # a query is named without .sql (case.run("case/requests_merged")), a module path without .py; a query
    # name is relative to queries/, shared or a mechanism's (case.run("replay/summary"), mechanism=...)
    return p.exists() or (not p.suffix and (any((ROOT / (ref + ext)).exists() for ext in (".py", ".sql"))
                                            or (ROOT / "queries" / (ref + ".sql")).exists()
                                            or any((ROOT / "queries").glob(f"mechanisms/*/{ref}.sql"))))


def test_every_named_repository_path_exists():
    missing = []
    for f in tracked():
        if f == "tests/test_references.py":       # its own examples of paths that do not exist
            continue
        for n, line in enumerate((ROOT / f).read_text(errors="replace").splitlines(), 1):
            missing += [f"{f}:{n}: {m.group(1)}" for m in PATH.finditer(line) if not _exists(m.group(1))]
    assert missing == []


def test_nothing_points_outside_the_repository():
    hits = [f"{f}:{n}: {line.strip()[:100]}" for f in tracked() if f != "tests/test_references.py"
            for n, line in enumerate((ROOT / f).read_text(errors="replace").splitlines(), 1) if OUTSIDE.search(line)]
    assert hits == []


def test_the_checks_can_fail():
    assert not _exists("toolkit/ingest.py") and not _exists("queries/nope/x.sql")
    assert not _exists("tests/nowhere/README.md") and _exists("queries/adapters/NAME.sql")
    assert _exists("toolkit/ingest/lines.py") and _exists("queries/case/requests_merged")
    assert OUTSIDE.search("see research/sglang.md §1.4") and OUTSIDE.search("(DESIGN.md §1)")
