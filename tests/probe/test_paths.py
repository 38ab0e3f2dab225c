"""Other ways in: a local tokenizer.json instead of /tokenize, gateway headers (values never shown), the
Python API from inside a running event loop (a notebook), the chat route, SGLang's sorted PD free list."""
from __future__ import annotations

import asyncio
import json

import pytest

import kvir

from .conftest import AppThread
from .fakes import fake_app


@pytest.fixture(scope="module")
def tokenizer_json(tmp_path_factory):
    """A byte-level BPE trained here (like the tiny Llama's), <s> prepended by its post-processor."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers, processors, trainers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<unk>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(["the key value cache of the probe " * 50, "a b c d e f . , : 0123456789"] * 20, trainer)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", tok.token_to_id("<s>"))])
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return str(path)


def test_local_tokenizer_counts_exactly_without_tokenize(tokenizer_json):
    app = fake_app("ok", tokenizer=tokenizer_json)
    with AppThread(app) as srv:
        r = kvir.probe(srv.url, tokenizer=tokenizer_json, checks=("length",), progress=False)
    assert r.verdict == "not exposed", r.reason
    items = r.check("length").items
    assert all(i["exact"] and i["prompt_tokens"] in (i["sent_tokens"], None) for i in items)
    assert {i["sent_tokens"] for i in items} == {255, 256, 257}
    assert not [x for x in app.state.log if x[1] == "/tokenize"]          # counted locally, never asked


def test_gateway_headers_are_sent_and_never_shown(monkeypatch):
    monkeypatch.setenv("KVIR_TEST_GATEWAY_TOKEN", "gw-secret-value-42")
    with AppThread(fake_app("ok", require=("x-gateway-token", "gw-secret-value-42"))) as srv:
        r = kvir.probe(srv.url, checks=("length",), header_env=("X-Gateway-Token=KVIR_TEST_GATEWAY_TOKEN",),
                       headers=("X-Team: team-visible-value",), progress=False)
        refused = kvir.probe(srv.url, checks=("length",), progress=False, max_requests=30)
    assert r.verdict == "not exposed", r.reason
    doc = json.dumps(r.as_json()) + json.dumps(r.to_sarif())
    assert "X-Gateway-Token" in doc and "gw-secret-value-42" not in doc and "team-visible-value" not in doc
    assert refused.verdict == "inconclusive"          # 401 everywhere: the engine was never reached


def test_python_api_inside_a_running_event_loop():
    async def notebook_cell():
        return kvir.probe("http://127.0.0.1:9", context=2048, engine="vllm", dry_run=True, progress=False)

    r = asyncio.run(notebook_cell())
    assert r.dry_run and [x["tokens"] for x in r.plan["lengths"]] == [2046, 2047, 2048, 2049]


@pytest.mark.slow
def test_chat_route_leaks_too(keys):
    from kvir.serve import ServeConfig, ServerThread

    with ServerThread(ServeConfig(build="leaking", pool=4096, context=8192)) as srv:
        r = kvir.probe(srv.url, api="chat", progress=False, **keys)
    assert r.verdict == "exposed" and r.check("canary").verdict == "exposed"
    assert all(e["path"] == "/v1/chat/completions" for e in r.requests)


@pytest.mark.slow
def test_sorted_pd_free_list_is_never_passed(keys):
    """With SGLang's PD allocator (freed pages merged and sorted), which tenant's KV a leaking request reads
    depends on the traffic's history; the probe may then find no canary, and must not say "not exposed"."""
    from kvir.serve import ServeConfig, ServerThread

    with ServerThread(ServeConfig(build="leaking", pool=4096, context=8192, free_list="sglang-pd")) as srv:
        r = kvir.probe(srv.url, progress=False, **keys)
    assert r.verdict == "exposed" and r.check("length").verdict == "exposed"
    assert r.check("canary").verdict in ("exposed", "inconclusive")
