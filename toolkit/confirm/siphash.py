"""SipHash-2-4 of 64-bit words, vectorised over NumPy arrays: the keyed PRF that turns a window hash into the
fingerprint a case stores. Without the key nobody can compute a fingerprint of a guessed text, so the case's
fingerprints say only which texts share windows, never what the windows hold.

`siphash24(k0, k1, m)` hashes each element of `m` as one 8-byte little-endian message (Aumasson and
Bernstein's SipHash-2-4: two compression rounds per block, four finalisation rounds), in place and in
slices that stay in the CPU cache; `siphash24_bytes` is the scalar reference over any message, checked
against the paper's test vector (tests/confirm/test_fingerprint.py).
"""
from __future__ import annotations

import numpy as np

_MASK = (1 << 64) - 1
_C = (0x736F6D6570736575, 0x646F72616E646F6D, 0x6C7967656E657261, 0x7465646279746573)
_SLICE = 1 << 16          # elements per step: four state vectors and a scratch one fit in the L2 cache


def _rotl(x: np.ndarray, b: int, tmp: np.ndarray) -> None:
    np.left_shift(x, np.uint64(b), out=tmp)
    np.right_shift(x, np.uint64(64 - b), out=x)
    np.bitwise_or(x, tmp, out=x)


def _round(v0: np.ndarray, v1: np.ndarray, v2: np.ndarray, v3: np.ndarray, t: np.ndarray) -> None:
    v0 += v1
    _rotl(v1, 13, t)
    v1 ^= v0
    _rotl(v0, 32, t)
    v2 += v3
    _rotl(v3, 16, t)
    v3 ^= v2
    v0 += v3
    _rotl(v3, 21, t)
    v3 ^= v0
    v2 += v1
    _rotl(v1, 17, t)
    v1 ^= v2
    _rotl(v2, 32, t)


def _siphash_slice(k0: int, k1: int, m: np.ndarray) -> np.ndarray:
    n = m.shape
    v0, v1 = np.full(n, k0 ^ _C[0], np.uint64), np.full(n, k1 ^ _C[1], np.uint64)
    v2, v3 = np.full(n, k0 ^ _C[2], np.uint64), np.full(n, k1 ^ _C[3], np.uint64) ^ m
    t = np.empty(n, np.uint64)
    _round(v0, v1, v2, v3, t)
    _round(v0, v1, v2, v3, t)
    v0 ^= m
    last = np.uint64(8 << 56)            # the final block: the message length (8) in its top byte
    v3 ^= last
    _round(v0, v1, v2, v3, t)
    _round(v0, v1, v2, v3, t)
    v0 ^= last
    v2 ^= np.uint64(0xFF)
    for _ in range(4):
        _round(v0, v1, v2, v3, t)
    v0 ^= v1
    v0 ^= v2
    v0 ^= v3
    return v0


def siphash24(k0: int, k1: int, m: np.ndarray) -> np.ndarray:
    """SipHash-2-4 under the 128-bit key (k0, k1) of each uint64 in `m`, read as 8 little-endian bytes."""
    m = np.ascontiguousarray(m, dtype=np.uint64)
    out = np.empty_like(m)
    with np.errstate(over="ignore"):
        for i in range(0, len(m), _SLICE):
            out[i:i + _SLICE] = _siphash_slice(k0, k1, m[i:i + _SLICE])
    return out


def siphash24_bytes(k0: int, k1: int, msg: bytes) -> int:
    """The scalar reference: SipHash-2-4 of any byte string (Python integers, one message)."""
    def rotl(x: int, b: int) -> int:
        return ((x << b) | (x >> (64 - b))) & _MASK

    def rnd(v: list[int]) -> None:
        v[0] = (v[0] + v[1]) & _MASK
        v[1] = rotl(v[1], 13) ^ v[0]
        v[0] = rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & _MASK
        v[3] = rotl(v[3], 16) ^ v[2]
        v[0] = (v[0] + v[3]) & _MASK
        v[3] = rotl(v[3], 21) ^ v[0]
        v[2] = (v[2] + v[1]) & _MASK
        v[1] = rotl(v[1], 17) ^ v[2]
        v[2] = rotl(v[2], 32)

    v = [k0 ^ _C[0], k1 ^ _C[1], k0 ^ _C[2], k1 ^ _C[3]]
    tail = len(msg) % 8
    blocks = [int.from_bytes(msg[i:i + 8], "little") for i in range(0, len(msg) - tail, 8)]
    blocks.append(int.from_bytes(msg[len(msg) - tail:], "little") | ((len(msg) & 0xFF) << 56))
    for b in blocks:
        v[3] ^= b
        rnd(v)
        rnd(v)
        v[0] ^= b
    v[2] ^= 0xFF
    for _ in range(4):
        rnd(v)
    return v[0] ^ v[1] ^ v[2] ^ v[3]
