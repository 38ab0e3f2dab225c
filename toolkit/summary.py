"""Summary tables on stderr (rich). Ids, counts and times only: never prompt or response text."""
from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from .progress import stderr


def _relative(labels: list[str]) -> list[str]:
    """Paths relative to their common folder, so long absolute paths do not crowd the table."""
    import os

    try:
        root = os.path.commonpath([os.path.dirname(x) for x in labels]) if len(labels) > 1 else ""
    except ValueError:
        root = ""
    return [os.path.relpath(x, root) if root and x.startswith(root) else x for x in labels]


def print_triage(result) -> None:
    s = result.summary
    src = Table(title="Inputs: read = parsed + quarantined (per file)", title_justify="left")
    src.add_column("input", overflow="fold")
    src.add_column("format")
    for c in ("read", "parsed", "requests", "quarantined"):
        src.add_column(c, justify="right")
    names = _relative([str(r["label"]) for r in result.sources])
    for name, r in zip(names, result.sources):
        src.add_row(escape(name), r["format"], f"{r['read']:,}", f"{r['parsed']:,}", f"{r['requests']:,}",
                    f"[red]{r['quarantined']:,}[/]" if r["quarantined"] else "0")
    if len(result.sources) > 1:
        src.add_row("[bold]all inputs[/]", "", *(f"{sum(r[c] for r in result.sources):,}"
                                                 for c in ("read", "parsed", "requests", "quarantined")))
    stderr.print(src)

    settings: dict[tuple, int] = {}
    for r in result.sources:
        key = (r["format"], r["chosen_by"].split(" (")[0], r["source_tz"] or "-",
               r["served_model"] or "-", r["served_model_source"] or "-")
        settings[key] = settings.get(key, 0) + 1
    st = Table(title="How each input was read", title_justify="left")
    for c in ("files", "format", "chosen", "time zone", "served model", "model from"):
        st.add_column(c, overflow="fold")
    for (fmt, how, tz, model, model_src), n in settings.items():
        st.add_row(str(n), fmt, escape(how), tz, escape(model), escape(model_src))
    stderr.print(st)

    t = Table(title=f"Triage {s['incident']}: {s['rule']}", title_justify="left")
    t.add_column("count")
    t.add_column("value", justify="right")
    rows = [
        ("requests (all sources, merged)", s["requests_total"]),
        ("of the incident's model, inside the window", "not counted (columnar input read in place)"
         if s["in_scope"] is None else s["in_scope"]),
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
