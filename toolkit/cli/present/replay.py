"""`kvir replay`'s summary on stderr: verdicts, responses, whose data reached whom.

Leaked token ids (synthetic stand-ins for text) only with --show-text."""
from __future__ import annotations

from kvir.cli.present import say, show, stderr, table


def print_replay(run, *, show_text: bool = False) -> None:
    from kvir.replay import queries

    s = run.summary
    note = f"scale {s['scale']:g}" + (" (every length shrunk)" if s["scale"] != 1 else " (full size)")
    stderr.print(table(f"kvir replay: {s['replayed']} affected response(s), {note}, {s['device']}",
                       ("verdict", ("responses", "right")),
                       [[v, s[v.replace("-", "_")]] for v in ("exposed", "rejected-by-patch", "not-reproduced",
                                                              "inconclusive")]))
    r = run.results
    if len(r):
        rows = []
        for row in r.itertuples(index=False):
            owners = list(row.foreign_owners) if hasattr(row.foreign_owners, "__len__") else []
            top = owners[0] if owners else None
            rows.append([row.request_id, row.account_id, row.verdict,
                         f"{show(row.unpatched_status)} -> {show(row.patched_status)}", len(owners),
                         row.leaked_tokens, top["account_id"] if top else ""])
        stderr.print(table("responses (unpatched -> patched HTTP status)",
                           ("request", "account", "verdict", "status", "foreign requests", "foreign tokens",
                            "top source account"), rows))
        if show_text:
            for row in r.itertuples(index=False):
                toks = row.response_tokens
                if toks is not None and hasattr(toks, "__len__"):
                    say(f"{row.request_id}: response token ids {list(toks)}")
    src = queries.run(run.case, "sources_by_account")
    if len(src):
        stderr.print(table("whose data reached whom (source accounts)",
                           ("source account", ("source requests", "right"), ("responses reached", "right"),
                            ("reader accounts", "right"), ("tokens", "right")),
                           [[row.source_account_id if show(row.source_account_id) != "-" else "(unknown)",
                             row.source_requests, row.reader_responses, row.reader_accounts, int(row.tokens)]
                            for row in src.itertuples(index=False)]))
    say(f"case: {run.case.path}  (replay_results, replay_exposure; replay_exposure.csv)")
