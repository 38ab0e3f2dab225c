"""`kvir report`'s summary on stderr: each document, its validator and the result."""
from __future__ import annotations

from kvir.cli.present import Col, cell, say, stderr, table


def print_report(result) -> None:
    rows = []
    for v in result.validations:
        res = cell("not validated", "yellow") if v.valid is None else \
            cell("valid", "green") if v.valid else cell(f"INVALID ({len(v.errors)})", "bold red")
        rows.append([v.document, v.validator, res])
    stderr.print(table(f"Reports in {result.out_dir}", ("document", Col("validator", below=True), "result"), rows))
    say(f"{len(result.artifacts)} artifacts; open {result.index}")
    for w in result.warnings:
        say("warning:", w, style="yellow")
    if not result.ok:
        say("kvir: some documents FAILED validation (written as *.invalid.json with their errors)", style="bold red")
