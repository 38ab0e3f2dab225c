"""SGLang settings and lines that bound the KV pool give one-sided findings (pool <= N < context); every
scheduler rejection line of a build is counted; pasted excerpts (environment blocks, lines without their time
prefix, DeepSeek-V4's memory-calculation line) are read and what they lack is said.

The lines are each build's own f-strings (grammar.py names the file and function in the wheel); expected
values worked out by hand: the pool is min(--max-total-tokens, what memory allows) (kv_cache_configurator.py
_apply_token_constraints), max_req_input_len = min(context - 1, pool - 1) - 5.
"""
from __future__ import annotations

import pandas as pd

from kvir.audit import audit

from .conftest import one, rows, write
from .grammar import (above_profiled, dsv4_memory_calculation, dump, input_too_long, kv_budget_exceeded, pool_line,
                      stamp)


def test_max_total_tokens_below_the_context_is_already_a_finding(tmp_path):
    """The issue's case: a dump with max_total_tokens 200 and a 256 context, no pool line."""
    p = write(tmp_path / "small-0.log", f"{stamp('2026-10-01 08:00:00')} "
                                        + dump("0.5.23", max_total_tokens=200, context_length=256))
    r = audit([p], source_tz="UTC")
    c = one(r.node_configs, node="small-0")
    assert pd.isna(c["pool_tokens"]) and (c["pool_bound_tokens"], c["context_len"]) == (200, 256)
    assert c["holds_context"] == False  # noqa: E712
    assert c["capacity_basis"].startswith("pool <= 200 < context 256 (max_total_tokens 200 (line 1)")
    f = one(r.findings, node="small-0", rule_id="KVA001")
    assert f["status"] == "fail" and "KV pool at most 200 tokens" in f["message"]
    assert "rejects prompts of 194 tokens and more at the latest" in f["message"]     # min(255, 199) - 5
    assert "KV pool (only a bound: <= 200)" in list(c["missing"])
    # a cap at or above the context decides nothing: the pool may still be smaller (memory)
    p2 = write(tmp_path / "small-1.log", f"{stamp('2026-10-01 08:00:00')} "
                                         + dump("0.5.23", max_total_tokens=300, context_length=256))
    r2 = audit([p2], source_tz="UTC")
    assert one(r2.findings, node="small-1", rule_id="KVA001")["status"] == "unknown"
    # the exact pool line wins over any bound
    p3 = write(tmp_path / "small-2.log", "\n".join([
        f"{stamp('2026-10-01 08:00:00')} " + dump("0.5.23", max_total_tokens=200, context_length=256),
        f"{stamp('2026-10-01 08:00:30', 'TP0')} {pool_line(200, 256)}"]))
    c3 = one(audit([p3], source_tz="UTC").node_configs, node="small-2")
    assert (c3["pool_tokens"], c3["max_req_input_len"], c3["capacity_basis"]) == (200, 194, "pool vs context")


def test_what_memory_allows_bounds_the_pool_too(tmp_path):
    # DeepSeek-V4 pasted instead of the pool line: full_token is what memory allows
    p = write(tmp_path / "dsv4-prefill-0.log", "\n".join([
        dsv4_memory_calculation("2026-10-01 08:00:10", 524_288), "context_length: 1048576",
        "disaggregation_mode: prefill"]))
    r = audit([p], source_tz="UTC")
    c = one(r.node_configs, node="dsv4-prefill-0")
    assert (c["pool_bound_tokens"], c["context_len"], c["role"]) == (524_288, 1_048_576, "prefill")
    assert "DSV4 memory calculation full_token line 1" in c["pool_bound_source"]
    f = one(r.findings, node="dsv4-prefill-0", rule_id="KVA001")
    assert f["status"] == "fail" and "KV pool at most 524,288 tokens" in f["message"]
    assert "version" in list(c["missing"])
    # --max-total-tokens above the profiled value: SGLang keeps the profiled value
    p2 = write(tmp_path / "glm-prefill-2.log", "\n".join([
        f"{stamp('2026-10-01 08:00:00')} " + dump("0.5.23", disaggregation_mode="prefill", context_length=1_048_576,
                                                  max_total_tokens=4_000_000),
        above_profiled("2026-10-01 08:00:20", 4_000_000, 681_280)]))
    c2 = one(audit([p2], source_tz="UTC").node_configs, node="glm-prefill-2")
    assert c2["pool_bound_tokens"] == 681_280 and c2["holds_context"] == False  # noqa: E712
    assert c2["pool_bound_source"].startswith("profiled value")


def test_every_rejection_line_of_a_build_counts(tmp_path):
    """0.5.23 prints two kinds of scheduler rejection (validate_input_length; the KV memory budget of
    init_req_max_new_tokens, from 0.5.21): two rejections are two."""
    p = write(tmp_path / "glm-prefill-4.log", "\n".join([
        f"{stamp('2026-10-20 09:00:00')} " + dump("0.5.23", disaggregation_mode="prefill", context_length=1_048_576),
        f"{stamp('2026-10-20 09:00:30', 'TP0')} {pool_line(681_280, 1_048_576)}",
        input_too_long("2026-10-20 10:00:00", 700_000, 681_274, "r1"),
        kv_budget_exceeded("2026-10-20 10:05:00", 681_000, "r2")]))
    r = audit([p], source_tz="UTC")
    ind = one(r.runtime_indicators, node="glm-prefill-4")
    assert (ind["indicator"], ind["count"], ind["limit_tokens"], ind["max_prompt_tokens"]) == (
        "input-length-exceeds", 2, 681_274, 700_000)
    f = one(r.findings, node="glm-prefill-4", rule_id="KVA011")
    assert "2 prompt(s) rejected by the scheduler" in f["message"] and f["severity"] == "low"   # 0.5.23: HTTP 400
    # the budget line alone names no limit, and it places the build at 0.5.21 or later
    p2 = write(tmp_path / "glm-prefill-5.log", "\n".join([
        f"{stamp('2026-10-20 09:00:00')} " + dump("0.5.19", disaggregation_mode="prefill", context_length=1_048_576)[:2000],
        kv_budget_exceeded("2026-10-20 10:05:00", 681_000, "r3")]))
    r2 = audit([p2], source_tz="UTC")
    assert "no limit printed" in one(r2.findings, node="glm-prefill-5", rule_id="KVA011")["message"]


def test_pasted_environment_blocks_and_lines_without_their_time(tmp_path):
    # `python -m sglang.check_env` output and an environment dump, pasted into an issue
    env = write(tmp_path / "issue-env.txt", "\n".join([
        "Python: 3.12.3 (main, Feb  4 2025, 14:48:35) [GCC 13.3.0]", "CUDA available: True",
        "GPU 0,1,2,3,4,5,6,7: NVIDIA H200", "sglang: 0.5.21", "PyTorch: 2.9.1+cu129",
        "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE=0", "HOSTNAME=glm-decode-3"]))
    r = audit([env])
    c = one(r.node_configs, node="glm-decode-3")
    assert (c["engine"], c["version"], c["build"], c["deferred_release"]) == ("sglang", "0.5.21", "0.5.21", False)
    assert list(c["missing"]) == ["time (no line carries a timestamp)", "KV pool", "context length",
                                  "disaggregation mode (role)"]
    # vLLM's collect_env block
    venv = write(tmp_path / "vllm-issue.txt", "\n".join([
        "vLLM Version                 : 0.10.1", "VLLM_USE_V1=1", "Maximum concurrency for 131,072 tokens per request: 0.45x"]))
    v = one(audit([venv]).node_configs, node="vllm-issue")
    assert (v["engine"], v["version"], v["context_len"], v["max_concurrency"]) == ("vllm", "0.10.1", 131_072, 0.45)
    assert any("the KV pool line" in m for m in v["missing"])           # 0.10.1 prints `GPU KV cache size`
    # SGLang lines pasted without the `[time TPn]` prefix: read, and the time said missing
    bare = write(tmp_path / "issue-bare.log", "\n".join([
        dump("0.5.22", disaggregation_mode="prefill", context_length=1_048_576), pool_line(681_280, 1_048_576)]))
    b = one(audit([bare]).node_configs, node="issue-bare")
    assert (b["pool_tokens"], b["context_len"], b["max_req_input_len"], b["role"]) == (681_280, 1_048_576, 681_274, "prefill")
    assert pd.isna(b["ts"]) and list(b["missing"]) == ["time (no line carries a timestamp)", "version"]
    assert b["build"] == "0.5.22" and b["build_evidence"].startswith("inferred")   # the dump places the build
    assert rows(audit([bare]).findings, node="issue-bare", rule_id="KVA001")[0]["status"] == "fail"
