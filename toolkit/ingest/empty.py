"""A source that yields no request is an error naming it, never a silent 0 (issue 36 item 9).

A file read in a format whose every record was counted as something else (OTLP spans of an instrumentation
whose attributes the format does not read, a log of another format, a server's start-up lines only) holds no
request kvir could judge: a triage that went on would say "0 affected" about a file it never understood.
So each such input is named, with what its records were, in one error for all of them (exit 2). A source
with quarantined records is not refused here: the quarantine names every record and why. Formats whose
evidence is an aggregate (Prometheus) never yield requests and are not checked."""
from __future__ import annotations

from typing import TYPE_CHECKING

from kvir.core.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from kvir.case.store import Case
    from kvir.ingest.sources import Source

_SHOWN = 3      # reasons named per file


def refuse_sources_without_requests(case: "Case", sources: list["Source"]) -> None:
    """Raise one InputError naming every source whose records are all counted, none a request."""
    checked = {s.source_id: s for s in sources if s.format.evidence != "aggregate"}
    if not checked:
        return
    rows = case.con.execute(
        "SELECT source_id, sum(n) AS read, list(reason ORDER BY n DESC, reason) FILTER (WHERE kind = 'skip') AS why, "
        "list(n ORDER BY n DESC, reason) FILTER (WHERE kind = 'skip') AS ns FROM source_counts "
        "WHERE list_contains($ids, source_id) GROUP BY source_id "
        "HAVING count(*) FILTER (WHERE kind <> 'skip') = 0 AND sum(n) > 0 ORDER BY source_id",
        {"ids": sorted(checked)}).fetchall()
    if not rows:
        return
    from kvir.ingest.sources import refusal

    problems = []
    for sid, read, why, ns in rows:
        src = checked[sid]
        shown = "; ".join(f"{n:,} {r}" for r, n in zip(why[:_SHOWN], ns[:_SHOWN]))
        more = f"; and {len(why) - _SHOWN} more reasons" if len(why) > _SHOWN else ""
        problems.append(InputError(
            f"yields no request as {src.format.name} ({src.chosen_by}): all {read:,} records were counted as "
            f"something else ({shown}{more})", path=src.label,
            hint="name its format (--format, or format in [[sources]]), or leave out a file that holds no requests"))
    raise refusal(problems)
