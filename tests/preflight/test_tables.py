"""The facts preflight's new rules read, answered as worked out by hand from the wheels' code (quoted in
toolkit/mechanisms/prefix_cache/releases.toml and toolkit/preflight/transfer.toml)."""
from __future__ import annotations

import pytest


@pytest.mark.parametrize("version, flag, seed, want", [
    ("0.9.2", None, None, ("builtin", True, False)),            # default builtin hash() (CVE-2025-25183)
    ("0.10.1.1", None, None, ("builtin", True, False)),
    ("0.10.1.1", "sha256_cbor_64bit", None, ("sha256_cbor_64bit", True, False)),
    ("0.10.2", None, None, ("sha256", False, False)),           # sha256 the default from 0.10.2
    ("0.32.0", "xxhash", "0", ("xxhash", True, True)),          # a known seed
    ("0.32.0", "sha256_cbor", "0", ("sha256_cbor", False, True)),
    (None, None, None, (None, None, False)),                    # no flag, no version: unknown
    ("0.8.5", None, None, ("builtin", True, False)),
    ("0.8.4", None, None, (None, None, False)),                 # older than every release read
])
def test_block_hash(version, flag, seed, want):
    from kvir.mechanisms.prefix_cache.cache_keys import block_hash

    h = block_hash("vllm", version, flag, seed)
    assert (h.algo, h.weak, h.seed_known) == want and h.basis
    assert block_hash("sglang", "0.5.23", None, None) is None       # its radix cache compares tokens, not hashes


@pytest.mark.parametrize("version, connector, lmcache, want", [
    ("0.26.0", "LMCacheConnectorV1", "0.5.2", True),
    ("0.26.0", "LMCacheMPConnector", "0.5.4", False),
    ("0.26.0", "LMCacheConnectorV1", None, None),               # LMCache release not in the evidence
    ("0.25.0", "LMCacheConnectorV1", "0.5.2", False),           # vLLM before the layout change
])
def test_connector_pair(version, connector, lmcache, want):
    from kvir.mechanisms.prefix_cache.cache_keys import connector_pair

    got, basis = connector_pair("vllm", version, connector, lmcache)
    assert got is want and basis
    assert connector_pair("vllm", "0.26.0", "NixlConnector", "0.5.2") is None     # no LMCache tier


@pytest.mark.parametrize("version, explicit, want", [
    ("0.11.0", None, "none"), ("0.12.0", None, "recompute"), ("0.12.0", "fail", "recompute"),   # not configurable
    ("0.13.0", None, "recompute"), ("0.16.0", None, "recompute"), ("0.16.0", "fail", "fail"),
    ("0.17.0", None, "fail"), ("0.34.0", None, "fail"), ("0.32.0", "recompute", "recompute"),
    ("0.10.0", None, None), (None, None, None),
])
def test_load_failure_policy(version, explicit, want):
    from kvir.preflight.transfer_rules import load_policy

    got, basis = load_policy(version, explicit)
    assert got == want and basis
