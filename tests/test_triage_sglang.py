"""SGLang request logs (JSON and text): every trap a responder meets, with the affected set worked out by hand.

Host zone America/Chicago is UTC-5 (CDT) throughout the window. Window: 2026-08-27T00:00:00Z ..
2026-09-09T19:40:00Z inclusive. Pool 681,280; the engine's limit is min(1048575, 681279) - 5 = 681,274.
"""
from __future__ import annotations

import pytest

import kvir
from kvir.core.errors import InputError
from tests.conftest import ids, sglang_finished as fin, sglang_received as recv, write

CHI = "America/Chicago"

# (finish time local, e2e latency) -> start UTC, worked out by hand (local + 5 h - latency):
JSON_LINES = [
    recv("2026-08-26T19:00:10.000000", "r1"),                            # 1 received: not a request
    fin("2026-08-26T19:00:30", "r1", 681281, latency=20.0),             # 2 start 2026-08-27T00:00:10Z: in, > pool
    fin("2026-08-26T18:59:59", "r2", 900000, latency=1.0),              # 3 start 08-26T23:59:58Z: before window
    fin("2026-08-30T10:00:00", "r3", 681280, latency=2.0),              # 4 = pool: public no, engine yes
    fin("2026-08-30T10:00:01", "r4", 681279, latency=2.0),              # 5 engine yes (>= 681,274)
    fin("2026-08-30T10:00:02", "r5", "681281", latency=2.0),            # 6 number as a string: affected
    fin("2026-08-30T10:00:03", "r6", 700000, ftype="abort", status=400),  # 7 rejected correctly
    fin("2026-08-30T10:00:04", "r7", 800000, ftype="abort", status=None),  # 8 client abort
    fin("2026-08-30T10:00:05", "r8", 750000, ftype="abort", status=500),  # 9 failed (5xx)
    '{"timestamp": "2026-08-30T10:00:06", "event": "request.finished", "rid": "r',   # 10 truncated line
    fin("2026-13-45T00:00:00", "r9", 700000),                           # 11 impossible date
    '{"timestamp": "2026-08-30T10:00:07", "event": "request.finished", "rid": "r10", "out": {"meta_info": {"id": "r10", "e2e_latency": 1.0}}}',  # 12 no prompt_tokens: length unknown
    fin("2026-09-09T14:40:00", "r11", 681281, latency=0.0),             # 13 start = window_end exactly: in
    fin("2026-09-09T14:40:00.000001", "r12", 681281, latency=0.0),      # 14 one microsecond after: out
    "",                                                                  # 15 blank
    fin("2026-08-30T10:00:08", "r13", 950000, ftype=None),              # 16 finish_reason null: outcome unknown
]


@pytest.fixture
def json_log(tmp_path):
    return write(tmp_path / "decode-7.jsonl", "\n".join(JSON_LINES) + "\n")


def test_json_log_public_rule(spec, json_log, tmp_path):
    r = kvir.triage(spec(), [json_log], out=tmp_path / "case", source_tz=CHI)
    assert ids(r.affected) == {"r1", "r5", "r11"}
    s = r.summary
    # undecidable: r13 (finish_reason null) and r10 (no prompt_tokens: kept with an unknown length, as SGLang's
    # own abort of a request in flight logs it; issue #14)
    assert (s["rejected"], s["aborted"], s["failed"], s["undecidable"]) == (1, 1, 1, 2)
    assert s["other_rule_adds"] == 2 and s["other_rule_drops"] == 0          # r3, r4
    src = r.sources[0]
    assert (src["read"], src["parsed"], src["quarantined"], src["requests"], src["skipped"]) == (16, 14, 2, 12, 2)
    q = r.quarantine
    assert q["source_line"].tolist() == [10, 11]
    assert q["reason"].tolist()[0] == "malformed JSON"
    assert q["reason"].tolist()[1].startswith("unparseable timestamp")
    assert src["served_model_source"].startswith("assumed") and src["served_model"] == "@cf/zai-org/glm-5.3"
    a = r.affected.set_index("request_id")
    assert str(a.loc["r1", "ts"]) == "2026-08-27 00:00:10+00:00"
    assert a.loc["r1", "source_line"] == 2 and a.loc["r1", "decode_node"] == "decode-7"


def test_json_log_engine_rule(spec, json_log, tmp_path):
    r = kvir.triage(spec("engine"), [json_log], out=tmp_path / "case", source_tz=CHI)
    assert ids(r.affected) == {"r1", "r3", "r4", "r5", "r11"}
    assert r.summary["other_rule_drops"] == 2 and r.summary["other_rule_adds"] == 0
    assert r.summary["rule"].startswith("engine: prompt_tokens >= 681,274")


def test_served_model_option_and_other_models(spec, json_log, tmp_path):
    r = kvir.triage(spec(), [json_log], out=tmp_path / "case", source_tz=CHI, served_model="zai-org/GLM-5.3-Air")
    assert r.sources[0]["served_model_source"] == "--served-model" and len(r.affected) == 0   # glm-5.3-air
    r = kvir.triage(spec(), [json_log], out=tmp_path / "case", source_tz=CHI, served_model="zai-org/GLM-5.3")
    assert ids(r.affected) == {"r1", "r5", "r11"}


def test_naive_engine_log_without_zone_is_refused(spec, json_log, tmp_path):
    with pytest.raises(InputError) as e:
        kvir.triage(spec(), [json_log], out=tmp_path / "case")
    assert "decode-7.jsonl" in str(e.value) and "--source-tz" in str(e.value)


def test_fixed_offset_zone(spec, tmp_path):
    # +05:30 has no whole-hour Etc zone: kvir applies the offset itself
    log = write(tmp_path / "d.jsonl", fin("2026-08-27T05:30:05", "x1", 700000, latency=1.0) + "\n"
                + fin("2026-08-27T05:29:59", "x2", 700000, latency=0.0) + "\n")
    r = kvir.triage(spec(), [log], out=tmp_path / "case", source_tz="+05:30")
    assert ids(r.affected) == {"x1"}            # x1 starts 00:00:04Z; x2 at 2026-08-26T23:59:59Z


def test_dst_fold_is_quarantined_not_guessed(spec, tmp_path):
    # 2026-11-01 01:30 happens twice in Chicago (CDT then CST): ambiguous
    extra_window = spec().read_text().replace("2026-09-09T19:40:00Z", "2026-11-30T00:00:00Z")
    p = tmp_path / "incident.toml"
    p.write_text(extra_window)
    log = write(tmp_path / "d.jsonl", fin("2026-11-01T01:30:00", "amb", 700000, latency=0.0) + "\n"
                + fin("2026-03-08T02:30:00", "gap", 700000, latency=0.0) + "\n"
                + fin("2026-11-01T03:30:00", "ok", 700000, latency=0.0) + "\n")
    r = kvir.triage(p, [log], out=tmp_path / "case", source_tz=CHI)
    reasons = r.quarantine["reason"].tolist()
    assert any("ambiguous local time" in x for x in reasons)
    assert any("nonexistent local time" in x for x in reasons)
    assert ids(r.affected) == {"ok"}


TEXT_PREFILL = """\
[2026-08-26 17:00:00] server_args=ServerArgs(model_path='zai-org/GLM-5.3-FP8', context_length=1048576, served_model_name='zai-org/GLM-5.3', page_size=64, disaggregation_mode='prefill', kv_canary='off')
[2026-08-26 17:01:00 TP0] max_total_num_tokens=681280, chunked_prefill_size=16384, max_prefill_tokens=16384, max_running_requests=64, context_len=1048576, available_gpu_mem=8.93 GB
[2026-08-30 10:00:00] Receive: obj=GenerateReqInput(rid='p1', stream=True, bootstrap_host='10.0.0.1', bootstrap_port=8998, bootstrap_room=42)
[2026-08-30 10:00:00 TP0] Input length (700000 tokens) exceeds the maximum allowed length (681274 tokens). Use a shorter input or enable --allow-auto-truncate., self.rid='p1'
[2026-08-30 10:00:01] Finish: obj=GenerateReqInput(rid='p1', stream=True, bootstrap_host='10.0.0.1', bootstrap_port=8998, bootstrap_room=42), out={'meta_info': {'id': 'p1', 'finish_reason': {'type': 'length', 'length': 0}, 'prompt_tokens': 1, 'completion_tokens': 0, 'cached_tokens': 0, 'e2e_latency': 0.5}}
Traceback (most recent call last):
[2026-08-30 10:05:00] Finish: obj=GenerateReqInput(rid='p2', bootstrap_room=43), out={'meta_info': {'id': 'p2', 'finish_reason': {'type': 'length', 'length': 1}, 'prompt_tokens': 5000, 'completion_tokens': 1, 'cached_tokens': 0, 'e2e_latency': 0.2}}
"""
TEXT_DECODE = """\
[2026-08-26 17:05:00] server_args=ServerArgs(model_path='zai-org/GLM-5.3-FP8', context_length=1048576, served_model_name='zai-org/GLM-5.3', disaggregation_mode='decode')
[2026-08-30 10:02:00 DP0 TP0] Finish: obj=GenerateReqInput(rid='d1', text='ignore this: bootstrap_room=99 \\'prompt_tokens\\': 3', bootstrap_room=42), out={'meta_info': {'id': 'd1', 'finish_reason': {'type': 'stop', 'matched': 2}, 'prompt_tokens': 700000, 'completion_tokens': 55, 'cached_tokens': 0, 'e2e_latency': 120.25}}
[2026-08-30 10:02:00 DP0 TP0] Finish: obj=GenerateReqInput(rid='d1', text='ignore this: bootstrap_room=99 \\'prompt_tokens\\': 3', bootstrap_room=42), out={'meta_info': {'id': 'd1', 'finish_reason': {'type': 'stop', 'matched': 2}, 'prompt_tokens': 700000, 'completion_tokens': 55, 'cached_tokens': 0, 'e2e_latency': 120.25}}
[2026-08-30 10:06:00] Finish: obj=GenerateReqInput(rid='d2', bootstrap_room=43), out={'meta_info': {'id': 'd2', 'finish_reason': {'type': 'stop', 'matched': 2}, 'prompt_tokens': 5000, 'completion_tokens': 9, 'cached_tokens': 0, 'e2e_latency': 60.0}}
[2026-08-30 10:07:00] Finish: obj=GenerateReqInput(rid='d3'), out={'meta_info': {'id': 'd3', 'finish_reason': {'type': 'stop'
"""
TEXT_AIR = """\
[2026-08-26 17:05:00] server_args=ServerArgs(model_path='zai-org/GLM-5.3-Air', served_model_name='zai-org/GLM-5.3-Air', disaggregation_mode='null')
[2026-08-30 10:06:00] Finish: obj=GenerateReqInput(rid='air1'), out={'meta_info': {'id': 'air1', 'finish_reason': {'type': 'stop', 'matched': 2}, 'prompt_tokens': 900000, 'completion_tokens': 9, 'cached_tokens': 0, 'e2e_latency': 10.0}}
"""


def test_text_logs_pd_pair_duplicates_and_models(spec, tmp_path):
    p = write(tmp_path / "engine" / "prefill-2" / "server.log", TEXT_PREFILL)
    d = write(tmp_path / "engine" / "decode-1" / "server.log", TEXT_DECODE)
    a = write(tmp_path / "engine" / "air-0" / "server.log", TEXT_AIR)
    r = kvir.triage(spec(), [tmp_path / "engine"], out=tmp_path / "case", source_tz=CHI)
    # one request from the PD pair (room 42) logged three times (prefill + decode twice): decode's id wins
    assert ids(r.affected) == {"d1"}
    row = r.affected.iloc[0]
    assert row["prefill_tokens"] == 1 and row["prompt_tokens"] == 700000       # the placeholder signature
    assert (row["prefill_node"], row["decode_node"]) == ("prefill-2", "decode-1")
    # decode finished 10:02:00 CDT = 15:02:00Z; start = end - 120.25 s = 14:59:59.75Z (the prefill record
    # starts later, 15:00:00.5Z: the request's start is the earliest any record gives)
    assert str(row["ts"]) == "2026-08-30 14:59:59.750000+00:00"
    by = {s["label"]: s for s in r.sources}
    assert by[str(p)]["served_model"] == "zai-org/GLM-5.3" and by[str(p)]["role"] == "prefill"
    assert by[str(a)]["served_model"] == "zai-org/GLM-5.3-Air"                # not an alias: not affected
    # the truncated Finish line is quarantined; Receive, ERROR, traceback and start-up lines are counted
    assert by[str(d)]["quarantined"] == 1 and by[str(p)]["quarantined"] == 0
    # the scheduler's rejection line of p1 is a record too (700,000 tokens: its Finish says the stub's 1)
    assert by[str(p)]["read"] == 7 and by[str(p)]["requests"] == 3 and by[str(p)]["skipped"] == 4
    c = r.case.con
    # requests: the room-42 pair, the room-43 pair, air1 (d3 quarantined)
    assert c.execute("SELECT count(*) FROM requests").fetchone()[0] == 3
    # prefill Finish + prefill rejection line (it joins room 42 by its rid) + decode twice
    assert c.execute("SELECT n_records FROM requests WHERE request_id = 'd1'").fetchone()[0] == 4
