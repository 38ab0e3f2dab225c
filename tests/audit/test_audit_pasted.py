"""What people paste: excerpts without a clock, vLLM lines without their logger prefix, vLLM's CPU KV cache
line, `key=value` configuration blocks and launch commands, a /server_info JSON snapshot; and the canary's
and checksum's real lines (a healthy canary is verification evidence, never a violation).

Expected values worked out by hand: max_req_input_len = min(context-1, pool-1) - 5.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from kvir.audit import audit

from .conftest import one, rows, write
from .grammar import canary_stats, checksum_skipped, golden_message, pool_line, startup

REAL_VLLM = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "vllm-0.32.0-cpu" / "startup.log"


def test_vllm_lines_without_their_prefix(tmp_path):
    # pasted from an issue: the logger prefix cut off, no year, no zone
    p = write(tmp_path / "issue-1.log", "\n".join([
        "# GPU blocks: 27008",
        "Maximum concurrency for 131,072 tokens per request: 3.30x",
    ]))
    c = one(audit([p]).node_configs, node="issue-1")
    assert c["engine"] == "vllm" and c["pool_tokens"] == 27_008 * 16       # x vLLM's default block size 16
    assert c["context_len"] == 131_072 and c["holds_context"]
    p2 = write(tmp_path / "issue-2.log", "\n".join([
        "ValueError: To serve at least one request with the models's max seq len (262144), (24.00 GiB KV cache is "
        "needed, which is larger than the available KV cache memory (9.16 GiB). Based on the available memory, "
        "the estimated maximum model length is 100000. Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine.",
    ]))
    r = audit([p2])
    assert one(r.findings, node="issue-2")["rule_id"] == "KVA009"
    p3 = write(tmp_path / "issue-3.log", "ValueError: The model's max seq len (32768) is larger than the maximum number "
                                          "of tokens that can be stored in KV cache (16384). Try increasing "
                                          "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
    f = one(audit([p3]).findings, node="issue-3")
    assert f["rule_id"] == "KVA009" and "16384" in f["message"]


def test_real_vllm_cpu_startup_log_without_year_or_zone():
    """The verbatim start-up log of a real vLLM 0.32.0 CPU run: `CPU KV cache size: 1,048,576 tokens, Maximum
    concurrency for 2,048 tokens per request: 512.00x` on one line; times MM-DD without a year."""
    r = audit([REAL_VLLM])
    c = one(r.node_configs)
    assert (c["engine"], c["version"], c["pool_tokens"], c["context_len"]) == ("vllm", "0.32.0", 1_048_576, 2_048)
    assert c["max_concurrency"] == 512.0 and c["holds_context"]
    assert len(r.findings) == 0


def test_key_value_configuration_block_and_launch_command(tmp_path):
    p = write(tmp_path / "prefill-3.txt", "\n".join([
        "python -m sglang.launch_server --model-path zai-org/GLM-5.3 --disaggregation-mode prefill "
        "--context-length 1048576 --page-size 64 --tp-size 8 --kv-canary log",
        "max_total_num_tokens=681280",
    ]))
    c = one(audit([p]).node_configs, node="prefill-3")
    assert (c["disaggregation_mode"], c["context_len"], c["page_size"], c["tp_size"]) == ("prefill", 1_048_576, 64, 8)
    assert c["kv_canary"] == "log" and c["pool_tokens"] == 681_280 and c["max_req_input_len"] == 681_274
    assert c["build"] == "unknown"                       # a command line says nothing about the build
    p2 = write(tmp_path / "decode-9.txt", "\n".join(["context_length: 1048576", "disaggregation_mode=decode",
                                                      "disaggregation_enable_kv_checksum = true"]))
    r = audit([p2])
    c2 = one(r.node_configs, node="decode-9")
    assert (c2["role"], c2["context_len"], c2["kv_checksum"]) == ("decode", 1_048_576, True)
    assert pd.isna(c2["pool_tokens"])
    assert one(r.findings, node="decode-9", rule_id="KVA001")["status"] == "unknown"     # no pool: undecided


def test_server_info_json_names_the_running_build(tmp_path):
    """GET /server_info of a 0.5.21 prefill (resolved_dict() + scheduler info + version): it names the
    version; beside a start-up log of the same node it fixes that node's current build."""
    msg = golden_message("0.5.21")
    import ast

    info = ast.literal_eval(msg[len("server_args="):])
    info.update({"max_total_num_tokens": 681_280, "max_req_input_len": 681_274, "version": "0.5.21",
                 "internal_states": [{"max_total_num_tokens": 681_280}]})
    write(tmp_path / "glm-prefill-7" / "server_info.json", json.dumps(info))
    r = audit([tmp_path / "glm-prefill-7"])
    c = one(r.node_configs, node="glm-prefill-7")
    assert c["version"] == "0.5.21" and c["version_source"].startswith("/server_info ")
    assert (c["pool_tokens"], c["context_len"], c["role"]) == (681_280, 1_048_576, "prefill")
    assert c["build"] == "0.5.21" and c["stub_transferred"] == False  # noqa: E712
    assert {f["rule_id"] for f in rows(r.findings, node="glm-prefill-7")} >= {"KVA001", "KVA005", "KVA006"}
    assert "KVA004" not in set(r.findings["rule_id"])
    # beside the node's start-up log (a cut dump that alone spans the fix): the snapshot decides
    write(tmp_path / "glm-prefill-7" / "server.log",
          f"[2026-09-09 14:40:00] {msg[:3000]}\n[2026-09-09 14:41:10 TP0] {pool_line(681_280, 1_048_576)}\n")
    r2 = audit([tmp_path / "glm-prefill-7"])
    c2 = one(r2.node_configs, node="glm-prefill-7")
    assert c2["version"] == "0.5.21" and "(the running server)" in c2["version_source"]
    assert c2["build_evidence"].startswith("version 0.5.21 from /server_info")
    assert "KVA004" not in set(r2.findings["rule_id"])


def test_healthy_canary_is_evidence_and_skipped_checksum_is_a_failure(tmp_path):
    p = write(tmp_path / "glm-decode-5.log", "\n".join(
        startup("0.5.23", "2026-10-01 08:00:00", mode="decode", context=1_048_576, pool=2_097_152, canary="log",
                checksum=True)
        + [canary_stats("2026-10-01 08:10:00", 100, 0, 0), canary_stats("2026-10-01 08:20:00", 200, 65_536, 0)]))
    r = audit([p])
    assert rows(r.runtime_indicators, node="glm-decode-5") == []        # violations=0: nothing to report
    c = one(r.node_configs, node="glm-decode-5")
    assert (c["canary_protected_tokens"], c["canary_violations"], c["canary_verified_line"]) == (65_536, 0, 6)
    assert rows(r.findings, node="glm-decode-5") == []                  # verified, fixed build, flags on
    p2 = write(tmp_path / "glm-decode-6.log", "\n".join(
        startup("0.5.23", "2026-10-01 08:00:00", mode="decode", context=1_048_576, pool=2_097_152, canary="log",
                checksum=True)
        + [canary_stats("2026-10-01 08:20:00", 200, 65_536, 0), checksum_skipped("2026-10-01 08:21:00")]))
    f = one(audit([p2]).findings, node="glm-decode-6")
    assert (f["rule_id"], f["status"], f["severity"]) == ("KVA012", "fail", "high")
    assert "admitted unverified" in f["message"]


def test_0_5_23_warns_about_the_pool_itself(tmp_path):
    """0.5.23's own warning carries the pool and the context: enough for KVA001 without the pool line."""
    lines = startup("0.5.23", "2026-10-20 09:00:00", mode="prefill", context=1_048_576, pool=681_280)
    warn = [x for x in lines if "KV pool holds" in x]
    assert len(warn) == 1
    p = write(tmp_path / "glm-prefill-9.log", warn[0])
    r = audit([p])
    c = one(r.node_configs, node="glm-prefill-9")
    assert (c["pool_tokens"], c["context_len"], c["max_req_input_len"]) == (681_280, 1_048_576, 681_274)
    assert c["build"] == ">= 0.5.23" and c["stub_transferred"] == False  # noqa: E712
    f = one(r.findings, node="glm-prefill-9", rule_id="KVA001")
    assert f["severity"] == "medium" and "HTTP 400" in f["message"]
