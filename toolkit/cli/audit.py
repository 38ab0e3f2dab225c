"""`kvir audit`: a thin Typer wrapper over kvir.audit.audit (see toolkit/audit/__init__.py)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from kvir.cli.present import echo_json, fail, guarded, say

EXIT_OK, EXIT_GATE, EXIT_ERROR = 0, 1, 2
FORMATS = ("table", "json", "sarif")
SEVERITY_CHOICES = ("critical", "high", "medium", "low")

HELP = f"""Check every node's KV pool against its context, its build and its safety flags, from start-up logs.

Reads SGLang and vLLM start-up logs (files, folders or globs), writes one row per node start, the
findings (rule id, severity, node, evidence file:line, fix) and runtime indicators. A table goes to
stderr; --format json or sarif (SARIF 2.1.0) goes to stdout or --output.

Exit status: {EXIT_OK} = no failed finding at or above --fail-on (always {EXIT_OK} without --fail-on);
{EXIT_GATE} = at least one (with --strict, findings whose status is unknown count too);
{EXIT_ERROR} = the input or an option cannot be used (the message names the file, line or key).
"""


def register(app: typer.Typer) -> None:
    app.command(name="audit", help=HELP)(audit_command)


@guarded
def audit_command(
    paths: Annotated[list[str], typer.Argument(help="Start-up logs: files, folders or globs.")],
    inventory: Annotated[Optional[Path], typer.Option("--inventory", help="inventory.toml: file -> node, role, version, env.")] = None,
    case: Annotated[Optional[Path], typer.Option("--case", help="Write node_configs, findings, runtime_indicators into this case folder.")] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="table (stderr only), json or sarif (stdout or --output).")] = "table",
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the json/sarif output to this file.")] = None,
    fail_on: Annotated[Optional[str], typer.Option("--fail-on", help="Exit 1 when a failed finding is at or above: critical, high, medium or low.")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="With --fail-on: findings whose status is unknown count as failing.")] = False,
    source_tz: Annotated[Optional[str], typer.Option("--source-tz", help="Zone of the logs' host-local times (IANA name or +HH:MM); overrides the inventory.")] = None,
    year: Annotated[Optional[int], typer.Option("--year", help="Year of vLLM's year-less times.")] = None,
    current: Annotated[bool, typer.Option("--current", help="Only each node's latest start (table and gate).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress or tables on stderr.")] = False,
    incident: Annotated[Optional[Path], typer.Option("--incident", help="incident.toml: its mechanism's rules run (else the case's mechanism's, else the default mechanism's).")] = None,
) -> None:
    from kvir.audit import audit
    from kvir.cli.present.audit import print_audit

    if format not in FORMATS:
        fail(f"--format must be one of {', '.join(FORMATS)}, not {format!r}")
    if fail_on is not None and fail_on not in SEVERITY_CHOICES:
        fail(f"--fail-on must be one of {', '.join(SEVERITY_CHOICES)}, not {fail_on!r}")
    if output is not None and format == "table":
        fail("--output needs --format json or sarif (the table goes to stderr)")
    result = audit(paths, inventory=inventory, case=case, source_tz=source_tz, year=year, progress=not quiet,
                   current=current, incident=incident)
    if not quiet:
        print_audit(result)
        if case is not None:
            say(f"written into the case: {case}")
    if format != "table":
        doc = result.to_sarif() if format == "sarif" else result.as_json()
        if output is not None:
            output.write_text(json.dumps(doc, indent=2, default=str) + "\n")
            if not quiet:
                say(f"{format} written to {output}")
        else:
            echo_json(doc)
    if result.fails(fail_on, include_unknown=strict):
        if not quiet:
            say(f"audit gate: findings at or above {fail_on}", style="bold red")
        raise typer.Exit(code=EXIT_GATE)
