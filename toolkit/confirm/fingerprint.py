"""Salted winnowing over the bytes of normalised text, one batch of texts at a time, in NumPy (no loop over
texts or windows).

    normalise      NFKC, lower case, every run of whitespace one space, trimmed (pyarrow.compute)
    windows        every K-byte window of a text (never across two texts) gets a 64-bit polynomial hash
                   whose base is secret (prefix sums modulo 2**64: a few vector operations per byte)
    winnowing      of each run of W consecutive windows the one whose keyed order value is smallest is kept
                   (Schleimer, Wilkerson and Aiken, 2003): any span two texts share of at least K + W - 1
                   bytes gives both at least one common fingerprint, and about 2 / (W + 1) of the windows
                   are kept; a text with fewer than W windows keeps its smallest
    fingerprint    SipHash-2-4 of the kept window's hash under the key (kvir.confirm.siphash): what the
                   case stores, with the window's byte offset in the normalised text

Repeated windows of one text are kept once (the first offset); how many kept windows repeat is the
repetition-collapse statistic (`kept` against `distinct`). The normalised text is never returned.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kvir.confirm.key import ConfirmKey
from kvir.confirm.siphash import siphash24

_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


@dataclass(frozen=True)
class Shingling:
    """Window size K (bytes of normalised UTF-8) and winnowing width W (windows)."""

    k: int = 24
    w: int = 16

    @property
    def guarantee(self) -> int:
        """The shortest shared span (bytes) that always gives a common fingerprint."""
        return self.k + self.w - 1


@dataclass
class Fingerprints:
    """One batch's fingerprints: `doc` indexes the batch's texts; per text, windows kept and distinct."""

    doc: np.ndarray        # int32, per fingerprint
    pos: np.ndarray        # int32 byte offset of the window in the normalised text
    fp: np.ndarray         # int64 (SipHash output)
    kept: np.ndarray       # int64 per text: windows winnowing kept (repeats included)
    distinct: np.ndarray   # int64 per text: distinct fingerprints
    norm_bytes: np.ndarray  # int64 per text: bytes of the normalised text


def normalise(texts: pa.Array) -> pa.Array:
    """The text fingerprints are taken over (NULL as empty). NFKC only where a text is not ASCII (it
    changes nothing else, and costs most of the step)."""
    t = pc.fill_null(texts.cast(pa.large_string()), "")
    ascii_ = pc.string_is_ascii(t)
    if not pc.all(ascii_).as_py():
        t = pc.if_else(ascii_, t, pc.utf8_normalize(t, "NFKC"))
    t = pc.utf8_lower(t)
    return pc.utf8_trim_whitespace(pc.replace_substring_regex(t, r"\s+", " "))


def text_buffer(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, offsets) of a large_string array without nulls: text i is bytes[offsets[i]:offsets[i + 1]]."""
    texts = texts.cast(pa.large_string())
    n = len(texts)
    offsets = np.frombuffer(texts.buffers()[1], np.int64, count=n + 1, offset=texts.offset * 8)
    data = texts.buffers()[2]
    raw = np.frombuffer(data, np.uint8) if data is not None and data.size else np.zeros(0, np.uint8)
    return raw, offsets


class _Powers:
    """base**i and base**-i modulo 2**64 for i < n, grown on demand (shared by every batch of a key)."""

    def __init__(self, base: int):
        self.base, self.inv = base, pow(base, -1, 1 << 64)
        self.up = self.down = np.ones(1, np.uint64)

    def get(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if len(self.up) < n:
            size = max(n, 2 * len(self.up))
            self.up, self.down = (np.cumprod(np.r_[np.uint64(1), np.full(size - 1, b, np.uint64)], dtype=np.uint64)
                                  for b in (self.base, self.inv))
        return self.up[:n], self.down[:n]


def window_hashes(data: np.ndarray, offsets: np.ndarray, k: int, powers: _Powers
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(text index, start offset within the text, hash) of every k-byte window lying inside one text: the
    hash of every window of the chunk at once (slices of its prefix sums), then those that end inside
    their text."""
    start, n_texts = int(offsets[0]), len(offsets) - 1
    b = data[start:int(offsets[-1])]
    n = len(b)
    lengths = np.diff(offsets)
    count = np.maximum(lengths - k + 1, 0)
    if n < k or not count.any():
        return np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.uint64)
    up, down = powers.get(n + 1)
    with np.errstate(over="ignore"):
        s = np.zeros(n + 1, np.uint64)
        np.cumsum(b * up[:n], out=s[1:])
        h = (s[k:] - s[:n - k + 1]) * down[:n - k + 1]
    # a window is inside its text when it starts at most k - 1 bytes before the text's end: mark the k - 1
    # starts before each end (a difference array), the rest are the text's windows
    ends = offsets[1:] - start
    lo = np.maximum(ends - (k - 1), offsets[:-1] - start)
    edge = np.zeros(n + 1, np.int32)
    np.add.at(edge, lo, 1)
    np.add.at(edge, ends, -1)
    inside = np.cumsum(edge[:n - k + 1]) == 0
    at = np.flatnonzero(inside)
    doc = np.repeat(np.arange(n_texts, dtype=np.int32), count)
    rel = at - (offsets[:-1] - start)[doc]
    return doc, rel, h[at]


def _mix(h: np.ndarray, key: int) -> np.ndarray:
    """splitmix64's finaliser over h XOR key: the winnowing order, keyed."""
    with np.errstate(over="ignore"):
        z = h ^ np.uint64(key)
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        return z ^ (z >> np.uint64(31))


def _range_min(v: np.ndarray, w: int) -> np.ndarray:
    """min(v[s : s + w]) for s in 0 .. len(v) - w (a sparse table: two overlapping powers of two)."""
    j, m = 1, v
    while 2 * j <= w:
        m = np.minimum(m[:-j], m[j:])
        j *= 2
    return np.minimum(m[:len(v) - w + 1], m[w - j:len(v) - j + 1])


def _range_max_left(v: np.ndarray, w: int, n: int) -> np.ndarray:
    """max(v[max(0, i - w + 1) : i + 1]) for i in 0 .. n - 1, for unsigned v of n - w + 1 entries (the
    maximum is the complement of the complements' minimum; the padding, 0, raises nothing)."""
    padded = np.concatenate([np.zeros(w - 1, v.dtype), v, np.zeros(w - 1, v.dtype)])[:n + w - 1]
    return ~_range_min(~padded, w)


def winnow(doc: np.ndarray, order: np.ndarray, w: int, n_texts: int) -> np.ndarray:
    """Indices of the windows winnowing keeps: the minimum of `order` in every run of w consecutive windows
    of one text (ties: every tied window), and a text's minimum when it has fewer than w windows."""
    n = len(order)
    keep = np.zeros(n, bool)
    counts = np.bincount(doc, minlength=n_texts)
    if n >= w:
        wmin = _range_min(order, w)
        same = doc[:n - w + 1] == doc[w - 1:]
        wmin = np.where(same, wmin, np.uint64(0))          # a window across two texts raises nothing
        best = _range_max_left(wmin, w, n)
        keep |= (order == best) & (best > 0)
    short = np.flatnonzero((counts > 0) & (counts < w))
    if len(short):
        starts = np.cumsum(counts) - counts
        lows = np.minimum.reduceat(order, starts[counts > 0])
        low_of = np.zeros(n_texts, np.uint64)
        low_of[counts > 0] = lows
        is_short = np.zeros(n_texts, bool)
        is_short[short] = True
        keep |= is_short[doc] & (order == low_of[doc])
    return np.flatnonzero(keep)


_CHUNK_BYTES = 1 << 20     # texts hashed together: the prefix sums and powers of a chunk stay small


def fingerprints(norm: pa.Array, key: ConfirmKey, sh: Shingling, powers: _Powers | None = None) -> Fingerprints:
    """The fingerprints of a batch of normalised texts (see the module docstring), hashed in chunks of
    about a megabyte of texts (a longer text is a chunk of its own)."""
    data, offsets = text_buffer(norm)
    powers = powers or _Powers(key.base)
    n_texts = len(offsets) - 1
    bounds = np.unique(np.r_[0, np.searchsorted(offsets, np.arange(offsets[0], offsets[-1], _CHUNK_BYTES)[1:]),
                             n_texts])
    parts = [_chunk(data, offsets[a:b + 1], key, sh, powers) for a, b in zip(bounds[:-1], bounds[1:])]
    for a, part in zip(bounds[:-1], parts):
        part[0] += a
    doc, rel, h = (np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, t)
                   for i, t in enumerate((np.int32, np.int64, np.uint64)))
    n_kept = np.bincount(doc, minlength=n_texts).astype(np.int64)
    # each window hash once per text, at its first offset: one 64-bit key per (text, hash) pair (two pairs
    # share a key with probability about n**2 / 2**65, and then one fingerprint is not stored)
    _, first = np.unique(h ^ _mix(doc.astype(np.uint64), key.select), return_index=True)
    first.sort()
    doc, rel, h = doc[first], rel[first], h[first]
    fp = siphash24(key.k0, key.k1, h).view(np.int64)
    return Fingerprints(doc.astype(np.int32), rel.astype(np.int32), fp, n_kept,
                        np.bincount(doc, minlength=n_texts).astype(np.int64), np.diff(offsets))


def _chunk(data: np.ndarray, offsets: np.ndarray, key: ConfirmKey, sh: Shingling, powers: _Powers) -> list:
    """[text index, offset, hash] of the windows winnowing keeps in one chunk of texts."""
    doc, rel, h = window_hashes(data, offsets, sh.k, powers)
    kept = winnow(doc, _mix(h, key.select), sh.w, len(offsets) - 1)
    return [doc[kept], rel[kept], h[kept]]


def powers_for(key: ConfirmKey) -> _Powers:
    return _Powers(key.base)
