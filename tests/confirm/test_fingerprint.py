"""The fingerprint core: SipHash-2-4 against its published vectors, winnowing against a plain re-implementation
(loops over a few texts), the shared-span guarantee, the key's reach, the normalisation."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from kvir.confirm.fingerprint import Shingling, _mix, fingerprints, normalise
from kvir.confirm.key import derive
from kvir.confirm.siphash import siphash24, siphash24_bytes

KEY16 = bytes(range(16))
K0, K1 = int.from_bytes(KEY16[:8], "little"), int.from_bytes(KEY16[8:], "little")
M64 = (1 << 64) - 1


def test_siphash_published_vectors():
    # the paper's appendix: key 00..0f, message 00..0e
    assert siphash24_bytes(K0, K1, bytes(range(15))) == 0xA129CA6149BE45E5
    # the reference implementation's vectors.h, 8-byte message 00..07: 62 24 93 9a 79 f5 f5 93 (little endian)
    assert siphash24_bytes(K0, K1, bytes(range(8))) == int.from_bytes(bytes.fromhex("6224939a79f5f593"), "little")
    assert siphash24_bytes(K0, K1, b"") == int.from_bytes(bytes.fromhex("310e0edd47db6f72"), "little")


def test_vectorised_siphash_equals_the_scalar_reference():
    rng = np.random.default_rng(5)
    m = rng.integers(0, 2**63, size=70_000, dtype=np.int64).astype(np.uint64) * np.uint64(3)   # across slices
    got = siphash24(K0, K1, m)
    for i in list(range(5)) + [65_535, 65_536, 69_999]:
        assert int(got[i]) == siphash24_bytes(K0, K1, int(m[i]).to_bytes(8, "little"))


def _reference(texts: list[str], key, sh: Shingling) -> set[tuple[int, int, int]]:
    """Winnowing written out: every window's polynomial hash, the minimum of each run of w windows kept
    (every tied one), a text's minimum when it has fewer windows, each hash once at its first offset."""
    out = set()
    for d, t in enumerate(texts):
        b = t.encode()
        hs = []
        for i in range(len(b) - sh.k + 1):
            h, p = 0, 1
            for c in b[i:i + sh.k]:
                h, p = (h + c * p) & M64, (p * key.base) & M64
            hs.append(h)
        if not hs:
            continue
        order = [int(_mix(np.array([h], np.uint64), key.select)[0]) for h in hs]
        kept = set()
        for s in range(max(1, len(hs) - sh.w + 1)):
            win = order[s:s + sh.w]
            kept |= {s + j for j, o in enumerate(win) if o == min(win)}
        first = {}
        for i in sorted(kept):
            first.setdefault(hs[i], i)
        for h, i in first.items():
            v = siphash24_bytes(key.k0, key.k1, h.to_bytes(8, "little"))
            out.add((d, i, v - (1 << 64) if v >= 1 << 63 else v))
    return out


@pytest.mark.parametrize("sh", [Shingling(8, 4), Shingling(5, 3), Shingling(24, 16)])
def test_winnowing_equals_the_written_out_reference(sh):
    rng = random.Random(7)
    texts = ["", "short", "x" * 40, "abab" * 30] + [
        " ".join(rng.choice(["alpha", "beta", "gamma", "δέλτα", "日本"]) for _ in range(rng.randint(1, 40)))
        for _ in range(30)]
    key = derive(b"\x11" * 32)
    norm = normalise(pa.array(texts))
    f = fingerprints(norm, key, sh)
    got = set(zip(f.doc.tolist(), f.pos.tolist(), f.fp.tolist()))
    assert got == _reference(norm.to_pylist(), key, sh)
    assert f.kept.sum() >= len(f.fp) and f.distinct.sum() == len(f.fp)


def test_a_shared_span_of_the_guarantee_always_shares_a_fingerprint():
    rng = random.Random(11)
    sh = Shingling()
    key = derive(b"\x22" * 32)
    alphabet = "abcdefghijklmnopqrstuvwxyz      "
    for trial in range(40):
        span = "".join(rng.choice(alphabet) for _ in range(sh.guarantee + rng.randint(0, 5)))
        span = " ".join(span.split()) or "x" * sh.guarantee
        span = (span + "q" * sh.guarantee)[:sh.guarantee]
        a = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 50))) + span + "!" * rng.randint(0, 9)
        b = "#" * rng.randint(0, 30) + span + "".join(rng.choice("XYZ") for _ in range(rng.randint(0, 40)))
        f = fingerprints(normalise(pa.array([a, b])), key, sh)
        assert set(f.fp[f.doc == 0]) & set(f.fp[f.doc == 1]), (trial, a, b)


def test_other_keys_give_other_fingerprints_and_the_same_key_the_same():
    texts = pa.array(["the same sentence in two cases, long enough for several windows of text"])
    a, b = derive(b"\x01" * 32), derive(b"\x02" * 32)
    fa, fa2, fb = (fingerprints(normalise(texts), k, Shingling()) for k in (a, a, b))
    assert list(fa.fp) == list(fa2.fp)
    assert not set(fa.fp) & set(fb.fp)


def test_normalisation_folds_case_width_and_whitespace():
    got = normalise(pa.array(["  Hello\t\tWORLD\n", "ＡＢＣ ｄｅｆ", None, "tab\u00a0nbsp"])).to_pylist()
    assert got == ["hello world", "abc def", "", "tab nbsp"]
