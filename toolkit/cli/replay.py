"""`kvir replay`: a thin Typer wrapper over kvir.replay.replay_case (replay/run.py).

torch is imported inside the command, never when the CLI loads: `kvir triage` does not pay for it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from kvir.core.errors import KvirError

HELP = """Re-run the case's affected responses on an unpatched and a patched prefill/decode engine, over a
model of each decode node's history, and say whose data each response read.

Writes replay_results (verdict per response: exposed, rejected-by-patch, not-reproduced or inconclusive;
HTTP status unpatched vs patched; foreign owners with accounts, token ranges and attention mass) and
replay_exposure (whose data reached whom) into the case. A summary goes to stderr. Leaked token ids are
never printed unless --show-text is given.
"""


def register(app: typer.Typer) -> None:
    app.command(name="replay", help=HELP)(replay_command)


def replay_command(
    case: Annotated[Path, typer.Option("--case", "-c", help="The case folder (from `kvir triage`).")],
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", help="Replay only the first N affected responses (by time).")] = None,
    device: Annotated[str, typer.Option("--device", help="auto, cpu or cuda.")] = "auto",
    canary: Annotated[bool, typer.Option("--canary", help="Also verify, per decode step, that a request reads only slots it wrote (like --kv-canary log).")] = False,
    checksum: Annotated[bool, typer.Option("--checksum", help="Digest the KV at send and verify it at receive, with the token count (like --disaggregation-enable-kv-checksum).")] = False,
    scale: Annotated[Optional[float], typer.Option("--scale", help="Shrink every length (prompts, responses, pools, contexts) by this factor in (0, 1], keeping each admission decision.")] = None,
    show_text: Annotated[bool, typer.Option("--show-text", help="Print and store the replayed response token ids (synthetic stand-ins for leaked text).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON on stdout.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or tables on stderr.")] = False,
) -> None:
    from kvir.core.progress import stderr

    try:
        from kvir.replay.run import replay_case

        run = replay_case(case, limit=limit, device=device, canary=canary, checksum=checksum, scale=scale,
                          show_text=show_text, progress=not quiet)
    except KvirError as e:
        stderr.print(f"[bold red]kvir:[/] {e}", highlight=False, markup=True, soft_wrap=True)
        raise typer.Exit(code=2)
    if not quiet:
        print_replay(run, show_text=show_text)
    if as_json:
        typer.echo(json.dumps(run.summary, indent=2, default=str))


def print_replay(run, *, show_text: bool = False) -> None:
    """Summary tables on stderr: verdicts, responses, and whose data reached whom."""
    from rich.table import Table

    from kvir.core.progress import stderr
    from kvir.replay import queries

    s = run.summary
    note = f"scale {s['scale']:g}" + (" (every length shrunk)" if s["scale"] != 1 else " (full size)")
    t = Table(title=f"kvir replay: {s['replayed']} affected response(s), {note}, {s['device']}", title_justify="left")
    for col in ("verdict", "responses"):
        t.add_column(col, justify="right" if col == "responses" else "left")
    for v in ("exposed", "rejected-by-patch", "not-reproduced", "inconclusive"):
        t.add_row(v, str(s[v.replace("-", "_")]))
    stderr.print(t)

    r = run.results
    if len(r):
        t = Table(title="responses (unpatched -> patched HTTP status)", title_justify="left")
        for col in ("request", "account", "verdict", "status", "foreign requests", "foreign tokens", "top source account"):
            t.add_column(col, no_wrap=True)
        for row in r.itertuples(index=False):
            owners = list(row.foreign_owners) if hasattr(row.foreign_owners, "__len__") else []
            top = owners[0] if owners else None
            t.add_row(row.request_id, _s(row.account_id), row.verdict,
                      f"{_s(row.unpatched_status) or '-'} -> {_s(row.patched_status) or '-'}", str(len(owners)),
                      _s(row.leaked_tokens), _s(top["account_id"]) if top else "")
        stderr.print(t)
        if show_text:
            for row in r.itertuples(index=False):
                toks = row.response_tokens
                if toks is not None and hasattr(toks, "__len__"):
                    stderr.print(f"{row.request_id}: response token ids {list(toks)}", highlight=False, markup=False)

    src = queries.run(run.case, "sources_by_account")
    if len(src):
        t = Table(title="whose data reached whom (source accounts)", title_justify="left")
        for col in ("source account", "source requests", "responses reached", "reader accounts", "tokens"):
            t.add_column(col, justify="left" if col == "source account" else "right")
        for row in src.itertuples(index=False):
            t.add_row(_s(row.source_account_id) or "(unknown)", str(row.source_requests), str(row.reader_responses),
                      str(row.reader_accounts), str(int(row.tokens)))
        stderr.print(t)
    stderr.print(f"case: {run.case.path}  (replay_results, replay_exposure; replay_exposure.csv)", highlight=False)


def _s(v) -> str:
    if v is None or v is getattr(__import__("pandas"), "NA", None):
        return ""
    if isinstance(v, float):
        return "" if v != v else (str(int(v)) if v.is_integer() else f"{v:g}")
    return str(v)


__all__ = ["register", "replay_command", "print_replay"]
