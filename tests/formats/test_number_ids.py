"""Identifiers written as JSON numbers (issue 36 item 5): one text per number, in every reader and format.

A request id or a bootstrap_room is an identifier, but a log may write it as a JSON number, and a number has
many spellings: 0.000001, 1e-6 and 1E-06 are one value, as are 1.5e300 and 1.5E+300. kvir's line reader (over
DuckDB's JSON functions) and DuckDB's own JSON reader (kvir.ingest.native, for big files) wrote such a number
differently (0.000001 / 1e-06, 1.5e300 / 1.5e+300), so the prefill copy of a PD request in a big file and its
decode copy in a small one did not merge. Every reader now writes a JSON number as DuckDB's JSON functions
write its value (json_extract_string): 0.000001, 1.5e300, 100000.0 for 1E5; a string stays as it is written
("1e-06" is another id than the number 1e-06)."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from kvir.case.store import Case
from kvir.ingest.run import IngestOptions, ingest, plan_sources
from kvir.spec.model import load_spec

from ..conftest import spec_text, write

# (the spelling in the prefill log, in the decode log, the one text kvir keeps), worked out by hand: each pair
# is one double; the kept text is how yyjson (DuckDB's JSON functions) writes that double
ROOMS = [("1.5e300", "1.5E+300", "1.5e300"), ("0.000001", "1e-6", "0.000001"), ("1E5", "100000.0", "100000.0"),
         ("2.5e-5", "0.000025", "0.000025"), ("7001", "7001", "7001")]


def _line(stamp: str, rid: str, room: str, prompt: int, latency: float = 1.0) -> str:
    """A request.finished record as SGLang's JSON request log writes it, the rid and room spelled as given."""
    obj = '{"rid": %s, "bootstrap_host": "10.0.0.7", "bootstrap_port": 8998, "bootstrap_room": %s}' % (rid, room)
    meta = json.dumps({"id": "x", "finish_reason": {"type": "length", "length": 7}, "prompt_tokens": prompt,
                       "completion_tokens": 7, "cached_tokens": 0, "e2e_latency": latency})
    return ('{"timestamp": "%s", "event": "request.finished", "rid": %s, "obj": %s, "out": {"meta_info": %s}}'
            % (stamp, rid, obj, meta))


def _pd_logs(tmp_path: Path, pad: int) -> tuple[Path, Path]:
    """The prefill log (padded with other requests to `pad` lines, so it is the big file) and the decode log."""
    pre, dec = [], []
    for i, (p_room, d_room, _) in enumerate(ROOMS):
        stamp = f"2026-09-01T10:00:{i:02d}.000000"
        pre.append(_line(stamp, f'"p{i}"', p_room, 1))           # the prefill side: the 1-token placeholder
        dec.append(_line(stamp, f'"d{i}"', d_room, 681281))
    pre += [_line("2026-09-01T11:00:00.000000", f'"q{i}"', str(10 ** 12 + i), 5) for i in range(pad)]
    return write(tmp_path / "logs" / "prefill-0.jsonl", "\n".join(pre) + "\n"), \
        write(tmp_path / "logs" / "decode-0.jsonl", "\n".join(dec) + "\n")


def _requests(tmp_path: Path, files: list[Path], native_min_bytes: int, extra: str = "") -> tuple[list, list]:
    spec = write(tmp_path / "incident.toml", spec_text("public", extra))
    opts = IngestOptions(format="sglang-json", source_tz="UTC", served_model="zai-org/GLM-5.3",
                         native_min_bytes=native_min_bytes, hash="none")
    case = Case.create(tmp_path / f"case-{native_min_bytes}")
    try:
        ingest(case, plan_sources(files, load_spec(spec), opts), opts)
        readers = [e.get("reader", "") for e in case.manifest["inputs"]]
        rows = case.con.execute("SELECT request_id, bootstrap_room, prompt_tokens, prefill_tokens, n_records "
                                "FROM requests WHERE bootstrap_room NOT LIKE '1000000000%' ORDER BY request_id").fetchall()
        return readers, rows
    finally:
        case.close()


ROLES = "".join(f'\n[[sources]]\npath = "logs/{n}-0.jsonl"\nrole = "{n}"\n' for n in ("prefill", "decode"))
WANT = [(f"d{i}", kept, 681281, 1, 2) for i, (_, _, kept) in enumerate(ROOMS)]


def test_a_pd_pair_split_over_a_big_and_a_small_file_merges(tmp_path):
    prefill, decode = _pd_logs(tmp_path, pad=400)
    size = (prefill.stat().st_size + decode.stat().st_size) // 2      # the prefill log is over it, decode under
    readers, rows = _requests(tmp_path, [prefill, decode], size, ROLES)
    assert readers[0].startswith("DuckDB read_ndjson") and not readers[1], readers
    assert rows == WANT


@pytest.mark.parametrize("native", [0, 1 << 62], ids=["duckdb-json-reader", "line-reader"])
def test_each_reader_alone_writes_the_same_text(tmp_path, native):
    prefill, decode = _pd_logs(tmp_path, pad=3)
    assert _requests(tmp_path, [prefill, decode], native, ROLES)[1] == WANT


def test_a_string_id_stays_as_written(tmp_path):
    """"1e-06" in quotes is a string: not the number 1e-06, and kept as written by both readers."""
    lines = [_line("2026-09-01T10:00:00.000000", '"1e-06"', '"1.5E+300"', 681281),
             _line("2026-09-01T10:00:01.000000", "1e-06", "1.5E+300", 681281)]
    f = write(tmp_path / "logs" / "mixed-0.jsonl", "\n".join(lines) + "\n")
    for native in (0, 1 << 62):
        rows = _requests(tmp_path, [f], native)[1]
        assert [(r[0], r[1]) for r in rows] == [("0.000001", "1.5e300"), ("1e-06", "1.5E+300")], native


# ------------------------------------------------------------------ the sweep: every format that reads ids

def _case(tmp_path: Path, files: list[Path], extra: str = "", **kw) -> Case:
    spec = write(tmp_path / "incident.toml", spec_text("public", extra))
    opts = IngestOptions(source_tz="UTC", served_model="zai-org/GLM-5.3", hash="none", **kw)
    case = Case.create(tmp_path / "case")
    ingest(case, plan_sources(files, load_spec(spec), opts), opts)
    return case


def test_a_gateway_and_an_engine_log_of_one_numbered_request_merge(tmp_path):
    """LiteLLM writes the request id and the customer as numbers (1e-06, 1.5E+300), the engine its rid as 0.000001:
    one request, the gateway's customer named as the gateway spelt the number's value."""
    spend = {"request_id": "__RID__", "call_type": "acompletion", "prompt_tokens": 681281, "completion_tokens": 7,
             "startTime": "2026-09-01T10:00:00.000", "endTime": "2026-09-01T10:00:01.000",
             "model": "hosted_vllm/zai-org/GLM-5.3", "model_group": "zai-org/GLM-5.3",
             "custom_llm_provider": "hosted_vllm", "end_user": "__USER__", "status": "success"}
    gw = write(tmp_path / "spend.ndjson", json.dumps(spend).replace('"__RID__"', "1e-06").replace('"__USER__"', "1.5E+300")
               + "\n")
    eng = write(tmp_path / "decode-0.jsonl", _line("2026-09-01T10:00:01.000000", "0.000001", "null", 681281) + "\n")
    case = _case(tmp_path, [gw, eng])
    try:
        rows = case.con.execute("SELECT request_id, account_id, n_records FROM requests").fetchall()
        assert rows == [("0.000001", "1.5e300", 2)]
    finally:
        case.close()


def test_a_parquet_double_room_and_a_json_room_merge(tmp_path):
    """A Parquet prefill export whose bootstrap_room column is DOUBLE (a pandas default for numbers with
    gaps) and the decode node's JSON log: one request."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    start = dt.datetime(2026, 9, 1, 10, tzinfo=dt.timezone.utc)
    pq.write_table(pa.table({"request_id": ["p0"], "ts": pa.array([start], pa.timestamp("us", "UTC")),
                             "prompt_tokens": pa.array([1], pa.int64()), "http_status": pa.array([200], pa.int64()),
                             "bootstrap_room": pa.array([1e-6], pa.float64())}), tmp_path / "prefill-0.parquet")
    eng = write(tmp_path / "decode-0.jsonl", _line("2026-09-01T10:00:01.000000", '"d0"', "0.000001", 681281) + "\n")
    extra = ('\n[[sources]]\npath = "prefill-0.parquet"\nrole = "prefill"\n'
             '\n[[sources]]\npath = "decode-0.jsonl"\nformat = "sglang-json"\nrole = "decode"\n')
    case = _case(tmp_path, [tmp_path / "prefill-0.parquet", eng], extra)
    try:
        rows = case.con.execute("SELECT request_id, bootstrap_room, prefill_tokens, n_records FROM requests").fetchall()
        assert rows == [("d0", "0.000001", 1, 2)]
    finally:
        case.close()


def test_a_text_log_room_in_pythons_repr_and_a_json_log_room_merge(tmp_path):
    """SGLang's text request log writes the room as Python's repr does (1e-06, 4455667788990011223, or a quoted
    string): the prefill node's text log and the decode node's JSON log are one request, and a room that is
    not all digits is no longer lost."""
    meta = ("{'meta_info': {'id': 'p%d', 'finish_reason': {'type': 'length', 'length': 1}, 'prompt_tokens': 1, "
            "'completion_tokens': 1, 'cached_tokens': 0, 'e2e_latency': 0.5}}")
    text = "\n".join(
        f"[2026-09-01 10:00:0{i}] Finish: obj=GenerateReqInput(rid='p{i}', stream=False, bootstrap_host='10.0.0.7', "
        f"bootstrap_port=8998, bootstrap_room={room}), out={meta % i}"
        for i, room in enumerate(("1e-06", "4455667788990011223", "'room-x'"))) + "\n"
    pre = write(tmp_path / "prefill-0.log", text)
    dec = write(tmp_path / "decode-0.jsonl", "\n".join(
        _line(f"2026-09-01T10:00:0{i}.500000", f'"d{i}"', room, 681281)
        for i, room in enumerate(("0.000001", "4455667788990011223", '"room-x"'))) + "\n")
    extra = ('\n[[sources]]\npath = "prefill-0.log"\nformat = "sglang-text"\nrole = "prefill"\n'
             '\n[[sources]]\npath = "decode-0.jsonl"\nformat = "sglang-json"\nrole = "decode"\n')
    case = _case(tmp_path, [pre, dec], extra)
    try:
        rows = case.con.execute("SELECT request_id, bootstrap_room, prefill_tokens, n_records FROM requests "
                                "ORDER BY request_id").fetchall()
        assert rows == [("d0", "0.000001", 1, 2), ("d1", "4455667788990011223", 1, 2), ("d2", "room-x", 1, 2)]
    finally:
        case.close()
