"""A record that names no customer says so: for each source of a format that names customers, how many of its
requests name none becomes a note on the source (sources.csv, the triage summary), with where the format
looks for one. The account is then unknown, never an empty string."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from kvir.case.store import Case
    from kvir.ingest.sources import Source


def note_unnamed_accounts(case: "Case", sources: list["Source"]) -> None:
    """Append the note to the sources whose requests name no account (records_text: one aggregate)."""
    named = {s.source_id: s for s in sources if s.format.names_customers and not s.is_view}
    if not named:
        return
    rows = case.con.execute(
        "SELECT source_id, count(*) FILTER (WHERE account_id IS NULL), count(*) FROM records_text "
        "WHERE kind = 'request' AND list_contains($ids, source_id) GROUP BY source_id ORDER BY source_id",
        {"ids": sorted(named)}).fetchall()
    for sid, unnamed, total in rows:
        if not unnamed:
            continue
        fmt = named[sid].format
        where = f" ({fmt.accounts_from})" if fmt.accounts_from else ""
        note = f"{unnamed:,} of {total:,} requests name no account{where}: their account is unknown"
        case.con.execute("UPDATE sources SET notes = list_append(coalesce(notes, []), $note) WHERE source_id = $sid",
                         {"note": note, "sid": sid})
