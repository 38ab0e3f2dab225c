"""The probe's parts on hand-made inputs: boundary sets, limit rules, server-info parsing, the per-prompt
classification, the canary index, Retry-After, exact-count prompt building, option checks."""
from __future__ import annotations

import asyncio
import random

import pytest

from kvir.core.errors import KvirError
from kvir.probe.canary import CanaryIndex, Planted, digest, new_canary, plant_text
from kvir.probe.config import ProbeOptions
from kvir.probe.context import Sent
from kvir.probe.http import Budget, Reply, retry_after_s
from kvir.mechanisms.oversized_prompt.probe_length import classify
from kvir.probe.learn import ServerFacts, boundary_lengths, parse_models, parse_server_info
from kvir.probe.prompts import Prompt, PromptBuilder


def test_incident_boundary_set():
    """Context 1,048,576 and pool 681,280: SGLang's limit min(1048575, 681279) - 5 = 681,274."""
    f = ServerFacts(engine="sglang", context=1_048_576, pool=681_280)
    lengths, notes = boundary_lengths(f)
    assert [n for _, n in lengths] == [681_273, 681_274, 681_275, 681_280, 1_048_575, 1_048_576, 1_048_577]
    assert f.limits("sglang")[:2] == (681_274, 681_274)
    assert notes == []


def test_vllm_boundary_set_and_rule():
    """max_model_len 2048: vLLM refuses from 2048 (vllm/v1/engine/input_processor.py), so 2046 and 2047 are
    served and 2048, 2049 refused; no SGLang length is sent to a vLLM server."""
    f = ServerFacts(engine="vllm", context=2048)
    assert [n for _, n in boundary_lengths(f)[0]] == [2046, 2047, 2048, 2049]
    # an unknown engine: around the pool and the context, not SGLang's formula
    u = ServerFacts(context=256, pool=200)
    assert [n for _, n in boundary_lengths(u)[0]] == [199, 200, 201, 255, 256, 257]
    assert boundary_lengths(u, "sglang")[0][0] == ("max_req_input_len - 1", 193)   # min(255, 199) - 5 - 1
    assert f.limits()[:2] == (2048, 2048)
    assert ServerFacts(context=2048).limits()[:2] == (2042, 2048)          # unknown engine: either in between


def test_pool_above_the_context_is_left_out():
    f = ServerFacts(engine="sglang", context=2048, pool=1_048_576)
    lengths, notes = boundary_lengths(f)
    assert 1_048_576 not in [n for _, n in lengths] and "over context + 1" in notes[0]
    # vLLM: the pool is no boundary at all (it will not start on one below max_model_len)
    assert 1_048_576 not in [n for _, n in boundary_lengths(ServerFacts(engine="vllm", context=2048, pool=1_048_576))[0]]


def test_sglang_info_router_and_secrets():
    doc = {"version": "0.5.19", "api_key": "sk-live-123", "prefill": [
        {"disaggregation_mode": "prefill", "max_total_num_tokens": 681_280, "context_length": 1_048_576,
         "max_req_input_len": 681_274, "disaggregation_enable_kv_checksum": False},
        {"disaggregation_mode": "prefill", "max_total_num_tokens": 2_040_000, "context_length": 1_048_576}],
        "decode": [{"disaggregation_mode": "decode", "max_total_num_tokens": 2_097_152, "context_length": 1_048_576}]}
    f = ServerFacts()
    parse_server_info(doc, f, "/get_server_info")
    assert (f.engine, f.version, f.pool, f.context, f.max_req_input_len) == ("sglang", "0.5.19", 681_280, 1_048_576, 681_274)
    assert f.pd_mode == "prefill" and f.flags["disaggregation_enable_kv_checksum"] is False
    assert f.secrets_exposed == ["api_key"] and "sk-live-123" not in repr(f.as_json())


def test_vllm_models():
    f = ServerFacts()
    parse_models({"data": [{"id": "tiny-llama", "owned_by": "vllm", "max_model_len": 2048}]}, f)
    assert (f.engine, f.context, f.models) == ("vllm", 2048, ["tiny-llama"])


def _sent(n: int, status: int | None, prompt_tokens: int | None = None, error: str | None = None) -> Sent:
    rep = Reply("POST", "/v1/completions", "kvir-probe-x-0001", status=status, attempts=1, error=error)
    rec = {"request_id": "kvir-probe-x-0001", "response_id": "cmpl-1", "prompt_tokens": prompt_tokens}
    return Sent(rep, Prompt("x", n, n, True), None, rec)  # type: ignore[arg-type]


@pytest.mark.parametrize("n, status, pt, outcome, rules", [
    (4089, 200, 4089, "ok", []),
    (4090, 400, None, "ok", []),
    (4090, 200, 4090, "exposed", ["KVIR-P001"]),
    (4090, 200, 1, "exposed", ["KVIR-P001", "KVIR-P002"]),
    (4096, 200, None, "exposed", ["KVIR-P001"]),
    (4096, 200, 4089, "inconclusive", ["KVIR-P003"]),      # truncated: did not fit, was not refused
    (4089, 200, 4000, "inconclusive", ["KVIR-P003"]),
    (4089, 200, 1, "exposed", ["KVIR-P002"]),
    (4089, 400, None, "ok", ["KVIR-P007"]),
    (4090, 503, None, "inconclusive", []),
    (4090, 429, None, "inconclusive", []),
    (4090, None, None, "inconclusive", []),
    (4090, 401, None, "inconclusive", []),
])
def test_classify(n, status, pt, outcome, rules):
    got, findings, _ = classify(_sent(n, status, pt, None if status else "timeout"), 4090, 4090)
    assert (got, [f.rule_id for f in findings]) == (outcome, rules)


def _index(canary: str) -> CanaryIndex:
    idx = CanaryIndex(12)
    idx.add(canary, Planted(digest(canary), "tenant-a", None, ("r1",)))
    return idx


def test_canary_fragments_are_found_wherever_they_start():
    c = new_canary()
    assert len(c) == 32 and len(set(new_canary() for _ in range(50))) == 50
    idx = _index(c)
    text = plant_text(c, 5)
    hit, = idx.scan("noise " + text[7:40] + " more noise")         # across a repetition boundary
    assert (hit.chars, hit.normalised, hit.planted.tenant) == (33, False, "tenant-a")
    hit, = idx.scan("##" + c[3:15].upper() + "!!")                 # case folded, exactly 12 characters (padding outside the canary alphabet)
    assert hit.normalised and hit.chars == 12
    hit, = idx.scan(" ".join(c[i:i + 4] for i in range(0, 32, 4)))   # spacing rewritten
    assert hit.normalised and hit.chars == 32
    assert idx.scan(c[5:16]) == []                                 # 11 characters: below the n-gram length


def test_no_false_positive_on_other_text():
    rng = random.Random(7)
    idx = _index(new_canary())
    alphabet = "abcdefghijklmnopqrstuvwxyz234567 "
    other = "".join(rng.choice(alphabet) for _ in range(200_000))
    assert idx.scan(other) == [] and idx.scan("the " * 1000) == []


def test_retry_after_and_budget():
    assert retry_after_s("2") == 2.0 and retry_after_s("0.5") == 0.5 and retry_after_s(None) is None
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0 and retry_after_s("soon") is None
    b = Budget(2, 10)
    assert (b.take(), b.take()) == (None, None) and "budget (2) is spent" in b.take()
    assert "deadline" in Budget(5, -1).take()


class BPECounter:
    """A tokenizer unlike the byte one: 'probe' prefix 3 tokens, ' the' 1, runs of '.' merge in pairs, BOS."""

    def __init__(self):
        self.calls = 0
        self.failure = None

    async def count(self, text: str) -> int:
        self.calls += 1
        head, _, rest = text.partition(":")
        body = rest.rstrip(".")
        dots = len(rest) - len(body)
        return 1 + 3 + body.count(" the") + (dots + 1) // 2


@pytest.mark.parametrize("target", [10, 11, 250, 251, 4089, 4090])
def test_prompt_builder_hits_exact_counts(target):
    c = BPECounter()
    p = asyncio.run(PromptBuilder(c, "abc123").build(target))    # type: ignore[arg-type]
    assert (p.tokens, p.exact) == (target, True) and asyncio.run(c.count(p.text)) == target
    assert c.calls <= 2 + 8 + 1


def test_options_refuse_credentials_and_unset_variables(monkeypatch):
    with pytest.raises(KvirError, match="credentials"):
        ProbeOptions("https://user:pw@example.com/v1").validate()
    monkeypatch.delenv("KVIR_NOT_SET", raising=False)
    with pytest.raises(KvirError, match="KVIR_NOT_SET is not set"):
        ProbeOptions("http://127.0.0.1:1", api_key_env="KVIR_NOT_SET").validate()
    with pytest.raises(KvirError, match="Name: value"):
        ProbeOptions("http://127.0.0.1:1", headers=("no-colon",)).validate()
    with pytest.raises(KvirError, match="--checks"):
        ProbeOptions("http://127.0.0.1:1", checks=("bogus",)).validate()
    o = ProbeOptions("https://gw.example.com/v1?key=secret#x")
    assert o.safe_endpoint == "https://gw.example.com/v1" and o.base_url == "https://gw.example.com"
    assert o.query_params == [("key", "secret")] and "secret" not in repr(o.describe())
