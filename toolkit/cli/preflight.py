"""`kvir preflight`: a thin Typer wrapper over kvir.preflight.preflight (see toolkit/preflight/__init__.py)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from kvir.cli.help import KvirCommand
from kvir.cli.present import echo_json, fail, guarded, say

SEVERITY_CHOICES = ("critical", "high", "medium", "low")

HELP = """Check a deployment before it serves: its engine arguments against every mechanism's rules.

Reads a command line (a file holding it, or the arguments after --), Kubernetes manifests, Helm values and
docker compose files (each container's or service's command, args, env and image), a requirements or pip
freeze file (the releases the image installs), start-up logs and saved /get_server_info (SGLang) or
/v1/models and /version (vLLM) answers. Every registered mechanism's audit rules run on the settings found,
with the shared preflight rule table (KV transfer rules): pool vs context, builds with known defects and the
first fixed one, deferred KV release, KV load failure policy, KV checksum and canary, prefix caching and the
cache salt in every tier's key, the block hash, LMCache x engine release pairs known to corrupt, and (with
--incident) what the gateway does with a client's cache_salt. Each finding names the file and line that set
it and the wheel code the rule rests on.

A table goes to stderr; --sarif and --junit write SARIF 2.1.0 (GitHub code scanning) and JUnit XML (one test
case per rule and node). Exit status: 0 = no failed finding at or above --fail-on; 1 = at least one;
2 = an input or option cannot be used (the message names the file, line or key).
"""


class PreflightCommand(KvirCommand):
    """Everything after `--` is a launch command, not paths (click would fold it into PATH...)."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        if "--" in args:
            i = args.index("--")
            ctx.meta["kvir_launch"] = args[i + 1:]
            args = args[:i]
        return super().parse_args(ctx, args)


def register(app: typer.Typer) -> None:
    app.command(name="preflight", help=HELP, cls=PreflightCommand)(preflight_command)


@guarded
def preflight_command(
    ctx: typer.Context,
    paths: Annotated[Optional[list[str]], typer.Argument(help="Deployment files: command lines, YAML, logs, JSON, requirements (files, folders or globs).")] = None,
    sarif: Annotated[Optional[Path], typer.Option("--sarif", help="Write SARIF 2.1.0 to this file.")] = None,
    junit: Annotated[Optional[Path], typer.Option("--junit", help="Write JUnit XML to this file.")] = None,
    output: Annotated[Optional[Path], typer.Option("--json", help="Write the node starts and findings as JSON to this file (- for stdout).")] = None,
    fail_on: Annotated[str, typer.Option("--fail-on", help="Exit 1 when a failed finding is at or above: critical, high, medium or low.")] = "high",
    incident: Annotated[Optional[Path], typer.Option("--incident", help="incident.toml whose mechanism sections the rules are judged with (e.g. what sets cache_salt: the section of a mechanism of cached prefixes).")] = None,
    vex: Annotated[Optional[Path], typer.Option("--vex", help="Also write per-deployment VEX (CSAF 2.0 and OpenVEX) into this folder.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No table on stderr.")] = False,
) -> None:
    from kvir.cli.present.preflight import print_preflight
    from kvir.preflight import preflight

    if fail_on not in SEVERITY_CHOICES:
        fail(f"--fail-on must be one of {', '.join(SEVERITY_CHOICES)}, not {fail_on!r}")
    argv = ctx.meta.get("kvir_launch") or None
    result = preflight(list(paths or []), argv, incident=incident)
    if not quiet:
        print_preflight(result, fail_on)
    _write(sarif, result.to_sarif(), "SARIF", quiet)
    if junit is not None:
        junit.write_text(result.to_junit(fail_on), encoding="utf-8")
        if not quiet:
            say(f"JUnit XML written to {junit}")
    if output is not None:
        if str(output) == "-":
            echo_json(result.as_json())
        else:
            _write(output, result.as_json(), "JSON", quiet)
    if vex is not None:
        from kvir.vex import write_vex

        written = write_vex(result, vex, incident=incident)
        if not quiet:
            say(f"VEX: {len(written)} document(s) written to {vex}")
    code = result.exit_code(fail_on)
    if code and not quiet:
        say(f"preflight gate: failed findings at or above {fail_on}", style="bold red")
    raise typer.Exit(code=code)


def _write(path: Path | None, doc: Any, what: str, quiet: bool) -> None:
    if path is None:
        return
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
    if not quiet:
        say(f"{what} written to {path}")
