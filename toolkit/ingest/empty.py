"""A source that yields no request is named, never a silent 0 (issue 36 item 9).

An export of records (OTLP spans, traces, a gateway's or proxy's records: the `records` and mapped readers)
exists to hold requests: if every record of it was counted as something else (spans of an instrumentation
whose attributes the format does not read, records of another format), the file was not understood, and a
triage that went on would say "0 affected" about it. Each such input is named, with what its records were, in
one error for all of them (exit 2). A text log (the `lines` reader: an engine's or a proxy's server log) may
rightly hold no request line (a node whose request logging is off, start-up lines only): it gets a note on its
source (sources.csv, the summary's notes on inputs) that says so, with what its lines were. A source with
quarantined records is neither refused nor noted here: the quarantine names every record and why. Formats
whose evidence is an aggregate (Prometheus) never yield requests and are not checked."""
from __future__ import annotations

from typing import TYPE_CHECKING

from kvir.core.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from kvir.case.store import Case
    from kvir.ingest.sources import Source

_SHOWN = 3      # reasons named per file


def _what(read: int, why: list[str], ns: list[int]) -> str:
    shown = "; ".join(f"{n:,} {r}" for r, n in zip(why[:_SHOWN], ns[:_SHOWN]))
    more = f"; and {len(why) - _SHOWN} more reasons" if len(why) > _SHOWN else ""
    return f"all {read:,} records were counted as something else ({shown}{more})"


def refuse_sources_without_requests(case: "Case", sources: list["Source"]) -> None:
    """Raise one InputError naming every export whose records are all counted, none a request; note each such
    text log on its source."""
    checked = {s.source_id: s for s in sources if s.format.evidence != "aggregate"}
    if not checked:
        return
    rows = case.con.execute(
        "SELECT source_id, sum(n) AS read, list(reason ORDER BY n DESC, reason) FILTER (WHERE kind = 'skip') AS why, "
        "list(n ORDER BY n DESC, reason) FILTER (WHERE kind = 'skip') AS ns FROM source_counts "
        "WHERE list_contains($ids, source_id) GROUP BY source_id "
        "HAVING count(*) FILTER (WHERE kind <> 'skip') = 0 AND sum(n) > 0 ORDER BY source_id",
        {"ids": sorted(checked)}).fetchall()
    problems = []
    for sid, read, why, ns in rows:
        src = checked[sid]
        if src.format.reader == "lines":
            src.notes.append(f"holds no request as {src.format.name}: " + _what(read, why, ns).replace("records", "lines"))
            continue
        problems.append(InputError(
            f"yields no request as {src.format.name} ({src.chosen_by}): {_what(read, why, ns)}", path=src.label,
            hint="name its format (--format, or format in [[sources]]), or leave out a file that holds no requests"))
    if problems:
        from kvir.ingest.sources import refusal

        raise refusal(problems)
