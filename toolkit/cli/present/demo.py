"""`kvir demo`'s summary on stderr: one row per stage, then where the fleet, the case and the reports are."""
from __future__ import annotations

from kvir.cli.present import cell, say, stderr, table


def print_demo(result) -> None:
    rows = []
    for stage, info in result.stages.items():
        info = dict(info)
        secs = info.pop("seconds", "")
        skipped = info.pop("skipped", None)
        text = cell(f"skipped: {skipped}", "yellow") if skipped else \
            ", ".join(f"{k}={v}" for k, v in info.items() if k != "path")
        rows.append([stage, text, secs])
    stderr.print(table("kvir demo: the reference incident (KVIR-2026-0001, GLM-5.3)", ("stage", "result", ("s", "right")), rows))
    say(f"fleet: {result.fleet}")
    say(f"case:  {result.case}  (affected.csv, accounts.csv, nodes.csv, manifest.json)")
    index = result.case / "reports" / "index.html"
    if index.exists():
        say(f"reports: {index}")
