"""`kvir confirm`'s summary on stderr: the verdicts, the responses that carried another tenant's content
(ids, tenants, overlap), needles found. Never a text, a needle or the key."""
from __future__ import annotations

from kvir.cli.present import Col, say, stderr, table
from kvir.confirm.read import VERDICTS, read_confirmation


def print_confirm(result) -> None:
    s = result.summary
    if result.key_created:
        say(f"created the key file (keep it apart from the case; later runs need it to compare): key "
            f"sha256 {s['key_sha256'][:16]}")
    c = read_confirmation(result.case)
    if c is None:
        return
    stderr.print(table(f"kvir confirm: {s['responses']} affected response(s), {s['texts']:,} text(s) read",
                       ("verdict", ("responses", "right")),
                       [[v, c.count(v)] for v in VERDICTS]))
    say(f"sources: {s['window']}; instance: {s['instance']}")
    rows = []
    for r in c.responses.values():
        best = r.sources[0] if r.sources else None
        rows.append([r.request_id, r.account_id, r.verdict,
                     (f"from {best.request_id} of {best.tenant}: overlap {best.overlap:.0%}, score {best.score:g}"
                      + (f" (+{len(r.sources) - 1} more)" if len(r.sources) > 1 else "")) if best else
                     (", ".join(r.corruption) if r.corruption else r.reason)])
    stderr.print(table("responses", ("request", "tenant", "verdict", Col("what was found", under=True)), rows,
                       limit=20, rest=str(result.case.path / "confirmations.csv")))
    for n in c.needles:
        say(f"{n.label}: in {n.responses} response(s)" + (f" of {', '.join(n.tenants)}" if n.tenants else "")
            + (f" ({', '.join(n.request_ids[:3])}{' ...' if len(n.request_ids) > 3 else ''})" if n.request_ids else ""))
    say("not confirmed is no proof of absence: a response's source may be a request whose text the sources do "
        "not hold (see candidates_with_text in confirmations.csv)")
    say(f"case: {result.case.path}  (confirmations, confirmation_sources, confirmation_accounts; confirmations.csv)")
