"""The one place times become UTC (queries/macros.sql): epoch units, zones, DST, year-less stamps, the hour table."""
from __future__ import annotations

import datetime as dt
import zoneinfo

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvir.ingest.settings import hour_offsets, spans_struct, tz_segments
from kvir.core.sql import run

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 8, 27, tzinfo=UTC)            # 1787788800 s


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    c.execute("SET TimeZone = 'UTC'")
    run(c, "macros")
    yield c
    c.close()


def parse(con, s, tz=None, off=None):
    return con.execute("SELECT kvir_parse_ts($s, $tz, $off), kvir_ts_problem($s, kvir_parse_ts($s, $tz, $off), $tz, $off)",
                       {"s": s, "tz": tz, "off": off}).fetchone()


@pytest.mark.parametrize("text", [
    "1787788800", "1787788800.0", "1787788800000", "1787788800000000", "1787788800000000000",   # s, ms, us, ns
    " 1787788800000 ", "2026-08-27T00:00:00Z", "2026-08-27T02:00:00+02:00", "2026-08-26T19:00:00-0500",
    "2026-08-27 00:00:00 UTC"])
def test_every_unit_and_offset_lands_on_the_same_instant(con, text):
    assert parse(con, text) == (T0, None)


def test_epoch_numbers_and_strings_alike(con):
    for v in (1787788800, 1787788800123, 1787788800123456, 1787788800123456789):
        got = con.execute("SELECT kvir_parse_ts(CAST($v AS VARCHAR), NULL, NULL), kvir_epoch_to_utc($v)", {"v": v}).fetchone()
        assert got[0] == got[1] and got[0].replace(microsecond=0) == T0


@pytest.mark.parametrize("text", ["1788", "0", "5000000000", "4102444800000000000", "-1787788800"])
def test_implausible_epochs_are_refused_with_a_reason(con, text):
    ts, why = parse(con, text)
    assert ts is None and why.startswith(("implausible epoch time", "unparseable timestamp"))


def test_naive_times_need_a_zone_and_dst_is_refused_not_guessed(con):
    assert parse(con, "2026-08-27T00:00:00") == (None, "naive timestamp: no source time zone (--source-tz)")
    assert parse(con, "2026-08-26 19:00:00", "America/Chicago") == (T0, None)
    assert parse(con, "2026-08-27T02:00:00", None, 120) == (T0, None)
    ts, why = parse(con, "2026-11-01 01:30:00", "America/Chicago")
    assert ts is None and why == "ambiguous local time (DST fold in America/Chicago)"
    ts, why = parse(con, "2026-03-08 02:30:00", "America/Chicago")
    assert ts is None and why == "nonexistent local time (DST gap in America/Chicago)"
    assert parse(con, "2026-08-27T00:00:00", None, None)[0] is None


@pytest.mark.parametrize("stamp, year, window, want", [
    ("09-01 12:00:00", None, ("2026-08-27", "2026-09-09"), dt.datetime(2026, 9, 1, 12)),
    ("09-01 12:00:00", 2025, ("2026-08-27", "2026-09-09"), dt.datetime(2025, 9, 1, 12)),
    # a window across New Year: December stamps belong to the old year, January ones to the new
    ("12-31 23:00:00", None, ("2026-12-30", "2027-01-02"), dt.datetime(2026, 12, 31, 23)),
    ("01-01 01:00:00", None, ("2026-12-30", "2027-01-02"), dt.datetime(2027, 1, 1, 1)),
    # outside the window: the nearest year (2026-03-01 is 179 days before, 2027-03-01 is 173 days after)
    ("03-01 00:00:00", None, ("2026-08-27", "2026-09-09"), dt.datetime(2027, 3, 1)),
])
def test_yearless_stamps_take_the_year_nearest_the_window(con, stamp, year, window, want):
    ws, we = (dt.datetime.fromisoformat(w).replace(tzinfo=UTC) for w in window)
    got = con.execute("SELECT kvir_yearless_ts($m, $y, $ws, $we)", {"m": stamp, "y": year, "ws": ws, "we": we}).fetchone()[0]
    assert got == want


@pytest.mark.parametrize("stamp, year, window, why", [
    ("02-29 00:00:00", None, ("2026-08-27", "2026-09-09"), "not a valid date near the window"),
    ("02-29 00:00:00", 2026, ("2026-08-27", "2026-09-09"), "not a valid date in 2026"),
    ("06-01 00:00:00", None, ("2026-01-01", "2027-12-31"), "ambiguous year"),
    ("06-01 00:00:00", None, None, "no year (--year) or incident window"),
])
def test_yearless_stamps_refused_with_a_reason(con, stamp, year, window, why):
    ws, we = (dt.datetime.fromisoformat(w).replace(tzinfo=UTC) for w in window) if window else (None, None)
    got, problem = con.execute("SELECT kvir_yearless_ts($m, $y::INTEGER, $ws::TIMESTAMPTZ, $we::TIMESTAMPTZ), kvir_yearless_problem($m, $y::INTEGER, $ws::TIMESTAMPTZ, $we::TIMESTAMPTZ)",
                               {"m": stamp, "y": year, "ws": ws, "we": we}).fetchone()
    assert got is None and why in problem


SPANS_TYPE = ("STRUCT(" + ", ".join(f"lo{i} TIMESTAMP, hi{i} TIMESTAMP, off{i} INTEGER" for i in range(1, 5)) + ")")
WINDOW_2Y = (dt.datetime(2026, 3, 1, tzinfo=UTC), dt.datetime(2027, 11, 1, tzinfo=UTC))
ZONES = ["America/Chicago", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata", "America/St_Johns", "UTC"]


@pytest.mark.slow   # 300 Hypothesis examples, ~20 s: its own step in .ci/run (pytest -m slow)
@settings(max_examples=300, deadline=None)
@given(zone=st.sampled_from(ZONES),
       local=st.datetimes(min_value=dt.datetime(2026, 1, 1), max_value=dt.datetime(2027, 12, 31)))
def test_stable_spans_give_the_exact_answer(con, zone, local):
    """The fast path (a source's tz_spans) == kvir_local_to_utc (per row) == Python's zoneinfo, folds and
    gaps included; spans left out (beyond the four nearest the window) take the exact path."""
    spans = spans_struct(tz_segments(zone, WINDOW_2Y))
    text = local.isoformat(sep=" ")
    fast, exact, parsed = con.execute(
        "SELECT kvir_local_ts_to_utc($s, kvir_naive_ts($s), $tz, NULL, $z::" + SPANS_TYPE + "), "
        "kvir_local_to_utc($t, $tz, NULL), kvir_parse_ts($s, $tz, NULL)",
        {"t": local, "s": text, "tz": zone, "z": spans}).fetchone()
    assert fast == parsed
    assert fast == exact
    z = zoneinfo.ZoneInfo(zone)
    a, b = local.replace(tzinfo=z, fold=0), local.replace(tzinfo=z, fold=1)
    real = a.astimezone(UTC).replace(tzinfo=None) == b.astimezone(UTC).replace(tzinfo=None) and \
        a.astimezone(UTC).astimezone(z).replace(tzinfo=None) == local
    if real:
        assert exact == a.astimezone(UTC)
    else:
        assert exact is None          # a fold (two instants) or a gap (none): refused


def test_stable_spans_leave_out_the_hours_near_a_transition():
    segs = tz_segments("America/Chicago", WINDOW_2Y)
    assert len(segs) == 4                      # five stable spans in 2026-2027: the four nearest the window
    # no span contains 2026-11-01 01:30 (the fold) or 2026-03-08 02:30 (the gap)
    for t in (dt.datetime(2026, 11, 1, 1, 30), dt.datetime(2026, 3, 8, 2, 30)):
        assert not any(s["lo"] <= t < s["hi"] for s in segs)
    assert {s["off"] for s in segs} == {-300, -360}


def test_hour_table_covers_the_window_with_a_margin():
    from kvir.ingest.settings import WINDOW_MARGIN, hour_range

    h0, n = hour_range((dt.datetime(2026, 8, 27, tzinfo=UTC), dt.datetime(2026, 9, 9, 19, 40, tzinfo=UTC)))
    assert h0 == dt.datetime(2026, 8, 27) - WINDOW_MARGIN
    assert h0 + dt.timedelta(hours=n) > dt.datetime(2026, 9, 9, 19, 40) + WINDOW_MARGIN
    offs = hour_offsets("America/Chicago", h0, n)
    assert len(offs) == n and offs[n // 2] == -300        # CDT in the middle of the window
