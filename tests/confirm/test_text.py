"""The text formats, read as kvir confirm reads them, against what the producing software wrote: vLLM's own
log (its logged prompts and outputs against the bodies the openai client sent and got, saved beside it),
OpenAI-style stream chunks (joined as the client would join them), Python reprs (decoded as Python does)."""
from __future__ import annotations

import json
import random
import re
import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from kvir.confirm.text import TEXT_FORMATS, Extractor, TextSource, choose_format, record_batches
from kvir.core.errors import InputError
from kvir.core.sql import load

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "fixtures" / "real" / "confirm-vllm-0.32.0-kvir-serve"
BODIES = ROOT / "tests" / "fixtures" / "openai-response" / "vllm-0.32.0-bodies.jsonl"


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    for st in c.extract_statements(load("confirm/text/macros").text):
        c.execute(st)
    yield c
    c.close()


def texts_of(con, path: Path, fmt: str, paths: dict | None = None) -> tuple[list[dict], dict]:
    src = TextSource(1, path, TEXT_FORMATS[fmt], "given", paths or {})
    ex = Extractor(con, src)
    parts = [ex.texts(b) for b in record_batches(con, src, Path(tempfile.mkdtemp()))] + [ex.flush()]
    return pa.concat_tables(parts).to_pylist(), src.counts


def test_python_reprs_decode_to_the_strings_python_printed(con):
    rng = random.Random(3)
    alphabet = "ab '\"\\\n\t\r\x00\x1b\x7f\x85\u00e9\u2028\u200b\ufffd\U0001F600\U000E0001"
    strings = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(300)]
    got = con.execute("SELECT list_transform($r, lambda s: confirm_pyrepr(s))", {"r": [repr(s) for s in strings]}).fetchall()[0][0]
    assert got == strings
    # a lone surrogate (a str Python holds, UTF-8 cannot) is U+FFFD, as in kvir's line reader
    assert con.execute("SELECT confirm_pyrepr($r)", {"r": repr("a\ud800b\U0010ffff")}).fetchall() == [("a\ufffdb\U0010ffff",)]
    assert con.execute("SELECT confirm_pyrepr('None'), confirm_pyrepr('x'), confirm_pyrepr('''a\"')").fetchall() == [(None, None, None)]


def test_the_vllm_logs_prompts_and_outputs_are_what_the_client_sent_and_got(con):
    rows = [json.loads(line) for line in open(REAL / "client-bodies.jsonl", encoding="utf-8")]
    got, counts = texts_of(con, REAL / "vllm.log", "vllm")
    by = {(t["request_id"], t["part"]): t["text"] for t in got}
    on_vllm = [r for r in rows if r["instance"] == "vllm-cpu-0"]
    for r in on_vllm:
        body = r["response"][0] if isinstance(r["response"], list) else r["response"]
        rid = body["id"]
        prompt = by[(rid, "prompt")]
        if "messages" in r["request"]:           # chat: the rendered template holds every message as sent
            assert all(m["content"] in prompt for m in r["request"]["messages"])
            chunks = r["response"] if isinstance(r["response"], list) else [r["response"]]
            sent_back = "".join((c.get("message") or c.get("delta") or {}).get("content") or ""
                                for b in chunks for c in b.get("choices") or [])
            assert by[(rid, "response")] == sent_back          # --enable-log-outputs: the output as the client got it
        else:
            assert prompt == r["request"]["prompt"]
    # the warm-up completion of the launcher ('hi') is the one other prompt; nothing else is text
    assert len(got) == sum(2 if "messages" in r["request"] else 1 for r in on_vllm) + 1
    assert counts["read"] == counts["with_text"] + counts["without_text"] + counts["skipped"] + counts["quarantined"]


def test_stream_chunks_are_joined_per_choice_in_order(con):
    expect: dict[tuple[str, int], str] = {}
    for line in open(BODIES, encoding="utf-8"):
        b = json.loads(line)
        for c in b.get("choices") or []:
            key = (b["id"], c["index"])
            piece = c.get("text") or (c.get("message") or c.get("delta") or {}).get("content") or ""
            expect[key] = expect.get(key, "") + piece
    got, counts = texts_of(con, BODIES, "openai-response")
    assert {(t["request_id"], t["choice"]): t["text"] for t in got} == expect
    assert len(got) == len(expect)
    assert counts["read"] == sum(1 for _ in open(BODIES, encoding="utf-8"))


def test_gateway_exports_read_their_documented_fields(con, tmp_path):
    """Hand-written records: the LiteLLM and Langfuse fixtures their software wrote hold no text (LiteLLM
    keeps prompts only with store_prompts_in_spend_logs; the Langfuse ones are usage-only), so these follow
    the fields as LiteLLM 1.110.2's spend_tracking_utils.py and Langfuse's observation objects name them."""
    lite = tmp_path / "spend.ndjson"
    lite.write_text("\n".join(json.dumps(r) for r in [
        {"request_id": "chatcmpl-1", "proxy_server_request": json.dumps({"messages": [
            {"role": "system", "content": "sys"}, {"role": "user", "content": [{"type": "text", "text": "hello there"}]}]}),
         "messages": "{}", "response": json.dumps({"choices": [{"message": {"content": "general kenobi"}}]})},
        {"request_id": "chatcmpl-2", "proxy_server_request": "{}", "messages": "{}", "response": "{}"},
    ]) + "\n")
    got, counts = texts_of(con, lite, "litellm")
    assert [(t["request_id"], t["part"], t["text"]) for t in got] == [
        ("chatcmpl-1", "prompt", "sys\nhello there"), ("chatcmpl-1", "response", "general kenobi")]
    assert (counts["with_text"], counts["without_text"]) == (1, 1)
    lf = tmp_path / "obs.json"
    lf.write_text(json.dumps({"data": [
        {"id": "obs-1", "type": "GENERATION", "input": [{"role": "user", "content": "what is up"}],
         "output": {"role": "assistant", "content": "the sky"}},
        {"id": "obs-2", "type": "SPAN", "input": "ignored"},
        {"id": "obs-3", "type": "GENERATION", "input": "plain prompt", "output": "plain answer"}], "meta": {}}))
    got, counts = texts_of(con, lf, "langfuse")
    assert [(t["request_id"], t["part"], t["text"]) for t in got] == [
        ("obs-1", "prompt", "what is up"), ("obs-1", "response", "the sky"),
        ("obs-3", "prompt", "plain prompt"), ("obs-3", "response", "plain answer")]
    assert (counts["read"], counts["skipped"]) == (3, 1)


def test_formats_without_text_and_unmapped_generic_files_are_refused(tmp_path):
    with pytest.raises(InputError, match="holds no prompt or response text"):
        choose_format(ROOT / "tests" / "fixtures" / "nginx" / "access.json", "auto")
    with pytest.raises(InputError, match="holds no text kvir confirm reads"):
        choose_format(BODIES, "nginx")
    generic = ROOT / "tests" / "fixtures" / "generic-jsonl" / "requests.jsonl"
    with pytest.raises(InputError, match="--map"):
        choose_format(generic, "auto")
    assert choose_format(generic, "auto", mapped=True)[0].name == "generic-jsonl"
    assert re.search("openai-response", choose_format(BODIES, "auto")[1])


def test_a_stream_split_across_batches_is_one_text(con, tmp_path):
    """A JSON array of 9,000 chunks is read in batches of 4,096 records: streams that straddle a batch wait
    for their last chunk, and one never finished is still a text at the end of the file."""
    chunks, expect = [], {}
    for i in range(9000):
        sid = f"chatcmpl-{i // 7}"                  # streams of 7 chunks: many straddle 4,096 and 8,192
        last = i % 7 == 6 and i // 7 != 1285       # one stream (chunks 8995-9001) is cut off before its end
        piece = f"w{i} "
        chunks.append({"id": sid, "object": "chat.completion.chunk",
                       "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": "stop" if last else None}]})
        expect[sid] = expect.get(sid, "") + piece
    path = tmp_path / "chunks.json"
    path.write_text(json.dumps(chunks))
    got, counts = texts_of(con, path, "openai-response")
    assert {t["request_id"]: t["text"] for t in got} == expect and len(got) == len(expect)
    assert counts["read"] == counts["with_text"] == 9000
