"""`kvir report`: render the incident's documents from a case (a thin wrapper over kvir.report.report)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kvir.cli.present import echo, guarded
from kvir.report.artifacts import help_text

ONLY_HELP = help_text()   # every artifact `--only` accepts, from kvir.report.artifacts (tests/report/test_coverage.py)


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)


@guarded
def report_command(
    case: Annotated[Path, typer.Option("--case", "-c", help="The case folder (from `kvir triage`).")] = Path("case"),
    only: Annotated[Optional[list[str]], typer.Option("--only", help=ONLY_HELP)] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="Prose documents as md, html or all.")] = "all",
    incident: Annotated[Optional[Path], typer.Option(
        "--incident", "-i", help="Re-read hand events and [disclosure] from this incident.toml first.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No summary on stderr.")] = False,
) -> None:
    """Render the timeline, post-mortem, public report, advisory (CSAF, OSV, CVE), customer notices and the
    GDPR Art. 33 draft into CASE/reports/, validating the machine-readable documents."""
    from kvir.cli.present.report import print_report
    from kvir.report import report

    result = report(case, only=only, format=format, spec=incident)
    if not quiet:
        print_report(result)
    echo(str(result.index))
    if not result.ok:
        raise typer.Exit(code=1)
