"""The one place that says what a source's time zone is.

The conversion itself runs in DuckDB (queries/macros.sql: kvir_local_to_utc, kvir_epoch_to_utc,
kvir_parse_ts); Python only validates the option and hands DuckDB an IANA name or a fixed offset.
"""
from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass

_OFFSET = re.compile(r"^(?:UTC|GMT)?\s*([+-])(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)


@dataclass(frozen=True)
class SourceTz:
    """Either an IANA zone (DST-aware) or a fixed offset in minutes east of UTC."""

    text: str
    iana: str | None
    offset_minutes: int | None

    @property
    def is_utc(self) -> bool:
        return self.offset_minutes == 0 and self.iana is None


def parse_source_tz(text: str) -> SourceTz:
    """`America/Chicago`, `UTC`, `Z`, `+02:00`, `-0530`, `UTC+2` -> SourceTz. Raises ValueError."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("expected a time zone: an IANA name such as Europe/Berlin or an offset such as +02:00")
    t = text.strip()
    if t.upper() in ("UTC", "Z", "GMT", "ETC/UTC"):
        return SourceTz(t, None, 0)
    m = _OFFSET.match(t)
    if m:
        sign, hh, mm = m.group(1), int(m.group(2)), int(m.group(3) or 0)
        if hh > 14 or mm >= 60:
            raise ValueError(f"{t!r} is not a valid UTC offset")
        minutes = (hh * 60 + mm) * (1 if sign == "+" else -1)
        return SourceTz(t, None, minutes)
    try:
        zoneinfo.ZoneInfo(t)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {t!r}: use an IANA name (e.g. America/Chicago) or an offset (+02:00)") from None
    return SourceTz(t, t, None)
