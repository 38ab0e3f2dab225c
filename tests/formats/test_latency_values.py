"""A latency or duration that is NaN or infinite is quarantined with its own reason (issue 36 item 8), never
as "over 10^7 s" (DuckDB compares NaN greater than every number) and never silently dropped.

Python's json.dumps writes float('nan') and float('inf') as NaN and Infinity, and its repr as nan and inf:
SGLang's request log and metrics export can hold them. The reasons below are written by hand."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvir.case.store import Case
from kvir.ingest.run import IngestOptions, ingest, plan_sources
from kvir.spec.model import load_spec

from ..conftest import spec_text, write

NAN, INF = "e2e_latency is NaN (not a number)", "e2e_latency is infinite (inf)"


def _quarantine(tmp_path: Path, files: list[Path], fmt: str | None = None, extra: str = "", **kw) -> dict:
    spec = write(tmp_path / "incident.toml", spec_text("public", extra))
    opts = IngestOptions(format=fmt or "auto", source_tz="UTC", served_model="zai-org/GLM-5.3", hash="none", **kw)
    case = Case.create(tmp_path / "case")
    try:
        ingest(case, plan_sources(files, load_spec(spec), opts), opts)
        return dict(case.con.execute("SELECT source_line, reason FROM quarantine ORDER BY ALL").fetchall())
    finally:
        case.close()


def _finished(latency: str, rid: str) -> str:
    meta = {"id": rid, "finish_reason": {"type": "length", "length": 7}, "prompt_tokens": 681281,
            "completion_tokens": 7, "cached_tokens": 0, "e2e_latency": "__L__"}
    rec = {"timestamp": "2026-09-01T10:00:00.000000", "event": "request.finished", "rid": rid, "obj": {"rid": rid},
           "out": {"meta_info": meta}}
    return json.dumps(rec).replace('"__L__"', latency)


@pytest.mark.parametrize("native", [0, 1 << 62], ids=["duckdb-json-reader", "line-reader"])
def test_sglang_json_nan_and_infinity(tmp_path, native):
    lines = [_finished(v, f"r{i}") for i, v in enumerate(("NaN", "Infinity", "-Infinity", "1e8", "-1.0", "2.5"), 1)]
    f = write(tmp_path / "requests.jsonl", "\n".join(lines) + "\n")
    got = _quarantine(tmp_path, [f], "sglang-json", native_min_bytes=native)
    assert got == {1: NAN, 2: INF, 3: "e2e_latency is infinite (-inf)", 4: "implausible e2e_latency (over 10^7 s)",
                   5: "negative e2e_latency"}


def test_sglang_text_python_repr_nan_and_inf(tmp_path):
    meta = ("{'meta_info': {'id': 'r%d', 'finish_reason': {'type': 'length', 'length': 1}, 'prompt_tokens': 9, "
            "'completion_tokens': 1, 'cached_tokens': 0, 'e2e_latency': %s}}")
    text = "\n".join(f"[2026-09-01 10:00:00] Finish: obj=GenerateReqInput(rid='r{i}'), out={meta % (i, v)}"
                     for i, v in enumerate(("nan", "inf", "-inf", "0.5"), 1)) + "\n"
    got = _quarantine(tmp_path, [write(tmp_path / "server.log", text)], "sglang-text")
    assert got == {1: NAN, 2: INF, 3: "e2e_latency is infinite (-inf)"}


def test_sglang_metrics_nan(tmp_path):
    rec = '{"request_parameters": "{\\"rid\\": \\"m1\\"}", "id": "m1", "prompt_tokens": 5, "e2e_latency": NaN}\n'
    f = write(tmp_path / "sglang-request-metrics-20260901_10.log", rec)
    assert _quarantine(tmp_path, [f], "sglang-metrics") == {1: NAN}


def test_a_mapped_latency_that_is_not_a_finite_number(tmp_path):
    """generic: the start is ts_end - latency_s; a NaN, infinite or unreadable latency said so (it was "ts missing
    and ts_end without latency_s", or with a ts, a silently missing end)."""
    rows = [{"id": "g1", "end": "2026-09-01T10:00:09Z", "lat": "NaN"},
            {"id": "g2", "end": "2026-09-01T10:00:09Z", "lat": "Infinity"},
            {"id": "g3", "end": "2026-09-01T10:00:09Z", "lat": "soon"},
            {"id": "g4", "start": "2026-09-01T10:00:00Z", "lat": "nan"},
            {"id": "g5", "end": "2026-09-01T10:00:09Z", "lat": 9}]
    f = write(tmp_path / "gw.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    extra = ('\n[[sources]]\npath = "gw.jsonl"\nformat = "generic-jsonl"\n[sources.columns]\nrequest_id = "id"\n'
             'ts = "start"\nts_end = "end"\nlatency_s = "lat"\n')
    assert _quarantine(tmp_path, [f], extra=extra) == {
        1: "latency_s is NaN (not a number)", 2: "latency_s is infinite (inf)", 3: "latency_s is not a number: soon",
        4: "latency_s is NaN (not a number)"}


@pytest.mark.parametrize("fmt,record,reason", [
    ("nginx", {"msec": "1788256809.000", "status": "200", "request_uri": "/v1/chat/completions",
               "request_time": "NaN", "http_x_model": "zai-org/GLM-5.3"}, "request_time is NaN (not a number)"),
    ("nginx", {"msec": "1788256809.000", "status": "200", "request_uri": "/v1/chat/completions",
               "request_time": "-2.000", "http_x_model": "zai-org/GLM-5.3"}, "negative request_time"),
    ("envoy", {"start_time": "2026-09-01T10:00:00.000Z", "response_code": 200, "duration": "NaN",
               "path": "/v1/chat/completions", "x-ai-eg-model": "zai-org/GLM-5.3"}, "duration is NaN (not a number)"),
    ("cloudflare-gateway", {"id": "cf1", "created_at": "2026-09-01T10:00:00.000Z", "model": "m", "tokens_in": 5,
                            "duration": "abc"}, "duration is not a number: abc"),
    ("helicone", {"request_id": "h1", "request_created_at": "2026-09-01T10:00:00Z", "model": "m", "prompt_tokens": 5,
                  "response_status": 200, "delay_ms": "Infinity"}, "delay_ms is infinite (inf)"),
])
def test_a_gateway_duration_that_is_not_a_finite_number(tmp_path, fmt, record, reason):
    """The gateways' durations give the request's end: a value that is none was silently dropped."""
    f = write(tmp_path / "gw.jsonl", json.dumps(record) + "\n")
    assert _quarantine(tmp_path, [f], fmt) == {1: reason}
