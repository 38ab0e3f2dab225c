"""`kvir formats`: the format list is the command's result, so it goes to stdout."""
from __future__ import annotations

from rich.console import Console

from kvir.cli.present import table
from kvir.ingest.formats import FORMATS

EVIDENCE = {"counts": "prompt tokens", "candidates": "candidates (joined by id or time)",
            "aggregate": "aggregate bounds only"}


def print_formats() -> None:
    rows = []
    for f in FORMATS.values():
        needs = ", ".join("--source-tz" if n == "source_tz" else "[sources.columns]" if n == "columns" else f"--{n}"
                          for n in f.needs) or "-"
        if f.options:
            needs += f"; optional: {f.options}"
        times = f.times + (" (UTC by definition: --source-tz not applied)" if f.times_utc else "")
        rows.append([f.name, f.title, times, needs, EVIDENCE.get(f.evidence, f.evidence)])
    Console(width=160).print(table("Formats (`--format NAME`; auto sniffs content)",
                                   ("name", "what", "times", "needs", "evidence"), rows))
