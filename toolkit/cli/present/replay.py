"""`kvir replay`'s summary on stderr: verdicts, responses, whose data reached whom.

Leaked token ids (synthetic stand-ins for text) only with --show-text."""
from __future__ import annotations

from kvir.cli.present import Col, say, show, stderr, table


def print_replay(run, *, show_text: bool = False) -> None:
    from kvir.replay.plugin import replay_part
    from kvir.replay.results import VERDICTS

    s = run.summary
    note = "full size" if s["scale"] == 1 else f"full size, attention scale {s['scale']:g}"
    builds = sorted(s.get("builds", {}))
    stderr.print(table(f"kvir replay: {s['replayed']} affected response(s), {note}, {s['device']}",
                       ("verdict", *[(b, "right") for b in builds]),
                       [[v, *[s["builds"][b].get(v, 0) for b in builds]] for v in VERDICTS
                        if any(s["builds"][b].get(v, 0) for b in builds)]))
    r = run.results
    if len(r):
        rows = []
        for row in r.itertuples(index=False):
            owners = list(row.foreign_owners) if hasattr(row.foreign_owners, "__len__") else []
            top = owners[0] if owners else None
            basis = getattr(row, "build_basis", None)
            rows.append([row.request_id, row.build + (f" ({basis})" if row.build_role == "incident" and basis else ""),
                         row.verdict, show(row.http_status), _reading(row, owners, top)])
        legend = replay_part(run.mechanism.name).basis_legend
        stderr.print(table(f"responses per build ({legend}, see below)",
                           ("request", "build", "verdict", Col("HTTP", right=True), Col("what it read", under=True)),
                           rows))
        why = {}
        for row in r.itertuples(index=False):
            if row.build_role != "incident":
                continue
            if row.verdict == "inconclusive":
                why.setdefault(f"inconclusive: {row.reason}", []).append(row.request_id)
            elif getattr(row, "build_basis", None) == "assumed":
                why.setdefault(f"build assumed: {row.build_source}", []).append(row.request_id)
        for text, ids in why.items():
            say(f"{len(ids)} response(s) {text} ({', '.join(ids[:3])}{' ...' if len(ids) > 3 else ''})")
        if show_text:
            for row in r.itertuples(index=False):
                toks = row.response_tokens
                if toks is not None and hasattr(toks, "__len__"):
                    say(f"{row.request_id} ({row.build}): response token ids {list(toks)}")
    src = run.case.run("replay/sources_by_account", fetch="df")
    if len(src):
        stderr.print(table("whose data reached whom (source accounts, under the build each response ran)",
                           ("source account", ("source requests", "right"), ("responses reached", "right"),
                            ("reader accounts", "right"), ("tokens", "right")),
                           [[row.source_account_id if show(row.source_account_id) != "-" else "(unknown)",
                             row.source_requests, row.reader_responses, row.reader_accounts, int(row.tokens)]
                            for row in src.itertuples(index=False)]))
    say(f"case: {run.case.path}  (replay_results, replay_exposure; replay_exposure.csv)")


def _reading(row, owners: list, top) -> str:
    """Under a response's row: its account, the stage it ended in, and whose KV it read."""
    text = f"account {show(row.account_id)}; stage {show(row.stage)}; "
    if not owners:
        return text + "no foreign KV read"
    return text + (f"{int(row.leaked_tokens):,} foreign token(s) from {len(owners):,} request(s), "
                   f"most from account {show(top['account_id'])}")
