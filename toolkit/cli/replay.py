"""`kvir replay`: a thin Typer wrapper over kvir.replay.replay_case (replay/run.py).

torch is imported inside the command, never when the CLI loads: `kvir triage` does not pay for it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kvir.cli.present import echo_json, guarded

HELP = """Re-run the case's affected responses under the SGLang builds they ran on and the builds compared,
over a model of each decode node's history, and say whose data each response read.

Policies are builds (kvir.rules.builds, read from the wheels): sglang-0.5.19 (0.5.11-0.5.19: the stub's
page is transferred, HTTP 200), sglang-0.5.20 (retired after its forward, 400), sglang-0.5.21 (0.5.21 and
later: rejected at the bootstrap door, 400); kvir-proposal is kvir's own hardening, not a build.
--builds (default: incident,fixed) lists them: incident = each response's production build (its prefill
node's, from the audit's node_configs), fixed = the first build that never transfers the stub, door, leaking,
kvir-proposal, or any SGLang version.

Writes replay_results (one row per response and build: verdict exposed, served-unwritten, not-reproduced,
rejected, failed or inconclusive; HTTP status and stage; foreign owners with accounts, token ranges and
attention mass) and replay_exposure (whose data reached whom) into the case. A summary goes to stderr.
Leaked token ids are never printed unless --show-text is given.
"""


def register(app: typer.Typer) -> None:
    app.command(name="replay", help=HELP)(replay_command)


@guarded
def replay_command(
    case: Annotated[Path, typer.Option("--case", "-c", help="The case folder (from `kvir triage`).")],
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", help="Replay only the first N affected responses (by time).")] = None,
    builds: Annotated[Optional[str], typer.Option("--builds", "-b", help="Comma-separated builds: incident, fixed, door, leaking, kvir-proposal or SGLang versions (default: incident,fixed).")] = None,
    device: Annotated[str, typer.Option("--device", help="auto, cpu or cuda.")] = "auto",
    canary: Annotated[bool, typer.Option("--canary", help="Also verify, per decode step, that a request reads only slots it wrote (like --kv-canary log; builds from 0.5.13).")] = False,
    checksum: Annotated[bool, typer.Option("--checksum", help="Digest the sent KV pages and verify them at receive (like --disaggregation-enable-kv-checksum; builds from 0.5.21).")] = False,
    scale: Annotated[Optional[float], typer.Option("--scale", help="Shrink the decode attention to 1 in 1/FACTOR pages of each response (FACTOR in (0, 1]); whose data each response read is always worked out at full size.")] = None,
    show_text: Annotated[bool, typer.Option("--show-text", help="Print and store the replayed response token ids (synthetic stand-ins for leaked text).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON on stdout.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or tables on stderr.")] = False,
) -> None:
    from kvir.cli.present.replay import print_replay
    from kvir.replay.run import replay_case

    run = replay_case(case, limit=limit, device=device, canary=canary, checksum=checksum, scale=scale,
                      show_text=show_text, progress=not quiet,
                      builds=[b for b in builds.split(",") if b.strip()] if builds else None)
    if not quiet:
        print_replay(run, show_text=show_text)
    if as_json:
        echo_json(run.summary)
