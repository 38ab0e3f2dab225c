"""The `kvir` command line: each command is a thin wrapper over a plain function of the Python API.

Progress and summaries go to stderr; machine output (--json) goes to stdout; results go to files.
Errors a user can fix exit with status 2 and one line naming the file, line or key.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from kvir import __version__
from kvir.core.errors import KvirError
from kvir.cli.present import fail

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode="rich",
                  help="Respond to and disclose KV-cache exposure incidents in LLM serving.")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kvir {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    pass


_fail = fail


@app.command()
def init(path: Annotated[Path, typer.Argument(help="Where to write the template.")] = Path("incident.toml"),
         force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False) -> None:
    """Write a commented incident.toml template."""
    from kvir.spec.model import TEMPLATE

    if path.exists() and not force:
        _fail(KvirError("already exists (use --force to overwrite)", path=str(path)))
    path.write_text(TEMPLATE)
    typer.echo(str(path))


@app.command()
def triage(
    paths: Annotated[Optional[list[str]], typer.Argument(help="Log files, folders or globs (default: [[sources]] in the spec).")] = None,
    incident: Annotated[Path, typer.Option("--incident", "-i", help="The incident spec (incident.toml).")] = Path("incident.toml"),
    out: Annotated[Path, typer.Option("--out", "-o", help="The case folder to create or overwrite.")] = Path("case"),
    format: Annotated[str, typer.Option("--format", "-f", help="auto, or a name from `kvir formats`.")] = "auto",
    source_tz: Annotated[Optional[str], typer.Option("--source-tz", help="Zone of naive timestamps: IANA name or +HH:MM.")] = None,
    served_model: Annotated[Optional[str], typer.Option("--served-model", help="Model served by engine logs without a server_args= line.")] = None,
    year: Annotated[Optional[int], typer.Option("--year", help="Year for year-less timestamps (vLLM).")] = None,
    max_bad_lines: Annotated[Optional[int], typer.Option("--max-bad-lines", help="Fail when more records than this are quarantined.")] = None,
    keep_raw: Annotated[bool, typer.Option("--keep-raw", help="Keep the raw text of quarantined lines (may hold prompts).")] = False,
    hash: Annotated[str, typer.Option("--hash", help="Input fingerprints: auto (full for text, footer for Parquet), full (SHA-256 of every byte), footer, none.")] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON on stdout.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars or tables on stderr.")] = False,
    memory_limit: Annotated[Optional[str], typer.Option("--memory-limit", help="DuckDB memory limit, e.g. 4GB.")] = None,
    startup: Annotated[Optional[list[str]], typer.Option("--startup", help="Start-up logs (repeatable): judge each request by the pool in effect on its node at that time.")] = None,
    inventory: Annotated[Optional[Path], typer.Option("--inventory", help="Inventory TOML mapping start-up log files to nodes (with --startup).")] = None,
    join_tolerance: Annotated[float, typer.Option("--join-tolerance", help="Seconds within which evidence without a shared id is joined by time.")] = 2.0,
) -> None:
    """Find the affected responses, the accounts and the nodes behind them."""
    from kvir.cli.present import print_triage
    from kvir.triage.run import triage as run_triage

    try:
        result = run_triage(incident, paths or [], out=out, format=format, source_tz=source_tz,
                            served_model=served_model, year=year, max_bad_lines=max_bad_lines,
                            keep_raw=keep_raw, hash=hash, progress=not quiet,
                            memory_limit=memory_limit, startup=startup or None, inventory=inventory,
                            join_tolerance_s=join_tolerance)
    except KvirError as e:
        _fail(e)
        return
    if not quiet:
        print_triage(result)
    if as_json:
        typer.echo(json.dumps(result.as_json(), indent=2, default=str))


@app.command()
def formats() -> None:
    """List every log format kvir reads, with what each needs."""
    from kvir.cli.present import print_formats

    print_formats()


# Commands of the later stages live in their own modules (kvir.cli.audit, .replay, .report, .demo, .probe, .serve), each
# with register(app). Importing them is cheap: heavy imports happen inside the command functions.
from kvir.cli import audit as _audit, demo as _demo, replay as _replay, report as _report  # noqa: E402
from kvir.cli import probe as _probe, serve as _serve  # noqa: E402

for _mod in (_audit, _replay, _report, _demo, _probe, _serve):
    _mod.register(app)


def main() -> None:
    try:
        app()
    except KvirError as e:  # pragma: no cover - commands catch their own
        print(f"kvir: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
