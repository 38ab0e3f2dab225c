"""Per-source settings beyond the basics: what some formats need to place their times.

    file_name         the file's base name (the metrics export's hour lives there)
    window_start/end  the incident window (year-less vLLM stamps take the year nearest to it)
    tz_hour0, tz_hour_offsets
                      the UTC offset in force for every local hour from tz_hour0 on, covering the window
                      and WINDOW_MARGIN either side (queries/macros.sql: kvir_hour_offsets); adapters
                      convert through kvir_local_to_utc_h, which falls back to the exact per-row path
                      outside that range and near DST transitions
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
    ("tz_hour0", "TIMESTAMP"),
    ("tz_hour_offsets", "INTEGER[]"),
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
    """Fill the extra columns of the source's settings row (created by queries/case/evidence_tables.sql)."""
    window = getattr(src, "window", None)
    rng = hour_range(window) if src.tz is not None and src.tz.iana else None
    offsets = hour_offsets(src.tz.iana, rng[0], rng[1]) if rng and src.tz and src.tz.iana else None
    case.con.execute(
        "UPDATE source_settings SET file_name = $f, window_start = $ws, window_end = $we, tz_hour0 = $h0, "
        "tz_hour_offsets = $offs WHERE source_id = $id",
        {"f": src.paths[0].name, "ws": window[0] if window else None, "we": window[1] if window else None,
         "h0": rng[0] if rng else None, "offs": offsets, "id": src.source_id})
