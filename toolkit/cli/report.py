"""`kvir report`: render the incident's documents from a case (a thin wrapper over kvir.report.report)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kvir.report.artifacts import help_text

ONLY_HELP = help_text()   # every artifact `--only` accepts, from kvir.report.artifacts (tested to match)


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report_cmd(
        case: Annotated[Path, typer.Option("--case", "-c", help="The case folder (from `kvir triage`).")] = Path("case"),
        only: Annotated[Optional[list[str]], typer.Option("--only", help=ONLY_HELP)] = None,
        format: Annotated[str, typer.Option("--format", "-f", help="Prose documents as md, html or all.")] = "all",
        incident: Annotated[Optional[Path], typer.Option(
            "--incident", "-i", help="Re-read hand events and \\[disclosure] from this incident.toml first.")] = None,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No summary on stderr.")] = False,
    ) -> None:
        """Render the timeline, post-mortem, public report, advisory (CSAF, OSV, CVE), customer notices and the
        GDPR Art. 33 draft into CASE/reports/, validating the machine-readable documents."""
        from kvir.cli.present import fail as _fail
        from kvir.core.errors import KvirError
        from kvir.core.progress import stderr
        from kvir.report import report

        try:
            result = report(case, only=only, format=format, spec=incident)
        except KvirError as e:
            _fail(e)
            return
        if not quiet:
            from rich.table import Table

            t = Table(title=f"Reports in {result.out_dir}", title_justify="left")
            for col in ("document", "validator", "result"):
                t.add_column(col)
            for v in result.validations:
                res = "not validated" if v.valid is None else ("valid" if v.valid else f"INVALID ({len(v.errors)})")
                if v.warnings:
                    res += f", {len(v.warnings)} warning(s)"
                t.add_row(v.document, v.validator, res)
            stderr.print(t)
            stderr.print(f"{len(result.artifacts)} artifacts; open {result.index}", highlight=False)
            from rich.markup import escape

            for w in result.warnings:
                stderr.print(f"[yellow]warning:[/] {escape(w)}", highlight=False, markup=True)
        typer.echo(str(result.index))
        if not result.ok:
            stderr.print("[bold red]kvir:[/] some documents FAILED validation (written as *.invalid.json with "
                         "their errors)", markup=True)
            raise typer.Exit(code=1)
