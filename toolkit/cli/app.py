"""The `kvir` command line. Each command (kvir.cli.<stage>) parses its options, calls one plain function of
the Python API and prints through kvir.cli.present; user-fixable errors end with one line and exit 2.

Help is plain text (rich_markup_mode=None): option help quotes spec keys like [disclosure] and [[sources]],
which rich markup would swallow. kvir.cli.help lays it out (whole summaries, plain metavars, no word split).
"""
from __future__ import annotations

from typing import Annotated

import typer

from kvir import __version__
from kvir.cli.help import KvirGroup, install

app = typer.Typer(cls=KvirGroup, add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Respond to and disclose KV-cache exposure incidents in LLM serving.")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kvir {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    pass


# Importing a command module is cheap: heavy imports (torch, matplotlib) happen inside the commands.
from kvir.cli import audit, confirm, demo, ingest, present, probe, replay, report, serve, triage  # noqa: E402
from kvir.cli import detect, preflight, vex  # noqa: E402

for _module in (triage, ingest, audit, confirm, replay, report, demo, probe, serve, preflight, vex, detect):
    _module.register(app)
install(app)


def main() -> None:
    # Ctrl-C / SIGTERM end the process with one line and 128 + the signal from here to the exit, not only
    # inside a command's body (between stages Python's own handler would leave a traceback), and are
    # ignored once the command has returned (see interruptible).
    with present.interruptible(then_ignore=True):
        app()


if __name__ == "__main__":
    main()
