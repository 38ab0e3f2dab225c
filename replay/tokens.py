"""Synthetic token contents: a deterministic stream per request id, so every leaked token is traceable.

A request's prompt is tokens [0, prompt_len) of its stream and its logged response tokens
[prompt_len, prompt_len + completion_len). Ids are in [1, vocab): 0 is SGLang's 1-token placeholder
([0], set by set_finish_with_abort), so a placeholder never looks like anyone's data. The replay never
sees real prompt text: logs hold lengths, not contents.
"""
from __future__ import annotations

import hashlib

import numpy as np

PLACEHOLDER = 0
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)


def request_seed(rid: str) -> np.uint64:
    return np.frombuffer(hashlib.blake2b(rid.encode("utf-8"), digest_size=8, person=b"kvir-tok").digest(),
                         dtype=np.uint64)[0]


def _splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = x + _GOLD
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def synthetic_tokens(rid: str, start: int, n: int, vocab: int) -> np.ndarray:
    """Tokens [start, start + n) of request `rid`'s stream, int64 values in [1, vocab)."""
    if vocab < 2:
        raise ValueError("vocab must be at least 2")
    with np.errstate(over="ignore"):
        x = request_seed(rid) + np.arange(start, start + n, dtype=np.uint64) * _M1
    return (_splitmix64(x) % np.uint64(vocab - 1)).astype(np.int64) + 1


def locate(tokens: np.ndarray, rid: str, total: int, vocab: int) -> int | None:
    """The position where `tokens` (a run of at least 3) occurs in rid's first `total` tokens, or None.
    Used to trace a leaked run back to its source independently of the ledger."""
    tokens = np.asarray(tokens, dtype=np.int64)
    if tokens.size < 3:
        raise ValueError("need a run of at least 3 tokens to locate")
    stream = synthetic_tokens(rid, 0, total, vocab)
    hits = np.flatnonzero(stream[: total - tokens.size + 1] == tokens[0])
    for h in hits.tolist():
        if np.array_equal(stream[h: h + tokens.size], tokens):
            return int(h)
    return None
