"""Per-source settings beyond the basics: what some formats need to place their times.

    file_name         the file's base name (the metrics export's hour lives there)
    window_start/end  the incident window (year-less vLLM stamps take the year nearest to it)

and, per zone, the table tz_hours (zone, local hour, offset): the UTC offset in force for every local
hour of the window and WINDOW_MARGIN either side (queries/macros.sql: kvir_hour_offsets). Adapters join
it on the local hour of each time and convert with kvir_local_to_utc_o, which falls back to the exact
per-row path outside that range and near DST transitions.
"""
from __future__ import annotations

import datetime as dt
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..case import Case
    from ..ingest import Source

WINDOW_MARGIN = dt.timedelta(days=61)
MAX_HOURS = 24 * 800

EXTRA_COLUMNS = (
    ("file_name", "VARCHAR"),
    ("window_start", "TIMESTAMPTZ"),
    ("window_end", "TIMESTAMPTZ"),
)


def hour_range(window: tuple[dt.datetime, dt.datetime] | None) -> tuple[dt.datetime, int] | None:
    """(first local hour, number of hours) the hour table covers, or None without a window."""
    if window is None:
        return None
    start = (window[0] - WINDOW_MARGIN).astimezone(dt.timezone.utc).replace(tzinfo=None, minute=0, second=0,
                                                                            microsecond=0)
    end = (window[1] + WINDOW_MARGIN).astimezone(dt.timezone.utc).replace(tzinfo=None)
    n = int((end - start).total_seconds() // 3600) + 1
    return start, min(n, MAX_HOURS)


@lru_cache(maxsize=64)
def hour_offsets(tz: str, h0: dt.datetime, n: int) -> list[int | None]:
    """The zone's offset (minutes) per local hour: computed once per zone and range, by the macro."""
    import duckdb

    from ..sql import run

    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        run(con, "macros")
        return con.execute("SELECT kvir_hour_offsets($tz, $h0::TIMESTAMP, $n)", {"tz": tz, "h0": h0, "n": n}).fetchone()[0]
    finally:
        con.close()


def write_extra_settings(case: "Case", src: "Source") -> None:
    """Fill the extra columns of the source's settings row (queries/case/evidence_tables.sql adds them), and
    the zone's rows of tz_hours the first time a source in that zone is seen."""
    window = getattr(src, "window", None)
    case.con.execute(
        "UPDATE source_settings SET file_name = $f, window_start = $ws, window_end = $we WHERE source_id = $id",
        {"f": src.paths[0].name, "ws": window[0] if window else None, "we": window[1] if window else None,
         "id": src.source_id})
    tz = src.tz.iana if src.tz is not None else None
    rng = hour_range(window)
    if tz is None or rng is None:
        return
    if case.con.execute("SELECT count(*) FROM tz_hours WHERE tz = $tz", {"tz": tz}).fetchall()[0][0]:
        return
    offsets = hour_offsets(tz, rng[0], rng[1])
    case.con.execute(
        "INSERT INTO tz_hours SELECT $tz, $h0::TIMESTAMP + to_hours(CAST(u.i - 1 AS BIGINT)), u.off "
        "FROM unnest($offs::INTEGER[]) WITH ORDINALITY AS u(off, i)", {"tz": tz, "h0": rng[0], "offs": offsets})
