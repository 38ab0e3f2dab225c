"""Engine-side logs: SGLang JSON (PD pairs, aborts), text, the metrics export; the router; vLLM."""
from __future__ import annotations

import datetime as dt

import pytest

from kvir.core.errors import InputError

from .conftest import affected_ids, categories
from .expected import AFFECTED, COUNTS, FIXTURES, POSSIBLY_AFFECTED, counts_of

UTC = dt.timezone.utc


def _expected_counts(folder: str) -> dict[str, tuple[int, int, int, int]]:
    return {k: v for k, v in COUNTS.items() if k.startswith(folder + "/")}


def test_sglang_json_pd_pairs_and_abort_finish_reasons(run_fixture):
    r = run_fixture("sglang_json", source_tz="America/Chicago")
    assert counts_of(r) == _expected_counts("sglang_json")
    assert affected_ids(r) == AFFECTED["sglang_json"]
    cat = categories(r)
    assert (cat["d2"], cat["d3"]) == ("other-rule", "other-rule")       # 681,280 and 681,279: engine rule only
    assert (cat["d4"], cat["d5"], cat["d6"]) == ("rejected", "aborted", "failed")   # abort 400 / none / 503
    assert "d8" not in cat and "p1" not in cat and "p7" not in cat     # before the window; prefill copies merged
    req = r.case.df("SELECT * FROM requests WHERE request_id IN ('d1', 'd7') ORDER BY request_id").set_index("request_id")
    # d1: decode + prefill + the duplicated decode line: one request, the decode's count and outcome win
    assert req.loc["d1", "n_records"] == 3 and req.loc["d1", "prompt_tokens"] == 681281
    assert req.loc["d1", "prefill_tokens"] == 1 and req.loc["d1", "prefill_node"] == "prefill-0"
    assert req.loc["d1", "decode_node"] == "decode-0" and not req.loc["d1", "conflict"]
    # earliest start: p1 finished 10:00:01 CDT after 1.5 s = 14:59:59.5Z
    assert req.loc["d1", "ts"].to_pydatetime() == dt.datetime(2026, 8, 28, 14, 59, 59, 500000, tzinfo=UTC)
    # d7: the prefill side rejected (placeholder, abort 400) while decode served: the client got 200
    assert req.loc["d7", "prefill_outcome"] == "rejected" and req.loc["d7", "http_status"] == 200
    assert req.loc["d7", "ts"].to_pydatetime() == dt.datetime(2026, 8, 27, 0, 0, tzinfo=UTC)
    assert r.summary["rejected"] == 1 and r.summary["aborted"] == 1 and r.summary["failed"] == 1


def test_sglang_json_engine_rule_counts_681280_and_681279(run_fixture):
    r = run_fixture("sglang_json", source_tz="America/Chicago", rule="engine")
    assert affected_ids(r) == {"d1", "d2", "d3", "d7"}     # >= 681,274


def test_sglang_json_without_zone_is_refused(run_fixture):
    with pytest.raises(InputError, match="naive host-local"):
        run_fixture("sglang_json")


def test_sglang_text(run_fixture):
    r = run_fixture("sglang_text", source_tz="Europe/Berlin")
    assert counts_of(r) == _expected_counts("sglang_text")
    assert affected_ids(r) == AFFECTED["sglang_text"]
    src = r.sources[0]
    assert src["served_model"] == "zai-org/GLM-5.3" and src["served_model_source"].startswith("server_args")
    ts = r.case.con.execute("SELECT ts FROM requests WHERE request_id = 't1'").fetchone()[0]
    assert ts == dt.datetime(2026, 8, 29, 10, 0, tzinfo=UTC)             # 12:00:05 CEST - 5 s


def test_sglang_metrics_hour_only_times(run_fixture):
    r = run_fixture("sglang_metrics", source_tz="America/Chicago")
    assert counts_of(r) == _expected_counts("sglang_metrics")
    assert affected_ids(r) == AFFECTED["sglang_metrics"]
    cat = categories(r)
    assert {k for k, v in cat.items() if v == "possibly-affected"} == POSSIBLY_AFFECTED
    assert cat["m3"] == "other-rule" and cat["m4"] == "rejected"
    assert r.summary["possibly_affected"] == 2
    g = dict(r.case.con.execute("SELECT request_id, ts_granularity_s FROM requests").fetchall())
    assert set(g.values()) == {3600}
    m2 = r.case.con.execute("SELECT ts, bootstrap_room FROM requests WHERE request_id = 'm2'").fetchone()
    assert m2 == (dt.datetime(2026, 8, 26, 23, 58, tzinfo=UTC), "5002")   # 00:00Z - 120 s; room from request_parameters
    reasons = dict(r.case.con.execute("SELECT regexp_extract(source_file, '[^/]+$'), reason FROM quarantine "
                                      "WHERE source_line = 1").fetchall())
    assert "ambiguous local time" in reasons["sglang-request-metrics-20261101_01.log"]
    assert "carries no hour" in reasons["exported-copy.log"]
    # the node is the folder the hourly files live in
    assert {s["node"] for s in r.sources if "request-metrics" in s["label"]} == {"decode-1"}


def test_sglang_metrics_exact_record_of_the_same_request_wins(run_fixture, tmp_path):
    """A request in both the metrics export (hour-granular) and the JSON request log (exact) is known exactly."""
    d = tmp_path / "logs" / "decode-1"
    d.mkdir(parents=True)
    (d / "sglang-request-metrics-20260909_14.log").write_text(
        (FIXTURES / "sglang_metrics/decode-1/sglang-request-metrics-20260909_14.log").read_text())
    (d / "requests.jsonl").write_text(
        '{"timestamp": "2026-09-09T14:30:00", "event": "request.finished", "rid": "m5", "obj": {"rid": "m5"}, '
        '"out": {"meta_info": {"id": "m5", "finish_reason": {"type": "length"}, "prompt_tokens": 681281, '
        '"e2e_latency": 0.0}}}\n')
    r = run_fixture(paths=[tmp_path / "logs"], source_tz="America/Chicago")
    row = r.case.con.execute("SELECT ts, ts_granularity_s, n_records FROM requests WHERE request_id = 'm5'").fetchone()
    assert row == (dt.datetime(2026, 9, 9, 19, 30, tzinfo=UTC), 0, 2)
    assert "m5" in affected_ids(r)            # was possibly-affected on the export alone


def test_router_candidates(run_fixture):
    r = run_fixture("sglang_router")
    assert counts_of(r) == _expected_counts("sglang_router")
    assert affected_ids(r) == set()
    rows = r.case.df("SELECT request_id, ts, http_status, outcome, prompt_tokens FROM requests ORDER BY ts")
    assert rows["prompt_tokens"].isna().all()
    got = dict(zip(rows["request_id"], zip(rows["http_status"], rows["outcome"])))
    assert got["chatcmpl-Nze1CSENFb7YR2OqCbYP3B6f"] == (200, "served")
    assert got["chatcmpl-aaaaaaaaaaaaaaaaaaaaaaaa"] == (400, "rejected")
    assert got["gnt-bbbbbbbbbbbbbbbbbbbbbbbb"] == (502, "failed")
    assert got["cmpl-dddddddddddddddddddddddd"] == (200, "served")       # ANSI colours stripped
    ts = dict(zip(rows["request_id"], rows["ts"]))
    # UTC stamps: end 10:00:05 - 5 s; 10:01:01 - 812.5 ms; 10:02:02 - 950 us; 10:04:04 - 2.5 s
    assert ts["chatcmpl-Nze1CSENFb7YR2OqCbYP3B6f"].to_pydatetime() == dt.datetime(2026, 8, 30, 10, 0, tzinfo=UTC)
    assert ts["chatcmpl-aaaaaaaaaaaaaaaaaaaaaaaa"].to_pydatetime() == dt.datetime(2026, 8, 30, 10, 1, 0, 187500, tzinfo=UTC)
    assert ts["gnt-bbbbbbbbbbbbbbbbbbbbbbbb"].to_pydatetime() == dt.datetime(2026, 8, 30, 10, 2, 1, 999050, tzinfo=UTC)
    assert ts["cmpl-dddddddddddddddddddddddd"].to_pydatetime() == dt.datetime(2026, 8, 30, 10, 4, 1, 500000, tzinfo=UTC)
    # candidates: prompt length unknown; the 400 and the 502 were not served (counted by outcome)
    assert (r.summary["undecidable"], r.summary["rejected"], r.summary["failed"]) == (4, 1, 1)


def test_router_times_are_utc_whatever_source_tz_says(run_fixture):
    r = run_fixture("sglang_router", source_tz="America/Chicago")
    ts = r.case.con.execute("SELECT ts FROM requests WHERE request_id = 'chatcmpl-ffffffffffffffffffffffff'").fetchone()[0]
    assert ts == dt.datetime(2026, 8, 30, 10, 6, tzinfo=UTC)
    assert any("UTC by definition" in n for s in r.sources for n in (s["notes"] or []))


def test_vllm_yearless_stamps_and_candidates(run_fixture):
    r = run_fixture("vllm", source_tz="Asia/Tokyo")
    assert counts_of(r) == _expected_counts("vllm")
    assert affected_ids(r) == set()
    # 08-31 21:00:00 JST -> 2026 (the window's year) 12:00:00Z; Received + DEBUG details + Generated lines are
    # one request, and the details line's token-id list (4 ids) is its prompt length
    v1 = r.case.con.execute("SELECT ts, outcome, n_records, prompt_tokens FROM requests WHERE request_id = 'chatcmpl-v1'").fetchone()
    assert v1 == (dt.datetime(2026, 8, 31, 12, 0, tzinfo=UTC), "served", 3, 4)
    # an old-release INFO line carries the ids too
    assert r.case.con.execute("SELECT prompt_tokens FROM requests WHERE request_id = 'chatcmpl-v2'").fetchone()[0] == 2
    v2 = r.case.con.execute("SELECT outcome FROM requests WHERE request_id = 'chatcmpl-v2'").fetchone()[0]
    assert v2 == "aborted"
    assert r.case.con.execute("SELECT outcome FROM requests WHERE request_id = 'chatcmpl-v5'").fetchone()[0] == "rejected"
    q = r.case.con.execute("SELECT source_line, reason FROM quarantine").fetchall()
    assert q == [(10, "year-less timestamp is not a valid date near the window: 02-29 10:00:00")]
    skipped = dict(r.case.con.execute("SELECT reason, n FROM source_counts WHERE kind = 'skip'").fetchall())
    assert skipped["access line without time or request id: POST /v1/chat/completions 400"] == 1


def test_vllm_year_option_wins_over_the_window(run_fixture):
    r = run_fixture("vllm", source_tz="Asia/Tokyo", year=2025)
    ts = r.case.con.execute("SELECT ts FROM requests WHERE request_id = 'chatcmpl-v1'").fetchone()[0]
    assert ts == dt.datetime(2025, 8, 31, 12, 0, tzinfo=UTC)
    # 02-29 does not exist in 2025 either
    assert r.case.con.execute("SELECT reason FROM quarantine").fetchone()[0].startswith(
        "year-less timestamp is not a valid date in 2025")


def test_hour_only_times_judged_the_same_with_the_pool_in_effect(run_fixture, tmp_path):
    """triage --startup (pool per node and time) keeps triage/hits' treatment of hour-granular times."""
    plain = categories(run_fixture("sglang_metrics", source_tz="America/Chicago"))
    startup = tmp_path / "startup" / "decode-1.log"   # a start-up log of the node, with the spec's own pool
    startup.parent.mkdir(parents=True)
    startup.write_text(
        "[2026-08-01 00:00:00] server_args=ServerArgs(model_path='zai-org/GLM-5.3', context_length=1048576, "
        "served_model_name='zai-org/GLM-5.3', page_size=64, disaggregation_mode='null')\n"
        "[2026-08-01 00:00:05 TP0] max_total_num_tokens=681280, chunked_prefill_size=16384, max_prefill_tokens=16384, "
        "max_running_requests=64, context_len=1048576, available_gpu_mem=8.93 GB\n")
    r = run_fixture("sglang_metrics", source_tz="America/Chicago", startup=[startup])
    assert r.summary["oversized_prompt"]["threshold"].startswith("pool in effect")
    assert categories(r) == plain
    assert {k for k, v in categories(r).items() if v == "possibly-affected"} == POSSIBLY_AFFECTED


def test_vllm_token_id_lists_cut_by_max_log_len_give_no_length(tmp_path, run_fixture):
    """--max-log-len N cuts every logged token-id list to N ids (RequestLogger.log_inputs): a list of N ids may be
    a longer prompt's first N, so it gives no length; a shorter one is whole."""
    log = tmp_path / "vllm-node-7" / "api_server.log"
    log.parent.mkdir(parents=True)
    log.write_text("\n".join([
        "(APIServer pid=5) INFO 08-31 20:59:00 [api_utils.py:286] non-default args: {'model': '/m', "
        "'served_model_name': ['zai-org/GLM-5.3'], 'enable_log_requests': True, 'max_log_len': 4}",
        "(APIServer pid=5) DEBUG 08-31 21:00:00 [request_logger.py:55] Request cmpl-a-0 details: prompt: None, "
        "prompt_token_ids: [1, 2, 3, 4], prompt_embeds shape: None.",
        "(APIServer pid=5) DEBUG 08-31 21:00:00 [request_logger.py:55] Request cmpl-b-0 details: prompt: None, "
        "prompt_token_ids: [1, 2, 3], prompt_embeds shape: None.",
    ]) + "\n")
    r = run_fixture(paths=[log], source_tz="UTC")
    got = dict(r.case.con.execute("SELECT request_id, prompt_tokens FROM requests").fetchall())
    assert got == {"cmpl-a": None, "cmpl-b": 3}
    assert any("--max-log-len 4 (line 1)" in n for n in r.sources[0]["notes"])
