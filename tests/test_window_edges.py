"""The incident window is inclusive at both ends, decided at the precision the source writes (issue #26 items 8
and 17): a start one unit before the window or after it is out, one exactly on an edge is in, for every time
unit (s, ms, us, ns; Unix numbers, ISO strings, Parquet timestamps) and for every trigger query (one global
pool, the pool in effect per node, hour-granular starts). Expected sets are worked out here with integer
nanoseconds, independently of kvir's SQL."""
from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kvir
from tests.conftest import ids, sglang_finished as fin, spec_text, write

UTC = dt.timezone.utc
WS = dt.datetime(2026, 8, 27, tzinfo=UTC)                 # the shared minimal spec's window (tests/conftest.py)
WE = dt.datetime(2026, 9, 9, 19, 40, tzinfo=UTC)
WS_NS = int(WS.timestamp()) * 10**9
WE_NS = int(WE.timestamp()) * 10**9
UNIT_NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
GLM = "zai-org/GLM-5.3"
COLUMNS = ('[sources.columns]\nrequest_id = "id"\nts = "t"\nmodel = "model"\nprompt_tokens = "prompt"\n'
           'http_status = "status"\n')


def inside(t_ns: int) -> bool:
    return WS_NS <= t_ns <= WE_NS


def written(t_ns: int, how: str) -> str | int:
    """A time in nanoseconds written as a source would write it."""
    if how in UNIT_NS:                                    # a Unix number in that unit (exact multiples only)
        return t_ns // UNIT_NS[how]
    if how == "epoch-s-decimal":
        return f"{t_ns // 10**9}.{t_ns % 10**9:09d}"
    if how == "epoch-ms-decimal":
        return f"{t_ns // 10**6}.{t_ns % 10**6:06d}"
    if how == "epoch-us-decimal":
        return f"{t_ns // 10**3}.{t_ns % 10**3:03d}"
    base = dt.datetime.fromtimestamp(t_ns // 10**9, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    frac = f"{t_ns % 10**9:09d}"
    return {"iso-9-z": f"{base}.{frac}Z", "iso-9-offset": f"{base}.{frac}+00:00",
            "iso-6-z": f"{base}.{frac[:6]}Z", "iso-3-z": f"{base}.{frac[:3]}Z", "iso-0-z": f"{base}Z"}[how]


def _generic(tmp_path, rows: list[tuple[str, str | int]]):
    """Triage of one generic JSON Lines file: (id, written time) rows, all exposing apart from the time."""
    write(tmp_path / "t.jsonl", "".join(json.dumps({"id": i, "t": t, "model": GLM, "prompt": 700000, "status": 200})
                                        + "\n" for i, t in rows))
    spec = write(tmp_path / "incident.toml", spec_text(extra='\n[[sources]]\npath = "t.jsonl"\n'
                                                        'format = "generic-jsonl"\n' + COLUMNS))
    return kvir.triage(spec, out=tmp_path / "case", hash="none")


EDGES = {"before-start": WS_NS, "start": WS_NS, "end": WE_NS, "after-end": WE_NS}


@pytest.mark.parametrize("unit", list(UNIT_NS))
def test_one_unit_outside_either_edge_is_outside(tmp_path, unit):
    """For each unit: edge - 1 unit and edge + 1 unit are outside, the edges inside, as a Unix number in that
    unit and as every finer way of writing the same instant (on main 1 ns outside counted as inside)."""
    u = UNIT_NS[unit]
    times = {"before-start": WS_NS - u, "start": WS_NS, "end": WE_NS, "after-end": WE_NS + u}
    forms = [unit, "epoch-s-decimal", "iso-9-z", "iso-9-offset"] + (["epoch-ms-decimal", "epoch-us-decimal"]
                                                                     if unit != "s" else [])
    rows = [(f"{edge}|{form}", written(t, form)) for edge, t in times.items() for form in forms]
    r = _generic(tmp_path, rows)
    want = {i for i, _ in rows if i.split("|")[0] in ("start", "end")}
    assert ids(r.affected) == want
    assert r.sources[0]["quarantined"] == 0


@pytest.mark.slow   # a property test (~6 s): its own step (pytest -m slow), as the other time properties
@settings(max_examples=12, deadline=None)
@given(offsets=st.lists(st.integers(-3_000_000, 3_000_000), min_size=1, max_size=12),
       form=st.sampled_from(["epoch-s-decimal", "epoch-ms-decimal", "epoch-us-decimal", "ns", "iso-9-z"]))
def test_any_time_near_an_edge_is_judged_exactly(tmp_path_factory, offsets, form):
    """Property: times within 3 ms of either edge, in any nanosecond-capable form, are in the affected set
    exactly when WS <= t <= WE in integer nanoseconds."""
    tmp = tmp_path_factory.mktemp("edge")
    times = {f"t{k}": (WS_NS if k % 2 else WE_NS) + off for k, off in enumerate(offsets)}
    r = _generic(tmp, [(i, written(t, form)) for i, t in times.items()])
    assert ids(r.affected) == {i for i, t in times.items() if inside(t)}
    r.case.close()


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
@pytest.mark.parametrize("zone", ["UTC", None])
def test_parquet_timestamps_of_every_unit(tmp_path, unit, zone):
    """Parquet TIMESTAMP(unit) columns, zoned (UTC) and naive (read in the source zone, UTC here): the
    nanosecond ones keep what lies below the microsecond (on main they were taken for naive local times)."""
    u = UNIT_NS[unit]
    times = {"before-start": WS_NS - u, "start": WS_NS, "end": WE_NS, "after-end": WE_NS + u}
    t = pa.table({"id": list(times), "t": pa.array([v // u for v in times.values()], pa.timestamp(unit, tz=zone)),
                  "model": [GLM] * 4, "prompt": [700000] * 4, "status": [200] * 4})
    pq.write_table(t, tmp_path / "t.parquet")
    spec = write(tmp_path / "incident.toml", spec_text(extra='\n[[sources]]\npath = "t.parquet"\n'
                                                        'format = "generic-parquet"\nsource_tz = "UTC"\n' + COLUMNS))
    r = kvir.triage(spec, out=tmp_path / "case", hash="none")
    assert ids(r.affected) == {"start", "end"}


# ----------------------------------------------------------------------------------------- every trigger query

def _sglang_edges(offset_us: int = 1) -> list[str]:
    """Decode records whose starts (finish - latency 5 s, microseconds exact) lie on and beside each edge."""
    def at(name: str, t: dt.datetime) -> str:
        finish = (t + dt.timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%S.%f")
        return fin(finish, name, 700000, latency=5.0, room=None)
    us = dt.timedelta(microseconds=offset_us)
    return [at("before-start", WS - us), at("start", WS), at("end", WE), at("after-end", WE + us)]


def test_global_pool_query_is_inclusive_at_both_edges(spec, tmp_path):
    """queries/mechanisms/oversized_prompt/triage/hits.sql: 1 us outside is out, the edge itself in (an
    exclusive end would drop `end`)."""
    f = write(tmp_path / "decode-0.jsonl", "\n".join(_sglang_edges()) + "\n")
    r = kvir.triage(spec(), [f], out=tmp_path / "case", source_tz="UTC", served_model=GLM, hash="none")
    assert ids(r.affected) == {"start", "end"}
    assert r.summary["in_scope"] == 2


def test_pool_in_effect_query_is_inclusive_at_both_edges(tmp_path):
    """queries/mechanisms/oversized_prompt/triage/hits_pool_in_effect.sql (with start-up logs): the same edges,
    judged by the node's pool."""
    write(tmp_path / "incident.toml", spec_text())
    decode, prefill = [], []
    for i, line in enumerate(_sglang_edges()):
        rec = json.loads(line)
        rec["obj"].update({"bootstrap_host": "10.0.0.1", "bootstrap_port": 8998, "bootstrap_room": 500 + i})
        decode.append(json.dumps(rec))
        rec["rid"] = rec["obj"]["rid"] = rec["out"]["meta_info"]["id"] = "p-" + rec["rid"]
        rec["out"]["meta_info"]["prompt_tokens"] = 1
        prefill.append(json.dumps(rec))
    write(tmp_path / "engine" / "decode-a" / "requests.jsonl", "\n".join(decode) + "\n")
    write(tmp_path / "engine" / "prefill-a" / "requests.jsonl", "\n".join(prefill) + "\n")
    write(tmp_path / "startup" / "prefill-a" / "server.log",
          "[2026-08-01 00:00:00] server_args=ServerArgs(model_path='zai-org/GLM-5.3-FP8', context_length=1048576, "
          "served_model_name='zai-org/GLM-5.3', disaggregation_mode='prefill')\n"
          "[2026-08-01 00:00:00 TP0] max_total_num_tokens=600000, chunked_prefill_size=16384, max_prefill_tokens=16384, "
          "max_running_requests=64, context_len=1048576, available_gpu_mem=8.93 GB\n")
    r = kvir.triage(tmp_path / "incident.toml", [tmp_path / "engine"], out=tmp_path / "case", source_tz="UTC",
                    served_model=GLM, startup=[tmp_path / "startup"], hash="none")
    assert "pool in effect" in r.summary["oversized_prompt"]["threshold"]
    assert ids(r.affected) == {"start", "end"}


def _metrics(tmp_path, hour: str, rid: str, latency: float) -> None:
    """One SGLang request-metrics record appended to the hourly file of `hour` (a UTC host)."""
    path = tmp_path / "metrics" / "decode-0" / f"sglang-request-metrics-{hour}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps({"request_parameters": json.dumps({"rid": rid}), "id": rid,
                            "finish_reason": {"type": "length", "length": 5}, "prompt_tokens": 700000,
                            "completion_tokens": 5, "cached_tokens": 0, "e2e_latency": latency}) + "\n")


def test_hour_granular_starts_at_both_edges(spec, tmp_path):
    """Starts known only to an hour (SGLang metrics export: [ts, ts + 1 h)): a span that starts on the window's
    start, or whose last microsecond is the window's end, lies inside (affected); one a microsecond later
    crosses the edge (possibly affected); one that ends where the window starts, or starts after its end, is
    out of scope."""
    _metrics(tmp_path, "20260827_00", "span-at-start", 0.0)             # [00:00, 01:00): inside
    _metrics(tmp_path, "20260826_23", "span-before", 0.0)               # [23:00, 00:00): ends at WS: out
    _metrics(tmp_path, "20260909_18", "span-in", 0.0)                   # [18:00, 19:00): inside
    _metrics(tmp_path, "20260909_19", "span-to-end", 1199.999999)       # [18:40:00.000001, 19:40:00.000001): in
    _metrics(tmp_path, "20260909_19", "span-past-end", 1199.999998)     # [18:40:00.000002, 19:40:00.000002): crosses
    _metrics(tmp_path, "20260909_20", "span-after", 1199.999998)        # [19:40:00.000002, ...): out
    r = kvir.triage(spec(), [tmp_path / "metrics"], out=tmp_path / "case", source_tz="UTC", served_model=GLM,
                    hash="none")
    cats = dict(r.case.con.execute("SELECT request_id, category FROM triage_hits").fetchall())
    assert cats == {"span-at-start": "affected", "span-to-end": "affected", "span-in": "affected",
                    "span-past-end": "possibly-affected"}
