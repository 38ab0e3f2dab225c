"""SGLang start-up logs written by hand in the shapes SGLang's builds print (every historical shape of the
pool line, the KV allocation lines, the server_args dump, rank tags, container stamps, truncation).
Expected values are worked out by hand in the comments: max_req_input_len = min(context-1, pool-1) - 5."""
from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest

from kvir.audit import audit

from .conftest import one, rows

UTC = dt.timezone.utc


def ts(s: str) -> pd.Timestamp:
    return pd.Timestamp(s).tz_convert("UTC") if pd.Timestamp(s).tzinfo else pd.Timestamp(s, tz="UTC")


# 2025 H1 (v0.4.2+): eight TP ranks each print the MLA allocation and the pool line (older builds did).
TP8_2025H1 = "\n".join(
    [f"[2025-03-04 10:00:05 TP{r}] KV Cache is allocated. #tokens: 712400, KV size: 11.04 GB" for r in range(8)]
    + [f"[2025-03-04 10:00:06 TP{r}] max_total_num_tokens=712400, chunked_prefill_size=8192, max_prefill_tokens=16384, "
       f"max_running_requests=50, context_len=163840" for r in range(8)]
    + ["[2025-03-04 10:00:20] The server is fired up and ready to roll!"])


def test_tp_ranks_deduplicated_never_summed(logdir):
    p = logdir("dsv3-node.log", TP8_2025H1)
    r = audit([p], source_tz="UTC")
    cfg = one(r.node_configs, node="dsv3-node")
    assert cfg["pool_tokens"] == 712_400                     # not 8 x 712,400 = 5,699,200
    assert list(cfg["pool_values"]) == [712_400]
    assert list(cfg["rank_tags"]) == [f"TP{i}" for i in range(8)]
    assert cfg["context_len"] == 163_840
    assert cfg["max_req_input_len"] == 163_834               # min(163,839, 712,399) - 5
    assert cfg["kv_layout"] == "MLA"
    assert cfg["pool_source"] == "max_total_num_tokens line"
    assert cfg["evidence_line"] == 9                         # the first pool line (after 8 allocation lines)
    assert cfg["ts"] == ts("2025-03-04T10:00:05Z")           # the start's first configuration line
    assert cfg["engine"] == "sglang" and cfg["holds_context"]
    assert cfg["name_source"] == "file name"
    assert len(r.node_configs) == 1


def test_2024_shape_and_router_era_shape_without_context(logdir):
    # 2024 (v0.3-0.4.0): no chunked_prefill_size; context_len last.
    a = logdir("old-a.log", "[2024-09-01 08:00:00 TP0] max_total_num_tokens=56524, max_prefill_tokens=16384, "
                            "max_running_requests=2049, context_len=32768")
    # router era: context_len commented out of the line; the dump says context_length=None (derived).
    b = logdir("old-b.log", "[2024-05-01 08:00:00] server_args=ServerArgs(model_path='meta-llama/Llama-2-7b', "
                            "context_length=None, page_size=1, tp_size=1)\n"
                            "[2024-05-01 08:00:30 TP0] max_total_num_tokens=56524, max_prefill_tokens=16384, "
                            "max_running_requests=2049")
    r = audit([a, b], source_tz="+00:00")
    ca = one(r.node_configs, node="old-a")
    assert (ca["pool_tokens"], ca["context_len"], ca["max_req_input_len"]) == (56_524, 32_768, 32_762)
    cb = one(r.node_configs, node="old-b")
    assert cb["pool_tokens"] == 56_524
    assert pd.isna(cb["context_len"]) and pd.isna(cb["max_req_input_len"])
    assert pd.isna(cb["holds_context"])
    assert cb["served_model"] == "meta-llama/Llama-2-7b"      # no served_model_name: the model path
    assert cb["evidence_line"] == 2
    # context unknown: the pool/context rule is reported as unknown for old-b, never passed
    f = one(r.findings, rule_id="KVA001", node="old-b")
    assert f["status"] == "unknown"
    assert rows(r.findings, rule_id="KVA001", node="old-a") == []


PD_PREFILL_DP = """\
2026-08-27T03:10:00.123456789Z stdout F [2026-08-26 22:10:00] server_args=ServerArgs(model_path='zai-org/GLM-5.3-FP8', context_length=1048576, served_model_name='zai-org/GLM-5.3', page_size=64, tp_size=8, dp_size=2, enable_dp_attention=True, max_total_tokens=None, allow_auto_truncate=False, disaggregation_mode='prefill', disaggregation_transfer_backend='mooncake', disaggregation_enable_kv_checksum=True, kv_canary='log')
2026-08-27T03:11:13.500000000Z stdout F [2026-08-26 22:11:13 DP0 TP0] KV Cache is allocated. #tokens: 681280, KV size: 30.12 GB
2026-08-27T03:11:13.600000000Z stdout F [2026-08-26 22:11:13 DP1 TP4] KV Cache is allocated. #tokens: 681216, KV size: 30.11 GB
2026-08-27T03:11:16.000000000Z stdout F [2026-08-26 22:11:16 DP0 TP0] max_total_num_tokens=681280, chunked_prefill_size=16384, max_prefill_tokens=16384, max_running_requests=64, context_len=1048576, available_gpu_mem=8.93 GB
2026-08-27T03:11:16.100000000Z stdout F [2026-08-26 22:11:16 DP1 TP4] max_total_num_tokens=681216, chunked_prefill_size=16384, max_prefill_tokens=16384, max_running_requests=64, context_len=1048576, available_gpu_mem=8.91 GB
2026-08-27T03:11:16.200000000Z stdout F [2026-08-26 22:11:16] PD KV checksum enabled: level=2 buffers=4 sampled_per_req=64 row_bytes=512 signature=0x5eed
2026-08-27T03:11:25.000000000Z stdout F [2026-08-26 22:11:25] The server is fired up and ready to roll!
"""


def test_dp_attention_pd_prefill_with_container_stamps_needs_no_zone(logdir):
    # CRI container log: the RFC3339 stamp (UTC) is the time; no --source-tz needed.
    p = logdir("engine/glm-p0/server.log", PD_PREFILL_DP)
    r = audit([p])
    cfg = one(r.node_configs, node="glm-p0")                  # generic file name: the folder names the node
    assert cfg["name_source"] == "folder name"
    assert cfg["role"] == "prefill" and cfg["disaggregation_mode"] == "prefill"
    assert cfg["ts"] == ts("2026-08-27T03:10:00.123456Z")
    assert cfg["ts_source"] == "container runtime (with offset)"
    # each DP rank owns its pool: the smaller (binding) one is the node's, both are listed
    assert cfg["pool_tokens"] == 681_216
    assert list(cfg["pool_values"]) == [681_216, 681_280]
    assert list(cfg["rank_tags"]) == ["DP0 TP0", "DP1 TP4"]
    assert cfg["context_len"] == 1_048_576
    assert cfg["max_req_input_len"] == 681_210                # min(1,048,575, 681,215) - 5
    assert cfg["page_size"] == 64 and cfg["tp_size"] == 8 and cfg["dp_size"] == 2
    assert cfg["served_model"] == "zai-org/GLM-5.3"
    assert cfg["kv_checksum"] is True or cfg["kv_checksum"] == True  # noqa: E712  (from the dump)
    assert cfg["kv_checksum_source"] == "server_args line 1"    # no build prints a "PD KV checksum" line
    assert cfg["kv_canary"] == "log" and cfg["transfer_backend"] == "mooncake"
    assert cfg["ready_ts"] == ts("2026-08-27T03:11:25Z")
    assert cfg["evidence_line"] == 4
    kinds = {f["rule_id"] for f in rows(r.findings, node="glm-p0")}
    assert "KVA001" in kinds and "KVA005" not in kinds and "KVA006" not in kinds


def test_cri_split_server_args_is_joined(logdir):
    # containerd splits lines longer than its buffer into P records ended by an F record
    p = logdir("engine/glm-d0/server.log", "\n".join([
        "2026-08-27T03:15:00.000000000Z stdout P [2026-08-26 22:15:00] server_args=ServerArgs(model_path='zai-org/GLM-5.3-FP8', cont",
        "2026-08-27T03:15:00.000000000Z stdout P ext_length=1048576, page_size=64, disaggregation_mode='de",
        "2026-08-27T03:15:00.000000000Z stdout F code', kv_canary='off')",
        "2026-08-27T03:16:13.000000000Z stdout F [2026-08-26 22:16:13 TP0] max_total_num_tokens=1310720, chunked_prefill_size=16384, max_prefill_tokens=16384, max_running_requests=64, context_len=1048576, available_gpu_mem=9.10 GB",
    ]))
    r = audit([p])
    cfg = one(r.node_configs, node="glm-d0")
    assert cfg["role"] == "decode" and cfg["context_len"] == 1_048_576 and cfg["page_size"] == 64
    assert cfg["server_args_line"] == 1 and not cfg["server_args_truncated"]
    assert cfg["pool_tokens"] == 1_310_720 and cfg["evidence_line"] == 4


def test_restarts_with_and_without_a_dump_are_separate_starts(logdir):
    p = logdir("mix-1.log", "\n".join([
        "[2026-09-01 10:00:00] server_args=ServerArgs(model_path='m', context_length=131072, disaggregation_mode='null')",
        "[2026-09-01 10:01:00 TP0] KV Cache is allocated. #tokens: 100000, K size: 3.00 GB, V size: 3.00 GB",
        "[2026-09-01 10:01:02 TP0] max_total_num_tokens=100000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=32, context_len=131072, available_gpu_mem=4.00 GB",
        "[2026-09-02 09:00:00] server_args=ServerArgs(model_path='m', context_length=131072, disaggregation_mode='null')",
        "[2026-09-02 09:01:02 TP0] max_total_num_tokens=200000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=32, context_len=131072, available_gpu_mem=4.00 GB",
        # a third start whose dump was lost (log cut): the same rank prints its pool line again
        "[2026-09-03 09:01:02 TP0] max_total_num_tokens=300000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=32, context_len=131072, available_gpu_mem=4.00 GB",
    ]))
    r = audit([p], source_tz="Europe/Berlin")                 # CEST, UTC+2
    starts = r.node_configs.sort_values("ts")
    assert starts["pool_tokens"].tolist() == [100_000, 200_000, 300_000]
    assert starts["ts"].tolist() == [ts("2026-09-01T08:00:00Z"), ts("2026-09-02T07:00:00Z"), ts("2026-09-03T07:01:02Z")]
    assert starts["ts_end"].tolist()[:2] == [ts("2026-09-02T07:00:00Z"), ts("2026-09-03T07:01:02Z")]
    assert pd.isna(starts["ts_end"].tolist()[2])
    assert starts["is_current"].tolist() == [False, False, True]
    assert starts["evidence_line"].tolist() == [3, 5, 6]
    assert starts["role"].tolist() == ["mixed"] * 3
    # pool 100,000 < context 131,072 on the first start only (mixed node: medium)
    f = r.findings[r.findings.rule_id == "KVA001"]
    assert f["evidence_line"].tolist() == [3] and f["severity"].tolist() == ["medium"]


def test_truncated_lines_keep_complete_values_and_are_counted(logdir):
    p = logdir("trunc-prefill-0.log", "\n".join([
        "[2026-09-01 10:00:00] server_args=ServerArgs(model_path='m', context_length=1048576, disaggregation_mode='prefill', page_si",
        "[2026-09-01 10:01:02 TP0] max_total_num_tokens=681280, chunked_prefill_size=16384, max_prefill_tok",
    ]))
    r = audit([p], source_tz="UTC")
    cfg = one(r.node_configs, node="trunc-prefill-0")
    assert cfg["pool_tokens"] == 681_280                      # complete: followed by a comma
    assert cfg["context_len"] == 1_048_576                    # from the dump (complete pair)
    assert cfg["context_source"] == "server_args context_length"
    assert pd.isna(cfg["page_size"])                          # cut: not guessed
    assert cfg["server_args_truncated"] and cfg["truncated_lines"] == 2
    assert one(r.files, node="trunc-prefill-0")["truncated"] == 2
    probs = rows(r.problems, line=1) + rows(r.problems, line=2)
    assert [p_["problem"].split(":")[0] for p_ in probs] == ["truncated server_args line", "truncated pool line"]


def test_pool_line_cut_inside_a_number_is_not_trusted(logdir):
    # behind a log prefix a bare `max_total_num_tokens=N` is a cut line (only bench_one_batch prints it bare)
    p = logdir("cut-node.log", "[2026-09-01 10:01:02 TP0] KV Cache is allocated. #tokens: 681280, K size: 4.95 GB, V size: 4.95 GB\n"
                               "[2026-09-01 10:01:03 TP0] max_total_num_tokens=6812")
    r = audit([p], source_tz="UTC")
    cfg = one(r.node_configs, node="cut-node")
    assert cfg["pool_tokens"] == 681_280 and cfg["pool_source"] == "KV Cache is allocated line"
    assert cfg["truncated_lines"] == 1


def test_context_override_warning_env_dump_version_and_hostname(logdir):
    p = logdir("boot.txt", "\n".join([
        "HOSTNAME=glm53-decode-7",
        "export SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE=1",
        "[2026-09-01 10:00:00] SGLang version: 0.5.22",
        "[2026-09-01 10:00:00] server_args=ServerArgs(model_path='zai-org/GLM-5.3-FP8', context_length=1048576, disaggregation_mode='decode', disaggregation_enable_kv_checksum=False, kv_canary='raise')",
        "KV cache is forced as chunk cache for decode server",
        "[2026-09-01 10:00:01] Warning: User-specified context_length (1048576) is greater than the derived context_length (262144). This may lead to incorrect model outputs or CUDA errors. Note that the derived context_length may differ from max_position_embeddings in the model's config.",
        "[2026-09-01 10:01:02 TP0] max_total_num_tokens=1310720, chunked_prefill_size=16384, max_prefill_tokens=16384, max_running_requests=64, context_len=1048576, available_gpu_mem=9.00 GB",
    ]))
    r = audit([p], source_tz="UTC")
    cfg = one(r.node_configs)
    assert cfg["node"] == "glm53-decode-7" and cfg["name_source"] == "log: HOSTNAME= at line 1"
    assert cfg["version"] == "0.5.22"
    assert cfg["version_source"] == "a version line in the log (line 3; SGLang itself prints none)"
    assert cfg["deferred_release"] == True  # noqa: E712
    assert cfg["env_source"] == "deferred release: log line 2"
    assert pd.isna(cfg["transfer_batch_cap"])
    assert cfg["context_override"] and cfg["override_context"] == 1_048_576 and cfg["derived_context"] == 262_144
    assert cfg["kv_checksum"] == False and cfg["kv_canary"] == "raise"  # noqa: E712
    got = {(f["rule_id"], f["status"]) for f in r.findings.to_dict("records")}
    # fixed build, deferred release on, canary raise: the checksum and the override remain, and no
    # [canary] statistics line shows a request verified yet
    assert got == {("KVA005", "fail"), ("KVA010", "fail"), ("KVA012", "unknown")}


def test_prompt_text_in_request_lines_cannot_spoof_configuration(logdir):
    p = logdir("spoof-node.log", "\n".join([
        "[2026-09-01 10:01:02 TP0] max_total_num_tokens=2000000, chunked_prefill_size=16384, max_prefill_tokens=16384, max_running_requests=64, context_len=1048576, available_gpu_mem=9.00 GB",
        "[2026-09-01 11:00:00] Receive: obj=GenerateReqInput(rid='a', text='max_total_num_tokens=5, context_len=9 "
        "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE=1 Input length (9 tokens) exceeds the maximum allowed length (1 tokens)')",
    ]))
    r = audit([p], source_tz="UTC")
    cfg = one(r.node_configs)
    assert cfg["pool_tokens"] == 2_000_000 and pd.isna(cfg["deferred_release"])
    assert len(r.runtime_indicators) == 0
    assert one(r.files)["recognised"] == 1 and one(r.files)["lines_read"] == 2


def test_dst_and_naive_times(logdir):
    # 2026-11-01 01:30 happens twice in America/Chicago: refused as ambiguous, counted as a problem
    p = logdir("dst-node.log", "\n".join([
        "[2026-11-01 01:30:00] server_args=ServerArgs(model_path='m', context_length=8192)",
        "[2026-11-01 02:10:00 TP0] max_total_num_tokens=16384, max_prefill_tokens=16384, max_running_requests=8, context_len=8192",
    ]))
    r = audit([p], source_tz="America/Chicago")
    cfg = one(r.node_configs)
    assert cfg["ts"] == ts("2026-11-01T08:10:00Z")           # CST after the fold: UTC-6
    assert any("ambiguous local time" in x for x in r.problems["problem"])


@pytest.mark.parametrize("level", ["INFO", "WARNING"])
def test_2026_level_and_file_prefix(logdir, level):
    p = logdir("new-node.log", f"[2026-03-25 09:32:19] {level} scheduler.py:512: max_total_num_tokens=2042880, "
                               "chunked_prefill_size=16384, max_prefill_tokens=16384, max_running_requests=64, "
                               "context_len=1048576, available_gpu_mem=9.00 GB")
    cfg = one(audit([p], source_tz="UTC").node_configs)
    assert (cfg["pool_tokens"], cfg["context_len"], cfg["max_req_input_len"]) == (2_042_880, 1_048_576, 1_048_570)
