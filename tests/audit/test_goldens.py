"""Each published build's own start-up line (tests/fixtures/sglang/golden/, printed by the wheel's ServerArgs
through its configure_logger) goes through `kvir audit`, with every rule's outcome asserted.

The start: the golden dump (a PD prefill or decode node of the incident: context 1,048,576, page 64,
kv_canary 'none' where the build has the field, disaggregation_enable_kv_checksum False where it has it),
then the build's own pool line (pool 681,280 on prefill, 2,097,152 on decode), 0.5.23's `KV pool holds`
warning where the pool is below the context, no environment dump, no version line, no time zone.

Expected values, worked out by hand from the wheels (toolkit/rules/builds.toml rows):
  build     which builds the dump allows: repr up to 0.5.18, dict 0.5.19-0.5.21, redacted dict from 0.5.22,
            narrowed by fields that first appear (kv_canary 0.5.13, disaggregation_decode_extra_slots 0.5.14,
            dcp_size 0.5.15, optimistic_prefill_attempts 0.5.16, dwdp_size 0.5.17,
            disaggregation_decode_retraction_backup 0.5.18, return_input_ids 0.5.20,
            disaggregation_enable_kv_checksum 0.5.21, enable_paged_experts 0.5.23) or disappear
            (enable_prefill_context_parallel after 0.5.19, speculative_skip_dp_mlp_sync after 0.5.22);
            post releases have the fields of their release, so they stay in one range with it
  KVA004    fail (high) up to 0.5.19, which forward and transfer the stub; none from 0.5.20
  KVA001    prefill: pool 681,280 < context: critical where the stub is transferred, medium from 0.5.20
  KVA005    fail: no such flag before 0.5.21; 'off' (False in the dump) from 0.5.21
  KVA006    fail: no such flag before 0.5.13; kv_canary='none' from 0.5.13
  KVA007    decode: the build has no deferred release up to 0.5.18 (fail); default False in 0.5.19-0.5.20
            (unknown: the environment is not shown); default True from 0.5.21 (no finding)
  KVA008    prefill: no SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES up to 0.5.19 (fail); default 0 from 0.5.20
            (unknown: the environment is not shown)
  KVA012    fail: nothing can verify requests (checksum off or absent, canary none or absent)
"""
from __future__ import annotations

import json

import pytest

from kvir.audit import audit

from .conftest import one, rows, write
from .grammar import GOLDEN, golden_message, pool_line, pool_warning

META = json.loads((GOLDEN / "meta.json").read_text())
BUILDS = list(META["builds"])
RANGE = {"0.5.11": "0.5.11", "0.5.12": "0.5.12–0.5.12.post1", "0.5.12.post1": "0.5.12–0.5.12.post1",
         "0.5.13": "0.5.13–0.5.13.post1", "0.5.13.post1": "0.5.13–0.5.13.post1", "0.5.14": "0.5.14",
         "0.5.15": "0.5.15–0.5.15.post1", "0.5.15.post1": "0.5.15–0.5.15.post1", "0.5.16": "0.5.16",
         "0.5.17": "0.5.17", "0.5.18": "0.5.18", "0.5.19": "0.5.19", "0.5.20": "0.5.20", "0.5.21": "0.5.21",
         "0.5.22": "0.5.22", "0.5.23": ">= 0.5.23"}
LEAKS = set(BUILDS[:BUILDS.index("0.5.20")])
NO_CANARY = {"0.5.11", "0.5.12", "0.5.12.post1"}
NO_CHECKSUM = set(BUILDS[:BUILDS.index("0.5.21")])
NO_DEFERRED = set(BUILDS[:BUILDS.index("0.5.19")])
DEFERRED_OFF = {"0.5.19", "0.5.20"}
NO_BATCH_CAP = set(BUILDS[:BUILDS.index("0.5.20")])


def test_the_fixtures_are_the_builds_read():
    from kvir.rules.builds import TABLE

    assert BUILDS == list(TABLE.read)
    for v in BUILDS:
        line = (GOLDEN / f"{v}.server_args.log").read_text()
        assert line.startswith("[2026-12-01 ") and line.count("\n") == 1
        repr_shape = BUILDS.index(v) < BUILDS.index("0.5.19")
        assert golden_message(v).startswith("server_args=ServerArgs(" if repr_shape else "server_args={")
        assert ("'watermark_key': '<redacted>'" in line) == (BUILDS.index(v) >= BUILDS.index("0.5.22"))


def node_log(tmp_path, v: str, role: str) -> str:
    msg = golden_message(v)
    if role == "decode":
        msg = msg.replace("disaggregation_mode='prefill'", "disaggregation_mode='decode'").replace(
            "'disaggregation_mode': 'prefill'", "'disaggregation_mode': 'decode'")
    pool = 681_280 if role == "prefill" else 2_097_152
    lines = [f"[2026-12-01 10:00:00] {msg}", f"[2026-12-01 10:01:10 TP0] {pool_line(pool, 1_048_576)}"]
    if v == "0.5.23" and pool < 1_048_576:
        lines.insert(1, f"[2026-12-01 10:01:09 TP0] {pool_warning(pool, 1_048_576)}")
    return write(tmp_path / f"glm-{role}-{name(v)}.log", "\n".join(lines))


def name(v: str) -> str:
    return v.replace(".", "_")


def statuses(r, node: str) -> dict[str, tuple[str, str]]:
    return {f["rule_id"]: (f["status"], f["severity"]) for f in rows(r.findings, node=node)}


@pytest.mark.parametrize("v", BUILDS)
def test_golden_prefill_start_every_rule(tmp_path, v):
    p = node_log(tmp_path, v, "prefill")
    r = audit([p])                                       # no zone: the audit needs no clock
    node = f"glm-prefill-{name(v)}"
    cfg = one(r.node_configs, node=node)
    assert cfg["build"] == RANGE[v]
    assert cfg["build_evidence"].startswith("inferred from the start-up log: server_args dump shaped")
    assert (cfg["pool_tokens"], cfg["context_len"], cfg["max_req_input_len"]) == (681_280, 1_048_576, 681_274)
    assert cfg["role"] == "prefill" and cfg["page_size"] == 64 and cfg["served_model"] == "zai-org/GLM-5.3"
    assert cfg["ts_zone"] == "host-local, zone unknown" and str(cfg["ts_host"]) == "2026-12-01 10:00:00"
    assert cfg["stub_transferred"] == (v in LEAKS)
    expected = {
        "KVA001": ("fail", "critical" if v in LEAKS else "medium"),
        "KVA005": ("fail", "medium"), "KVA006": ("fail", "low"),
        "KVA008": ("fail" if v in NO_BATCH_CAP else "unknown", "medium"),
        "KVA012": ("fail", "medium"),
    }
    if v in LEAKS:
        expected["KVA004"] = ("fail", "high")
    assert statuses(r, node) == expected
    f = {x["rule_id"]: x["message"] for x in rows(r.findings, node=node)}
    assert ("has no --disaggregation-enable-kv-checksum" in f["KVA005"]) == (v in NO_CHECKSUM)
    assert ("has no --kv-canary" in f["KVA006"]) == (v in NO_CANARY)
    assert ("kv_canary='none'" in f["KVA006"]) == (v not in NO_CANARY)
    if v in LEAKS:
        assert f"SGLang {RANGE[v]} (inferred from the start-up log" in f["KVA004"]
        assert "forwards the 1-token stub" in f["KVA004"] and "older than" not in f["KVA004"]
    assert not any("older than" in m for m in f.values())
    assert list(r.problems["problem"].str[:42]) == ["times are host-local and no zone was given"]


@pytest.mark.parametrize("v", BUILDS)
def test_golden_decode_start_deferred_release(tmp_path, v):
    r = audit([node_log(tmp_path, v, "decode")])
    node = f"glm-decode-{name(v)}"
    got = statuses(r, node)
    assert "KVA001" not in got                            # the decode pool holds the context
    if v in NO_DEFERRED:
        assert got["KVA007"] == ("fail", "medium")
        assert "has no deferred decode KV release" in one(r.findings, node=node, rule_id="KVA007")["message"]
    elif v in DEFERRED_OFF:
        assert got["KVA007"] == ("unknown", "medium")
        assert "defaults it to False" in one(r.findings, node=node, rule_id="KVA007")["message"]
    else:
        assert "KVA007" not in got                        # on by default from 0.5.21
    assert "KVA008" not in got                            # a decode node issues no transfers


# the first 3,000 characters of each dump hold these build-placing keys (read off the fixtures):
#   0.5.18  repr; dwdp_size (>= 0.5.17), enable_prefill_context_parallel (<= 0.5.19)  -> 0.5.17-0.5.18, transfers
#   0.5.19  dict or redacted dict (>= 0.5.19: the redaction marker may lie past the cut);
#           prefill_decode_interval (>= 0.5.19), enable_prefill_context_parallel (<= 0.5.19) -> 0.5.19, transfers
#   0.5.21  dict or redacted dict; nothing else narrows it                    -> >= 0.5.19: unknown (spans the fix)
#   0.5.22  attn_dp_size (>= 0.5.22)                                          -> >= 0.5.22: does not transfer
CUT = {"0.5.18": ("0.5.17–0.5.18", True, "fail"), "0.5.19": ("0.5.19", True, "fail"),
       "0.5.21": (">= 0.5.19", None, "unknown"), "0.5.22": (">= 0.5.22", False, None)}


@pytest.mark.parametrize("v", list(CUT))
def test_a_cut_dump_is_read_as_far_as_it_goes(tmp_path, v):
    """A log shipper cut the dump after 3,000 characters: its shape and the keys before the cut still
    place the build; no absent key counts; a range across the fix is unknown, never 'old'."""
    msg = golden_message(v)[:3000]
    p = write(tmp_path / "glm-prefill-cut.log", f"[2026-12-01 10:00:00] {msg}\n"
                                                 f"[2026-12-01 10:01:10 TP0] {pool_line(681_280, 1_048_576)}")
    r = audit([p])
    cfg = one(r.node_configs, node="glm-prefill-cut")
    assert cfg["server_args_truncated"] and cfg["context_len"] == 1_048_576
    build, transfers, kva004 = CUT[v]
    assert cfg["build"] == build
    assert (pd_na(cfg["stub_transferred"]) if transfers is None else cfg["stub_transferred"] == transfers)
    got = rows(r.findings, node="glm-prefill-cut", rule_id="KVA004")
    assert [f["status"] for f in got] == ([] if kva004 is None else [kva004])
    assert not any("older than" in f["message"] for f in got)


def pd_na(x) -> bool:
    import pandas as pd

    return x is None or x is pd.NA or (isinstance(x, float) and x != x)


def test_a_future_dump_with_unknown_fields_is_read(tmp_path):
    """A build after 0.5.23 adds fields and changes values: unknown keys are ignored, known ones read."""
    msg = golden_message("0.5.23").replace("server_args={", "server_args={'future_field': {'a': [1, 2]}, "
                                           "'another_new_knob': 'x', ", 1)
    p = write(tmp_path / "glm-prefill-next.log", f"[2026-12-01 10:00:00] {msg}\n"
                                                  f"[2026-12-01 10:01:10 TP0] {pool_line(681_280, 1_048_576)}")
    cfg = one(audit([p]).node_configs, node="glm-prefill-next")
    assert cfg["build"] == ">= 0.5.23" and cfg["stub_transferred"] == False  # noqa: E712
    assert cfg["context_len"] == 1_048_576 and cfg["kv_canary"] == "none" and cfg["kv_checksum"] == False  # noqa: E712
