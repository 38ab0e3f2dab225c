"""`kvir triage`'s summary on stderr: inputs (read = parsed + quarantined), how each was read, the counts.

Ids, counts and times only: never prompt or response text. Paths are shown relative to their common folder."""
from __future__ import annotations

import os

from kvir.cli.present import Col, say, stderr, table
from kvir.ingest.formats import FORMATS


def relative(labels: list[str]) -> list[str]:
    """Paths relative to their common folder, so long absolute paths do not crowd the table."""
    try:
        root = os.path.commonpath([os.path.dirname(x) for x in labels]) if len(labels) > 1 else ""
    except ValueError:
        root = ""
    return [os.path.relpath(x, root) if root and x.startswith(root) else x for x in labels]


def zone_shown(source: dict) -> str:
    """The zone a source's times were read in: the host zone given for naive local times, "UTC (by format)"
    where the format's naive times are UTC by definition, "UTC (from the records)" where every time carries
    its offset or is an epoch number (a --source-tz given for other files does not apply to it)."""
    fmt = FORMATS.get(source["format"])
    if fmt is None or "source_tz" in fmt.needs or fmt.name.startswith("generic"):
        return source["source_tz"] or "-"
    return "UTC (by format)" if fmt.times_utc else "UTC (from the records)"


MAX_INPUT_ROWS = 12     # more inputs than this: those with quarantined records, then one row per format


def input_rows(sources: list[dict], cols: tuple[str, ...]) -> list[list]:
    """Per input: name, format and counts; past MAX_INPUT_ROWS inputs, the ones with quarantined records
    (up to that many) and then one row per format for the rest, so the rows still add up to "all inputs"."""
    names = relative([str(r["label"]) for r in sources])
    if len(sources) <= MAX_INPUT_ROWS:
        rows = [[name, r["format"], *(r[c] for c in cols)] for name, r in zip(names, sources)]
    else:
        bad = [i for i, r in enumerate(sources) if r["quarantined"]][:MAX_INPUT_ROWS]
        rows = [[names[i], sources[i]["format"], *(sources[i][c] for c in cols)] for i in bad]
        rest: dict[str, list[dict]] = {}
        for i, r in enumerate(sources):
            if i not in bad:
                rest.setdefault(r["format"], []).append(r)
        rows += [[f"{len(rs):,} {'more ' if bad else ''}input(s)", fmt, *(sum(r[c] for r in rs) for c in cols)]
                 for fmt, rs in rest.items()]
    if len(sources) > 1:
        rows.append(["all inputs", "", *(sum(r[c] for r in sources) for c in cols)])
    return rows


def print_inputs(sources: list[dict]) -> None:
    """Inputs: read = parsed + quarantined, per file (sources.csv holds every one)."""
    cols = ("read", "parsed", "requests", "quarantined")
    title = "Inputs: read = parsed + quarantined (per file" + ("; every file in sources.csv)"
                                                                 if len(sources) > MAX_INPUT_ROWS else ")")
    stderr.print(table(title, ["input", Col("format", below=True), *(Col(c, right=True) for c in cols)],
                       input_rows(sources, cols)))


def utc_text(value) -> str:
    """A summary time ('2026-08-27T01:52:09+00:00') as the tables write times: 2026-08-27 01:52:09Z."""
    return "-" if not value else str(value).replace("T", " ").replace("+00:00", "Z")


def print_triage(result) -> None:
    """The inputs and how each was read, the serving engine, then the headline: the counts every mechanism
    has, the mechanism's own (its triage part's), the times, joins and aggregate finding; then its tables."""
    from kvir.triage.plugin import triage_part

    s = result.summary
    print_reading(result)
    eng = s.get("serving_engine") or {}
    if eng:
        say(f"serving engine: {eng.get('engine')} ({eng.get('source')})")
    note = (s.get("models_seen") or {}).get("note")
    if note:
        say(f"warning: models: {note}")
    part = triage_part(result.spec.mechanism)
    shown = part.present(s, result.mechanism_summary)
    rows = [
        ("requests (all sources, merged)", s["requests_total"]),
        ("input files skipped (empty, special, unreadable)", s.get("inputs_skipped", 0)),
        ("of the incident's model, inside the window", "not counted (columnar input read in place)"
         if s["in_scope"] is None else s["in_scope"]),
        *shown.rows,
        ("first affected (UTC)", utc_text(s["first_affected"])),
        ("last affected (UTC)", utc_text(s["last_affected"])),
        *_join_rows(s),
    ]
    if s.get("aggregate_series"):
        rows.append(("aggregate finding (Prometheus histograms: bounds, not requests)",
                     f"between {s['aggregate_lower']:,} and {s['aggregate_upper']:,}"))
    stderr.print(table(f"Triage {s['incident']}: {s['rule']}", (Col("count", wrap=True), Col("value", right=True)), rows))
    for t in shown.tables:
        stderr.print(table(t.title, t.columns, t.rows, limit=2 * MAX_INPUT_ROWS if t.rest else None, rest=t.rest))
    if s.get("aggregate_series"):
        _print_aggregates(result)
    if any(s.get(k) for k in ("join_matched", "join_unmatched", "join_ambiguous")):
        _print_joins(result)
    files = ["affected.csv", "accounts.csv", "nodes.csv", *(f"{x}.csv" for x in part.exports), "manifest.json"]
    say(f"case: {result.path}  ({', '.join(files)})")


def print_reading(result) -> None:
    """How the inputs were read: per file, the files skipped, the settings each format was read with, and
    the notes on inputs."""
    sources = result.sources
    print_inputs(sources)
    skipped = result.case.con.execute("SELECT path, reason FROM skipped_inputs ORDER BY path").fetchall()
    if skipped:
        stderr.print(table(f"Skipped: {len(skipped)} file(s) that cannot be inputs (skipped.csv)",
                           ("file", Col("reason", under=True)),
                           [[name, reason] for name, (_, reason) in zip(relative([p for p, _ in skipped]), skipped)],
                           limit=MAX_INPUT_ROWS, rest="skipped.csv"))
    settings: dict[tuple, int] = {}
    for r in sources:
        key = (r["format"], r["chosen_by"].split(" (")[0], zone_shown(r), r["served_model"] or "-",
               r["served_model_source"] or "-")
        settings[key] = settings.get(key, 0) + 1
    stderr.print(table("How each input was read",
                       ("format", Col("files", right=True), Col("chosen", below=True), Col("time zone", wrap=True),
                        "served model", Col("model from", below=True)),
                       [[key[0], n, *key[1:]] for key, n in settings.items()]))
    noted = [(name, note) for name, r in zip(relative([str(r["label"]) for r in sources]), sources)
             for note in (r.get("notes") or [])]
    if noted:
        stderr.print(table("Notes on inputs (sources.csv)", ("input", Col("note", under=True)), [list(x) for x in noted]))


def _join_rows(s: dict) -> list[tuple[str, object]]:
    """How evidence without a shared request id was joined (none: no rows)."""
    if not sum(s.get(k) or 0 for k in ("join_matched", "join_unmatched", "join_ambiguous")):
        return []
    rows: list[tuple[str, object]] = [
        (f"joined by id or ±{s.get('join_tolerance_s') or 0:g} s: matched / ambiguous / unmatched",
         f"{s.get('join_matched') or 0:,} / {s.get('join_ambiguous') or 0:,} / {s.get('join_unmatched') or 0:,}"),
        ("  ambiguous, held by another source: not counted again", s.get("join_ambiguous_held") or 0)]
    skew = s.get("join_id_delta_s")
    if skew is not None and abs(skew) > (s.get("join_tolerance_s") or 0):
        rows.append(("  id-joined records lie apart in time: a zone (--source-tz) is wrong?", f"{skew / 3600:+.2f} h"))
    return rows


def _print_aggregates(result) -> None:
    """The aggregate finding per histogram series: clearly labelled as bounds, never requests."""
    rows = result.case.con.execute(
        "SELECT source_file, metric, coalesce(model, '-'), lower, upper, threshold, basis FROM aggregate_findings "
        "ORDER BY source_id, metric, labels").fetchall()
    names = relative([str(r[0]) for r in rows])
    stderr.print(table("Aggregate finding (not request-level evidence): requests above the threshold implied by "
                       "prompt-token histograms",
                       ("scrape", Col("histogram", below=True), Col("model", below=True), ("between", "right"),
                        ("and", "right"), Col("threshold", below=True), Col("over", below=True)),
                       [[name, *r[1:]] for name, r in zip(names, rows)]))


def _print_joins(result) -> None:
    """How candidates and gateway identities were joined to the requests other sources hold (per source, by
    status), and how many of the records stay requests of their own."""
    rows = result.case.con.execute(
        "SELECT s.label, e.pass, e.status, coalesce(e.method, '-'), count(*), count(*) FILTER (WHERE e.counted), "
        "any_value(e.tolerance_s) FROM evidence_joins AS e JOIN sources AS s USING (source_id) "
        "GROUP BY ALL ORDER BY 1, 2, 3, 4").fetchall()
    names = relative([str(r[0]) for r in rows])
    stderr.print(table("Evidence joins (evidence_joins.csv; own: records that stay requests of their own)",
                       ("source", "pass", "status", "keys", ("records", "right"), ("own", "right"),
                        ("tolerance", "right")),
                       [[name, r[1], r[2], r[3], r[4], r[5], f"±{r[6]:g} s"] for name, r in zip(names, rows)],
                       limit=2 * MAX_INPUT_ROWS, rest="evidence_joins.csv"))


def print_carried(result) -> None:
    """What a case triaged again kept of its previous state and what it lost, and why (also with --quiet:
    results of other stages going away is never silent)."""
    for what in result.carried.kept:
        say(f"kept from the previous case: {what}")
    for r in result.carried.removed:
        say(f"removed from the previous case: {r['what']}: {r['why']}", style="yellow")
