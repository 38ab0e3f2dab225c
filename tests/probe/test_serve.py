"""kvir serve: the build table, the tokenizer, the API shapes, and 64 concurrent clients without an error.

The recall model's definition gives the expected outputs independently of the engine: a request that
reads only its own KV echoes its prompt, so the text of max_tokens = n is the prompt's first n - 1
characters (output 0 is <s>, which decodes to nothing)."""
from __future__ import annotations

import asyncio
import hashlib
import json
import time

import httpx
import pytest

from kvir.core.errors import KvirError
from kvir.mechanisms.oversized_prompt.build_policies import resolve_build
from kvir.serve import ServeConfig, ServerThread
from kvir.serve.tokenizer import decode, encode


@pytest.mark.parametrize("name, row", [("0.5.19", "0.5.19"), ("leaking", "0.5.19"), ("0.5.12", "0.5.19"),
                                       ("v0.5.18", "0.5.19"), ("0.5.20", "0.5.20"), ("sglang-0.5.20", "0.5.20"),
                                       ("fixed", "0.5.20"), ("0.5.21", "0.5.21"), ("door", "0.5.21"),
                                       ("0.5.23", "0.5.21"), ("0.6.0", "0.5.21"), ("0.4.9", "0.5.19"),
                                       ("kvir-proposal", "kvir-proposal")])
def test_build_names_resolve_through_one_table(name, row):
    assert resolve_build(name).name == row


def test_build_table_says_which_builds_leak():
    assert [(b.name, b.leaks) for b in (resolve_build(x) for x in ("0.5.19", "0.5.20", "0.5.21"))] == [
        ("0.5.19", True), ("0.5.20", False), ("0.5.21", False)]
    # the rows are kvir.rules.builds' (read from the wheels) and the policies kvir.replay's per-build ones
    assert [(p.name, p.over_long, p.http_status) for p in (resolve_build(x).policy() for x in ("leaking", "fixed", "door"))] == [
        ("sglang-0.5.19", "forwarded-transferred", 200), ("sglang-0.5.20", "retired-after-forward", 400),
        ("sglang-0.5.21", "rejected-at-door", 400)]
    assert resolve_build("0.5.19").builds == "0.5.11–0.5.19" and "prefill.py" in resolve_build("0.5.19").evidence
    p = resolve_build("kvir-proposal").policy()
    assert not p.is_build and p.kernel_checks_ownership and p.decode_checks_token_count
    with pytest.raises(KvirError, match="unknown build"):
        resolve_build("nightly")


def test_tokenizer_is_byte_level_and_exact():
    assert encode("ab") == [1, 101, 102] and encode("ab", add_special_tokens=False) == [101, 102]
    assert decode(encode("héllo ✓")) == "héllo ✓"
    assert len(encode("x" * 4088)) == 4089


def test_api_shapes_and_errors():
    with ServerThread(ServeConfig(build="fixed", pool=512, context=1024)) as srv:
        c = httpx.Client(base_url=srv.url, timeout=30)
        info = c.get("/get_server_info").json()
        assert (info["max_total_num_tokens"], info["context_length"], info["max_req_input_len"]) == (512, 1024, 506)
        assert c.get("/server_info").json()["version"] == "0.5.20+kvir.replay"     # fixed: the first fixed build
        assert c.get("/v1/models").json()["data"][0]["max_model_len"] == 1024
        assert c.get("/health").status_code == 200
        h = {"Authorization": "Bearer k1"}
        assert c.post("/tokenize", json={"prompt": "hello"}, headers=h).json()["count"] == 6
        assert c.post("/v1/completions", json={"prompt": "hi"}).status_code == 401          # no key
        r = c.post("/v1/completions", json={"prompt": "x" * 505, "max_tokens": 4}, headers=h)   # 506 tokens: refused
        assert r.status_code == 400 and r.json()["object"] == "error" and r.json()["code"] == 400
        r = c.post("/v1/completions", json={"prompt": "abcdefgh", "max_tokens": 5}, headers=h).json()
        assert r["choices"][0]["text"] == "abcd" and r["usage"] == {"prompt_tokens": 9, "completion_tokens": 5,
                                                                       "total_tokens": 14}
        r = c.post("/v1/completions", json={"model": "other", "prompt": "a"}, headers=h)
        assert r.status_code == 404


async def _client(url: str, i: int) -> list[tuple[str, object]]:
    """One client with its own key: /tokenize, then a completion (even i) or a streamed chat (odd i).
    Returns what went wrong (nothing, when all is well)."""
    key = f"client-key-{i:02d}"
    prompt = f"client {i:02d} says " + "lorem ipsum " * (10 + i)
    fails: list[tuple[str, object]] = []
    async with httpx.AsyncClient(base_url=url, timeout=120, headers={"Authorization": f"Bearer {key}"}) as c:
        tok = await c.post("/tokenize", json={"prompt": prompt})
        n = tok.json()["count"] if tok.status_code == 200 else None
        if n != len(prompt.encode()) + 1:
            fails.append(("tokenize", n))
        if i % 2 == 0:
            r = await c.post("/v1/completions", json={"prompt": prompt, "max_tokens": 4})
            if r.status_code != 200:
                fails.append(("completion", r.status_code))
            elif r.json()["choices"][0]["text"] != prompt[:3] or r.json()["usage"]["prompt_tokens"] != n:
                fails.append(("completion text/usage", i))
            return fails
        text, usage = "", None
        body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": 4, "stream": True,
                "stream_options": {"include_usage": True}}
        async with c.stream("POST", "/v1/chat/completions", json=body) as s:
            if s.status_code != 200:
                fails.append(("chat", s.status_code))
            async for line in s.aiter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    ev = json.loads(line[6:])
                    usage = ev.get("usage") or usage
                    for ch in ev["choices"]:
                        text += ch["delta"].get("content") or ""
        # the chat template's first 3 characters, echoed; the template adds 17 tokens to the prompt's text
        if text != "<|u" or (usage or {}).get("prompt_tokens") != n + len("<|user|>\n\n<|assistant|>\n"):
            fails.append(("chat text/usage", i))
    return fails


@pytest.mark.slow      # ~10 s on the shared 2-core box; .ci/run runs it in the real-server step
def test_64_concurrent_clients_without_an_error(record_property):
    with ServerThread(ServeConfig(build="leaking", pool=4096, context=8192)) as srv:
        async def main():
            return await asyncio.gather(*(_client(srv.url, i) for i in range(64)))
        t = time.perf_counter()
        fails = asyncio.run(main())
        wall = time.perf_counter() - t
        records = srv.records
    assert [f for f in fails if f] == []
    assert len(records) == 64 and {r["http_status"] for r in records} == {200}
    tenants = {"key-" + hashlib.sha256(f"client-key-{i:02d}".encode()).hexdigest()[:12] for i in range(64)}
    assert {r["tenant"] for r in records} == tenants
    assert not any(r["read_from"] for r in records)       # normal requests read only their own KV
    record_property("wall_s_64_clients_128_requests", round(wall, 2))
    print(f"\n64 concurrent clients, 128 requests (64 /tokenize, 32 completions, 32 streamed chats): {wall:.2f} s")
