"""Summary tables on stderr (rich). Ids, counts and times only: never prompt or response text."""
from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from .progress import stderr


def print_triage(result) -> None:
    s = result.summary
    src = Table(title="Inputs: read = parsed + quarantined", title_justify="left")
    for c in ("source", "format", "chosen", "tz", "model", "read", "parsed", "requests", "quarantined"):
        src.add_column(c, justify="right" if c in ("read", "parsed", "requests", "quarantined") else "left",
                       overflow="fold")
    for r in result.sources:
        src.add_row(str(r["label"]), r["format"], _short(r["chosen_by"]), r["source_tz"] or "-",
                    f"{r['served_model'] or '-'}" + (" (assumed)" if (r["served_model_source"] or "").startswith("assumed") else ""),
                    f"{r['read']:,}", f"{r['parsed']:,}", f"{r['requests']:,}", f"{r['quarantined']:,}")
    stderr.print(src)
    for r in result.sources:
        for note in r.get("notes") or []:
            stderr.print(f"[yellow]note[/] {r['label']}: {note}", highlight=False)

    t = Table(title=f"Triage {s['incident']}: {s['rule']}", title_justify="left")
    t.add_column("count")
    t.add_column("value", justify="right")
    rows = [
        ("requests (all sources, merged)", s["requests_total"]),
        ("of the incident's model, inside the window", s["in_scope"]),
        ("[bold]affected responses[/]", s["affected"]),
        ("  accounts (known)", s["affected_accounts"]),
        ("  of which unknown account (engine logs)", s["affected_unknown_account"]),
        ("  of which labelled accounts", s["affected_labelled"]),
        ("excluded accounts' affected responses", s["excluded"]),
        ("rejected correctly (4xx / abort 400)", s["rejected"]),
        ("failed (5xx)", s["failed"]),
        ("aborted by the client", s["aborted"]),
        ("undecidable (field missing)", s["undecidable"]),
        (f"other rule would add ({s['other_rule'].split(':')[0]})", s["other_rule_adds"]),
        (f"other rule would drop ({s['other_rule'].split(':')[0]})", s["other_rule_drops"]),
    ]
    for k, v in rows:
        t.add_row(k, f"{v:,}" if isinstance(v, int) else str(v))
    t.add_row("first / last affected (UTC)", f"{s['first_affected'] or '-'} / {s['last_affected'] or '-'}")
    stderr.print(t)
    stderr.print(f"case: {result.path}  (affected.csv, accounts.csv, nodes.csv, manifest.json)", highlight=False)


def print_formats() -> None:
    """The format list is the command's result: it goes to stdout."""
    from rich.console import Console

    from .formats import FORMATS

    t = Table(title="Formats (`--format NAME`; auto sniffs content)", title_justify="left")
    for c in ("name", "what", "times", "needs", "evidence"):
        t.add_column(c, overflow="fold")
    for f in FORMATS.values():
        needs = ", ".join("--source-tz" if n == "source_tz" else "[sources.columns]" if n == "columns" else f"--{n}"
                          for n in f.needs) or "-"
        t.add_row(*(escape(x) for x in (f.name, f.title, f.times, needs,
                                        "prompt tokens" if f.evidence == "counts" else "candidates only")))
    Console(width=160).print(t)


def _short(text: str, n: int = 28) -> str:
    text = text.split(" (")[0]
    return text if len(text) <= n else text[: n - 1] + "…"
