"""Per-source settings beyond the basics: what some formats need to place their times.

    file_name         the file's base name (the metrics export's hour lives there)
    window_start/end  the incident window (year-less vLLM stamps take the year nearest to it)
    max_log_len       vLLM's --max-log-len from the log's start-up arguments (its token-id lists are cut to it)
    tz_spans          for a source in an IANA zone: the spans of local time, within the window and
                      WINDOW_MARGIN either side, over which the zone's UTC offset stays the same (hours
                      near a DST transition are left out), at most MAX_SEGMENTS (the ones nearest the
                      window), as one STRUCT (lo1, hi1, off1, ..., lo4, hi4, off4). queries/macros.sql
                      (kvir_local_ts_to_utc) converts a time inside a span with one subtraction and
                      everything else through the exact per-row path.
"""
from __future__ import annotations

import datetime as dt
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from kvir.case.store import Case
    from kvir.ingest.sources import Source

WINDOW_MARGIN = dt.timedelta(days=61)
MAX_HOURS = 24 * 800

MAX_SEGMENTS = 4

EXTRA_COLUMNS = (
    ("file_name", "VARCHAR"),
    ("window_start", "TIMESTAMPTZ"),
    ("window_end", "TIMESTAMPTZ"),
    ("max_log_len", "INTEGER"),
    ("tz_spans", "STRUCT(lo1 TIMESTAMP, hi1 TIMESTAMP, off1 INTEGER, ..., lo4, hi4, off4)"),
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

    from kvir.core.sql import run

    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        run(con, "macros")
        return con.execute("SELECT kvir_hour_offsets($tz, $h0::TIMESTAMP, $n)", {"tz": tz, "h0": h0, "n": n}).fetchone()[0]
    finally:
        con.close()


def tz_segments(tz: str, window: tuple[dt.datetime, dt.datetime] | None) -> list[dict] | None:
    """Run-length encoded hour offsets: [{lo, hi, off}] spans of local time with one offset, sorted; the
    MAX_SEGMENTS spans nearest the window when there are more."""
    segs = _tz_segments(tz, window)
    return None if segs is None else [dict(s) for s in segs]


@lru_cache(maxsize=64)
def _tz_segments(tz: str, window: tuple[dt.datetime, dt.datetime] | None) -> tuple | None:
    rng = hour_range(window)
    if rng is None:
        return None
    h0, n = rng
    spans: list[dict] = []
    for i, off in enumerate(hour_offsets(tz, h0, n)):
        t = h0 + dt.timedelta(hours=i)
        if spans and spans[-1]["off"] == off and spans[-1]["hi"] == t:
            spans[-1]["hi"] = t + dt.timedelta(hours=1)
        else:
            spans.append({"lo": t, "hi": t + dt.timedelta(hours=1), "off": off})
    stable = [s for s in spans if s["off"] is not None]
    if len(stable) > MAX_SEGMENTS and window is not None:
        mid = window[0].astimezone(dt.timezone.utc).replace(tzinfo=None) + (window[1] - window[0]) / 2
        stable = sorted(sorted(stable, key=lambda s: abs((s["lo"] + (s["hi"] - s["lo"]) / 2) - mid))[:MAX_SEGMENTS],
                        key=lambda s: s["lo"])
    return tuple(tuple(s.items()) for s in stable)


def extra_settings(src: "Source") -> dict:
    """The extra columns of the source's settings row (queries/case/evidence_tables.sql adds them)."""
    window = getattr(src, "window", None)
    segs = tz_segments(src.tz.iana, window) if src.tz is not None and src.tz.iana else None
    return {"file_name": src.paths[0].name, "window_start": window[0] if window else None,
            "window_end": window[1] if window else None, "tz_spans": spans_struct(segs),
            "max_log_len": getattr(src, "max_log_len", None)}


def spans_struct(segs: list[dict] | None) -> dict | None:
    """The settings' tz_spans value: spans 1..MAX_SEGMENTS as flat fields (unused spans are empty)."""
    if segs is None:
        return None
    out: dict = {}
    for i in range(MAX_SEGMENTS):
        s = segs[i] if i < len(segs) else {"lo": None, "hi": None, "off": None}
        out.update({f"lo{i + 1}": s["lo"], f"hi{i + 1}": s["hi"], f"off{i + 1}": s["off"]})
    return out
