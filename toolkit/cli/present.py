"""Summary tables on stderr (rich). Ids, counts and times only: never prompt or response text."""
from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from kvir.core.progress import stderr


def fail(e: Exception) -> None:
    """The one error path of every command: one line on stderr, exit status 2."""
    import typer

    stderr.print(f"[bold red]kvir:[/] {escape(str(e))}", highlight=False, markup=True, soft_wrap=True)
    raise typer.Exit(code=2)


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
        ("possibly affected (start known only to the hour, crossing a window edge)", s.get("possibly_affected", 0)),
        (f"other rule would add ({s['other_rule'].split(':')[0]})", s["other_rule_adds"]),
        (f"other rule would drop ({s['other_rule'].split(':')[0]})", s["other_rule_drops"]),
    ]
    for k, v in rows:
        t.add_row(k, f"{v:,}" if isinstance(v, int) else str(v))
    for source, n in (s.get("threshold_sources") or {}).items():
        t.add_row(f"  flagged requests judged by: {source}", f"{n:,}")
    t.add_row("first / last affected (UTC)", f"{s['first_affected'] or '-'} / {s['last_affected'] or '-'}")
    joined = sum(s.get(k) or 0 for k in ("join_matched", "join_missed", "join_ambiguous"))
    if joined:
        t.add_row(f"evidence joined by id or time (±{s.get('join_tolerance_s') or 0:g} s): matched / missed / ambiguous",
                  f"{s.get('join_matched') or 0:,} / {s.get('join_missed') or 0:,} / {s.get('join_ambiguous') or 0:,}")
    if s.get("aggregate_series"):
        t.add_row("[italic]aggregate finding (Prometheus histograms: bounds, not requests)[/]",
                  f"between {s['aggregate_lower']:,} and {s['aggregate_upper']:,}")
    stderr.print(t)
    if s.get("aggregate_series"):
        _print_aggregates(result)
    if joined:
        _print_joins(result)


def _print_aggregates(result) -> None:
    """The aggregate finding per histogram series: clearly labelled as bounds, never requests."""
    rows = result.case.con.execute(
        "SELECT source_file, metric, coalesce(model, '-'), lower, upper, threshold, basis FROM aggregate_findings "
        "ORDER BY source_id, metric, labels").fetchall()
    a = Table(title="Aggregate finding (not request-level evidence): requests above the threshold implied by "
                    "prompt-token histograms", title_justify="left")
    for c in ("scrape", "histogram", "model", "between", "and", "threshold", "over"):
        a.add_column(c, overflow="fold", justify="right" if c in ("between", "and") else "left")
    names = _relative([str(r[0]) for r in rows])
    for name, r in zip(names, rows):
        a.add_row(escape(name), escape(r[1]), escape(r[2]), f"{r[3]:,}", f"{r[4]:,}", r[5], escape(r[6]))
    stderr.print(a)


def _print_joins(result) -> None:
    """How candidates and gateway identities were joined to requests with counts (per source, by status)."""
    rows = result.case.con.execute(
        "SELECT s.label, e.pass, e.status, coalesce(e.method, '-'), count(*), any_value(e.tolerance_s) "
        "FROM evidence_joins AS e JOIN sources AS s USING (source_id) GROUP BY ALL ORDER BY 1, 2, 3, 4").fetchall()
    j = Table(title="Evidence joins (candidates and customer identities to requests with prompt lengths)",
              title_justify="left")
    for c in ("source", "pass", "status", "keys", "requests", "tolerance"):
        j.add_column(c, overflow="fold", justify="right" if c in ("requests", "tolerance") else "left")
    names = _relative([str(r[0]) for r in rows])
    for name, r in zip(names, rows):
        j.add_row(escape(name), r[1], r[2], r[3], f"{r[4]:,}", f"±{r[5]:g} s")
    stderr.print(j)
    stderr.print(f"case: {result.path}  (affected.csv, accounts.csv, nodes.csv, manifest.json)", highlight=False)


def print_formats() -> None:
    """The format list is the command's result: it goes to stdout."""
    from rich.console import Console

    from kvir.ingest.formats import FORMATS

    t = Table(title="Formats (`--format NAME`; auto sniffs content)", title_justify="left")
    for c in ("name", "what", "times", "needs", "evidence"):
        t.add_column(c, overflow="fold")
    evidence = {"counts": "prompt tokens", "candidates": "candidates (joined by id or time)",
                "aggregate": "aggregate bounds only"}
    for f in FORMATS.values():
        needs = ", ".join("--source-tz" if n == "source_tz" else "[sources.columns]" if n == "columns" else f"--{n}"
                          for n in f.needs) or "-"
        if f.options:
            needs += f"; optional: {f.options}"
        times = f.times + (" (UTC by definition: --source-tz not applied)" if f.times_utc else "")
        t.add_row(*(escape(x) for x in (f.name, f.title, times, needs, evidence.get(f.evidence, f.evidence))))
    Console(width=160).print(t)


def _short(text: str, n: int = 28) -> str:
    text = text.split(" (")[0]
    return text if len(text) <= n else text[: n - 1] + "…"
