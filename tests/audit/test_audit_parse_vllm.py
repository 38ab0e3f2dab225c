"""vLLM start-up logs written by hand in the shapes vLLM's releases print (v1 comma-grouped sizes, early v1 and v0
block lines, process tags, refusals, hybrid models where the concurrency figure is trusted)."""
from __future__ import annotations

import pandas as pd
import pytest

from kvir.audit import audit
from kvir.core.errors import InputError

from .conftest import one, rows

V1 = """\
INFO 09-01 12:00:00 [api_server.py:1043] vLLM API server version 0.9.1
INFO 09-01 12:00:02 [core.py:69] Initializing a V1 LLM engine (v0.9.1) with config: model='Qwen/Qwen3-8B', speculative_config=None, tokenizer='Qwen/Qwen3-8B', max_seq_len=40960, tensor_parallel_size=1, served_model_name=Qwen/Qwen3-8B, enable_prefix_caching=True
INFO 09-01 12:00:40 [gpu_worker.py:227] Available KV cache memory: 20.32 GiB
INFO 09-01 12:00:40 [kv_cache_utils.py:715] GPU KV cache size: 147,968 tokens
INFO 09-01 12:00:40 [kv_cache_utils.py:719] Maximum concurrency for 40,960 tokens per request: 3.61x
"""


def test_v1_comma_grouped_and_version(logdir):
    r = audit([logdir("qwen-a.log", V1)], source_tz="UTC", year=2026)
    c = one(r.node_configs, node="qwen-a")
    assert c["engine"] == "vllm" and c["version"] == "0.9.1" and c["version_source"] == "log line 1"
    assert c["pool_tokens"] == 147_968 and c["context_len"] == 40_960
    assert c["max_concurrency"] == pytest.approx(3.61) and c["holds_context"]
    assert c["served_model"] == "Qwen/Qwen3-8B" and c["tp_size"] == 1
    assert c["role"] == "mixed" and c["evidence_line"] == 4
    assert c["ts"] == pd.Timestamp("2026-09-01T12:00:00Z")
    assert pd.isna(c["max_req_input_len"])                     # SGLang's limit: not claimed for vLLM
    assert len(r.node_configs) == 1 and len(r.findings) == 0   # three banners, one start


def test_vllm_needs_a_year_only_where_times_are_joined(logdir, tmp_path):
    """vLLM prints no year: the audit reads the pool and the context anyway (no clock needed); kvir triage
    --startup, which joins start-up and request times, refuses naming the line."""
    r = audit([logdir("qwen-b.log", V1)], source_tz="UTC")
    c = one(r.node_configs, node="qwen-b")
    assert c["pool_tokens"] == 147_968 and c["max_concurrency"] == 3.61 and pd.isna(c["ts"])
    from kvir.audit import load_node_configs
    from kvir.case.store import Case

    with Case.create(tmp_path / "case") as case:
        with pytest.raises(InputError, match=r"qwen-b\.log:1: vLLM log times carry no year"):
            load_node_configs(case, [logdir("qwen-b.log", V1)], source_tz="UTC")


def test_process_tags_dp_ranks_and_hybrid_models(logdir):
    # recent v1: process tags per engine core; a hybrid (SWA) model whose token count is below the
    # context while one full-length request still fits (1.85x): the concurrency figure is trusted
    ok = logdir("hybrid-ok.log", "\n".join([
        "(APIServer pid=2817) INFO 09-02 08:00:00 [api_server.py:1880] vLLM API server version 0.11.0",
        "(EngineCore_DP0 pid=2901) INFO 09-02 08:01:10 [kv_cache_utils.py:1087] GPU KV cache size: 524,288 tokens",
        "(EngineCore_DP0 pid=2901) INFO 09-02 08:01:10 [kv_cache_utils.py:1091] Maximum concurrency for 1,048,576 tokens per request: 1.85x",
        "(EngineCore_DP1 pid=2902) INFO 09-02 08:01:10 [kv_cache_utils.py:1087] GPU KV cache size: 524,288 tokens",
        "(EngineCore_DP1 pid=2902) INFO 09-02 08:01:10 [kv_cache_utils.py:1091] Maximum concurrency for 1,048,576 tokens per request: 1.85x",
    ]))
    # the opposite: more tokens than the context, but the per-request capacity is below one request
    bad = logdir("hybrid-bad.log", "\n".join([
        "(EngineCore_DP0 pid=3001) INFO 09-02 09:01:10 [kv_cache_utils.py:1087] GPU KV cache size: 1,200,000 tokens",
        "(EngineCore_DP0 pid=3001) INFO 09-02 09:01:10 [kv_cache_utils.py:1091] Maximum concurrency for 1,048,576 tokens per request: 0.72x",
    ]))
    r = audit([ok, bad], source_tz="+02:00", year=2026)
    a = one(r.node_configs, node="hybrid-ok")
    assert a["pool_tokens"] == 524_288 and a["context_len"] == 1_048_576 and a["holds_context"]
    assert list(a["rank_tags"]) == ["EngineCore_DP0", "EngineCore_DP1"]
    assert "concurrency figure is trusted" in a["capacity_basis"]
    assert a["ts"] == pd.Timestamp("2026-09-02T06:00:00Z")
    b = one(r.node_configs, node="hybrid-bad")
    assert b["pool_tokens"] == 1_200_000 and not b["holds_context"]
    assert [f["node"] for f in rows(r.findings, rule_id="KVA001")] == ["hybrid-bad"]
    assert one(r.findings, rule_id="KVA001")["severity"] == "medium"


def test_early_v1_and_v0_block_lines(logdir):
    # early v1 (Jan-Feb 2025): blocks, not tokens; capacity = blocks x block size (16 by default)
    early = logdir("early-v1.log", "\n".join([
        "INFO 02-10 10:00:00 [core.py:50] Initializing a V1 LLM engine (v0.7.2) with config: model='m', max_seq_len=32768",
        "INFO 02-10 10:00:30 [kv_cache_utils.py:400] # GPU blocks: 27798",
        "INFO 02-10 10:00:30 [kv_cache_utils.py:403] Maximum concurrency for 32768 tokens per request: 13.57x",
    ]))
    # v0: `# CUDA blocks: N, # CPU blocks: M` (older prefix without brackets); block size from the config dump
    v0 = logdir("v0-node.log", "\n".join([
        "INFO 05-01 10:00:00 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: model='m', max_seq_len=4096, block_size=32",
        "INFO 05-01 10:00:20 executor_base.py:111] # CUDA blocks: 1478, # CPU blocks: 2048",
        "INFO 05-01 10:00:20 executor_base.py:116] Maximum concurrency for 4096 tokens per request: 11.55x",
    ]))
    r = audit([early, v0], source_tz="UTC", year=2025)
    e = one(r.node_configs, node="early-v1")
    assert e["pool_tokens"] == 27_798 * 16 == 444_768
    assert e["pool_source"] == "# GPU blocks x block size 16 (vLLM default, assumed)"
    assert e["context_len"] == 32_768 and e["version"] == "0.7.2"
    o = one(r.node_configs, node="v0-node")
    assert o["pool_tokens"] == 1_478 * 32 == 47_296 and o["context_len"] == 4_096 and o["version"] == "0.6.3"
    assert o["ts"] == pd.Timestamp("2025-05-01T10:00:00Z")


def test_refusals_v1_and_v0(logdir):
    v1 = logdir("refused-v1.log", "\n".join([
        "INFO 09-01 12:00:02 [core.py:69] Initializing a V1 LLM engine (v0.10.1) with config: model='m', max_seq_len=1048576",
        "ERROR 09-01 12:01:00 [core.py:515] ValueError: To serve at least one request with the models's max seq len (1048576), "
        "(96.00 GiB KV cache is needed, which is larger than the available KV cache memory (62.50 GiB). Based on the available "
        "memory, the estimated maximum model length is 682624. Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine.",
    ]))
    v0 = logdir("refused-v0.log", "\n".join([
        "INFO 05-01 10:00:00 llm_engine.py:237] Initializing an LLM engine (v0.5.4) with config: model='m', max_seq_len=32768",
        "INFO 05-01 10:00:20 gpu_executor.py:102] # GPU blocks: 1478, # CPU blocks: 2048",
        "Traceback (most recent call last):",
        "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (23648). "
        "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
    ]))
    r = audit([v1, v0], source_tz="UTC", year=2026)
    f = r.findings
    assert sorted(f["rule_id"] + ":" + f["node"]) == ["KVA009:refused-v0", "KVA009:refused-v1"]
    a = one(r.node_configs, node="refused-v1")
    assert a["refused"] and a["context_len"] == 1_048_576 and a["holds_context"] == False  # noqa: E712
    assert "estimated maximum model length 682624" in a["refusal"]
    b = one(r.node_configs, node="refused-v0")
    assert b["refused"] and b["pool_tokens"] == 1_478 * 16 and b["evidence_line"] == 2
    assert "23648" in one(f, node="refused-v0")["message"]
