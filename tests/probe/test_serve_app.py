"""kvir serve's API, handler by handler (module-level functions of kvir.serve.app), and the hardening of
issue 26 item 12: a 100,000-deep JSON body is a 400 (not a 500 RecursionError), /tokenize needs a key,
max_tokens 10^9 is served up to the per-request cap (so it cannot hold every other client), and the set of
response ids in use is bounded. Then the prefix cache behind the API: cached_tokens in usage as vLLM
reports it, and whose blocks each hit read."""
from __future__ import annotations

import httpx
import pytest

from kvir.serve import ServeConfig, ServerThread
from kvir.serve.app import BadRequest, RequestIds, max_tokens_of, parse_body, prompt_ids, salt_of, tenant_of
from kvir.serve.tokenizer import VOCAB

DEEP = b"[" * 100_000 + b"]" * 100_000
HA, HB = {"Authorization": "Bearer key-a"}, {"Authorization": "Bearer key-b"}


def test_request_ids_stay_unique_and_bounded():
    ids = RequestIds(keep=3)
    got = [ids.new("cmpl", "x") for _ in range(3)]
    assert got == ["cmpl-x", "cmpl-x-1", "cmpl-x-2"]
    for i in range(10):
        ids.new("cmpl", f"r{i}")
    assert len(ids) == 3                       # the oldest are forgotten: memory does not grow with traffic
    assert ids.new("cmpl", "x") == "cmpl-x"    # forgotten ids may come back


def test_pure_steps():
    cfg = ServeConfig(tenants={"k1": "alice"})
    assert tenant_of(cfg, "Bearer k1") == "alice" and tenant_of(cfg, "Bearer k2") is None
    assert tenant_of(ServeConfig(), "bearer  k2 ").startswith("key-") and tenant_of(ServeConfig(), None) is None
    with pytest.raises(BadRequest, match="nested too deeply") as e:
        parse_body(DEEP)
    assert e.value.status == 400
    with pytest.raises(BadRequest, match="JSON object"):
        parse_body(b"[1, 2]")
    assert prompt_ids({"prompt": "ab"}, False, VOCAB) == [1, 101, 102]
    with pytest.raises(BadRequest):
        prompt_ids({"prompt": [VOCAB]}, False, VOCAB)
    assert max_tokens_of({"max_tokens": 10 ** 9}, False, 16) == 10 ** 9 and max_tokens_of({}, True, 16) == 16
    assert salt_of({"cache_salt": "s-1"}) == "s-1" and salt_of({}) is None
    for bad in ("", "a/b", "a@b", "x" * 129, 7):
        with pytest.raises(BadRequest, match="cache_salt"):
            salt_of({"cache_salt": bad})


@pytest.fixture(scope="module")
def hardened():
    """One server for the hostile requests (default cap: 512 output tokens)."""
    with ServerThread(ServeConfig(build="fixed", pool=1024, context=8192)) as srv:
        yield srv, httpx.Client(base_url=srv.url, timeout=120)


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions", "/tokenize"])
def test_deeply_nested_json_is_a_400(hardened, path):
    srv, c = hardened
    r = c.post(path, content=DEEP, headers={**HA, "Content-Type": "application/json"})
    assert (r.status_code, r.json()["code"], r.json()["type"]) == (400, 400, "BadRequestError")


def test_tokenize_needs_a_key(hardened):
    srv, c = hardened
    r = c.post("/tokenize", json={"prompt": "hello"})
    assert r.status_code == 401 and "tokens" not in r.json()
    assert c.post("/tokenize", json={"prompt": "hello"}, headers={"Authorization": "Bearer unknown"}).status_code == 200
    keyed = ServeConfig(tenants={"key-a": "tenant-a"})
    assert tenant_of(keyed, "Bearer unknown") is None          # configured tenants: an unknown key is refused too


def test_one_huge_max_tokens_is_capped(hardened):
    """max_tokens 10^9 used to decode up to the context (8,188 tokens, ~33 s on the shared box) while every
    other client waited: it is served up to the per-request cap."""
    srv, c = hardened
    n = len(srv.records)
    r = c.post("/v1/completions", json={"prompt": "abc", "max_tokens": 10 ** 9}, headers=HA)
    assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == ServeConfig().max_tokens_cap == 512
    assert r.json()["choices"][0]["finish_reason"] == "length"
    assert [rec["completion_tokens"] for rec in srv.records[n:]] == [512]


def test_oversized_bodies_and_bad_salts_are_refused(hardened):
    srv, c = hardened
    r = c.post("/v1/completions", content=b'{"prompt": "' + b"a" * (33 * 2 ** 20) + b'"}', headers=HA)
    assert r.status_code == 413
    r = c.post("/v1/completions", json={"prompt": "abc", "cache_salt": "a/b"}, headers=HA)
    assert (r.status_code, r.json()["param"]) == (400, "cache_salt")


def _complete(c: httpx.Client, headers: dict, prompt: str, salt: str | None = None) -> dict:
    body = {"prompt": prompt, "max_tokens": 2, **({"cache_salt": salt} if salt else {})}
    r = c.post("/v1/completions", json=body, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()["usage"]


# 200 characters + <s> = 201 tokens: with 16-token blocks, 12 full blocks can hit (min(201, 200) // 16 * 16)
PROMPT = "the shared system prompt of every tenant, " * 4 + "x" * 32


@pytest.mark.parametrize("mode, b_cached, b_reads", [("salted", 0, {}), ("unsalted", 192, {"tenant-a": 192})])
def test_prefix_cache_behind_the_api(mode, b_cached, b_reads):
    assert len(PROMPT) == 200
    cfg = ServeConfig(build="fixed", pool=4096, context=8192, prefix_cache=mode,
                      tenants={"key-a": "tenant-a", "key-b": "tenant-b"})
    with ServerThread(cfg) as srv:
        c = httpx.Client(base_url=srv.url, timeout=60)
        first = _complete(c, HA, PROMPT, "salt-a")
        again = _complete(c, HA, PROMPT, "salt-a")
        cross = _complete(c, HB, PROMPT, "salt-b")
        info = c.get("/get_server_info").json()
    assert first["prompt_tokens_details"] == {"cached_tokens": 0}
    assert again["prompt_tokens_details"] == {"cached_tokens": 192}
    assert cross["prompt_tokens_details"] == {"cached_tokens": b_cached}
    recs = srv.records
    assert [r["cache_read_from"] for r in recs] == [{}, {}, b_reads]
    assert recs[2]["cache_sources"] == ([recs[0]["rid"]] if b_reads else [])
    assert (info["disable_radix_cache"], info["kvir_serve"]["prefix_cache"]) == (False, mode)


def test_no_prefix_cache_reports_no_details():
    with ServerThread(ServeConfig(build="fixed", pool=1024, context=2048)) as srv:
        c = httpx.Client(base_url=srv.url, timeout=60)
        u = [_complete(c, HA, PROMPT) for _ in range(2)]
        assert c.get("/get_server_info").json()["disable_radix_cache"] is True
    assert "prompt_tokens_details" not in u[1]


def test_bad_serve_options_are_refused():
    from kvir.core.errors import KvirError

    for kw in ({"prefix_cache": "shared"}, {"max_tokens_cap": 0}, {"prefix_cache_blocks": 0}):
        with pytest.raises(KvirError):
            ServeConfig(**kw).check()
