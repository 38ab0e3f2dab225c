"""`kvir vex`: per-deployment VEX documents (kvir.vex) from deployment files (kvir preflight) or an audited case."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kvir.cli.present import fail, guarded, say

HELP = """Write a CSAF 2.0 VEX and an OpenVEX document per deployment (node) and known engine defect.

The defects are the incident's [defect] (-i) and those kvir's defect tables match on the evidence (the SGLang
build table read from the wheels): never invented. Per node the status is known_affected (an affected build in
the configuration that triggers the defect), known_not_affected with its justification (another package; a
node without prefill/decode disaggregation: vulnerable_code_not_in_execute_path), fixed, or
under_investigation (the build is not known). The evidence is deployment files read as kvir preflight reads
them (PATH...), or the node starts of a case kvir audit wrote (--case). Writes DIR/csaf/*.json and
DIR/openvex/*.json; every CSAF document is validated (csaf package: schema and mandatory tests) first.
"""


def register(app: typer.Typer) -> None:
    app.command(name="vex", help=HELP)(vex_command)


@guarded
def vex_command(
    paths: Annotated[Optional[list[str]], typer.Argument(help="Deployment files, as kvir preflight reads them.")] = None,
    out: Annotated[Path, typer.Option("--output", "-o", help="Folder to write csaf/ and openvex/ into.")] = Path("vex"),
    case: Annotated[Optional[Path], typer.Option("--case", help="A case folder with kvir audit's node_configs.")] = None,
    incident: Annotated[Optional[Path], typer.Option("--incident", "-i", help="incident.toml: its [defect] and [disclosure] (publisher, TLP).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on stderr.")] = False,
) -> None:
    from kvir.vex import write_vex

    if bool(paths) == bool(case):
        fail("give deployment files (PATH...) or --case CASE, not both and not neither")
    if case is not None:
        from kvir.case.store import Case

        with Case.open(case, read_only=True) as c:
            if not c.has("node_configs"):
                fail(f"{case}: no node_configs in the case (run kvir audit --case {case} first)")
            configs = c.con.execute("SELECT * FROM node_configs").df()
        written = write_vex(configs, out, incident=incident)
    else:
        from kvir.preflight import preflight

        written = write_vex(preflight(list(paths)), out, incident=incident)
    if not quiet:
        say(f"{len(written)} VEX document(s) written to {out}" if written else
            "no VEX written: the evidence matches no defect kvir knows and incident.toml declares none ([defect])")
