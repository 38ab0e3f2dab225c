"""Times as the documents write them: aware UTC datetimes in, RFC 3339 (machine) or short prose (people) out."""
from __future__ import annotations

import datetime as dt
from typing import Any

UTC = dt.timezone.utc


def utc(v: Any) -> dt.datetime | None:
    """A DuckDB / ISO time as an aware UTC datetime (None stays None)."""
    if v is None:
        return None
    if isinstance(v, str):
        v = dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    if v.tzinfo is None:
        v = v.replace(tzinfo=UTC)
    return v.astimezone(UTC)


def iso(v: dt.datetime | None) -> str:
    """RFC 3339 UTC with a Z (the form every machine-readable field and table uses)."""
    if v is None:
        return ""
    v = v.astimezone(UTC)
    spec = "seconds" if v.microsecond == 0 else "microseconds"
    return v.isoformat(timespec=spec).replace("+00:00", "Z")


def minute(v: dt.datetime | None) -> str:
    """A time inside a sentence: '2026-08-27 01:52 UTC' (no seconds, no microseconds)."""
    if v is None:
        return "an unknown time"
    return v.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def span(first: dt.datetime | None, last: dt.datetime | None) -> str:
    """'2026-08-27 01:52 and 2026-09-09 14:24 UTC', to follow 'between' ('between A and B')."""
    if first is None or last is None:
        return "unknown times"
    a, b = first.astimezone(UTC), last.astimezone(UTC)
    return f"{a:%Y-%m-%d %H:%M} and {b:%Y-%m-%d %H:%M} UTC"
