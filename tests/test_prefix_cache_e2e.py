"""From logs to verdicts on the real vLLM-CPU prefix-cache runs (tests/fixtures/real/README-prefix-cache.md): the
case is built as a user builds it (a spec naming the server log and the client's saved responses, `kvir
triage`, then `kvir replay`), and every answer is checked against the run's construction in meta.json (who
primed which prefix when), worked out by its generator without the server.

What lengths alone prove (triage) is a bound: every tenant had sent an earlier prompt of 698+ tokens before any
cache hit, so each cross-tenant hit is "possibly affected", never "affected" (the request-by-request reasons
are below). The responses.jsonl holds each prompt's token ids, so the replay settles whose blocks each hit."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import kvir
from kvir.replay.run import replay_case

REAL = Path(__file__).parent / "fixtures" / "real"
VERSIONS = ["vllm-0.31.0-cpu-prefix-cache", "vllm-0.32.0-cpu-prefix-cache"]

SPEC = '''[incident]
id = "PC-REAL"
title = "prefix cache shared across tenants on a vLLM-CPU server"
models = ["tiny-llama"]
window_start = 2026-12-03T00:00:00Z
window_end = 2026-12-04T00:00:00Z
mechanism = "prefix-cache"

[prefix_cache]
instances = ["vllm-cpu-0"]
isolation = "salt"
block_tokens = 128          # vLLM's CPU platform default (meta.json block_size_source)

[[sources]]
path = "{run}/server.log"
format = "vllm"
source_tz = "UTC"
node = "vllm-cpu-0"
role = "mixed"

[[sources]]                 # the client's saved bodies (a stream's chunks as a list), tenant beside each
path = "{run}/responses.jsonl"
format = "generic-jsonl"
[sources.columns]
request_id = ["body.id", "body.0.id"]
ts = ["body.created", "body.0.created"]
model = ["body.model", "body.0.model"]
account_id = "tenant"
prompt_tokens = ["body.usage.prompt_tokens", "body.-1.usage.prompt_tokens"]
completion_tokens = ["body.usage.completion_tokens", "body.-1.usage.completion_tokens"]
cached_tokens = ["body.usage.prompt_tokens_details.cached_tokens", "body.-1.usage.prompt_tokens_details.cached_tokens"]
finish_reason = ["body.choices.0.finish_reason", "body.-2.choices.0.finish_reason"]
'''

# Triage from lengths, worked out from the construction (prompt lengths in meta.json; one instance; no lifetime):
#   4 tenant-b, 640 cached: b's own 3 (699 tokens) came first, and so did a's 1 and 2 (698, 700)   -> possibly [a]
#   6 tenant-a: a's own 1, 2 came first; so did b's 3, 4 and c's 5                                -> possibly [b, c]
#   8 tenant-c: c's own 5 (699); a's 1, 2, 6, 7 (648 >= 640); b's 3, 4                           -> possibly [a, b]
#   9 tenant-b: b's own 3, 4; a's and c's                                                         -> possibly [a, c]
#   13 tenant-c: c's own 5, 8; a's and b's (b's 12: 663 >= 640)                                   -> possibly [a, b]
#   2 tenant-a: only a's own 1 came before                                                        -> clean
TRIAGE = {"tenant-b-04": ["tenant-a"], "tenant-a-06": ["tenant-b", "tenant-c"], "tenant-c-08": ["tenant-a", "tenant-b"],
          "tenant-b-09": ["tenant-a", "tenant-c"], "tenant-c-13": ["tenant-a", "tenant-b"]}


def _rid(x_request_id: str, seq: int) -> str:
    return ("chatcmpl-" if seq == 12 else "cmpl-") + x_request_id      # the body's id: vLLM's prefix + X-Request-Id


@pytest.fixture(scope="module", params=VERSIONS)
def real_case(request, tmp_path_factory):
    run = REAL / request.param
    tmp = tmp_path_factory.mktemp(request.param)
    (tmp / "incident.toml").write_text(SPEC.format(run=run))
    r = kvir.triage(tmp / "incident.toml", out=tmp / "case")
    meta = json.loads((run / "meta.json").read_text())
    yield r, meta, tmp
    r.case.close()


def test_triage_of_the_real_runs_bounds_every_cross_tenant_hit(real_case):
    r, meta, _ = real_case
    a = r.affected
    got = {rid: (v, list(s)) for rid, v, s in zip(a["request_id"], a["verdict"], a["source_tenants"])}
    assert got == {_rid(k, int(k[-2:])): ("possibly affected", v) for k, v in TRIAGE.items()}
    assert set(a["instance"]) == {"vllm-cpu-0"}
    logged = {_rid(m["x_request_id"], m["seq"]): m["got_cached_tokens"] for m in meta["responses"]}
    assert all(logged[rid] == n for rid, n in zip(a["request_id"], a["cached_tokens"]))
    # every response the construction calls a cross-tenant hit is listed, and its primer among the candidates
    for m in meta["responses"]:
        if m["expected_verdict"].startswith("cross-tenant hit"):
            assert set(m["primed_by"]) <= set(got[_rid(m["x_request_id"], m["seq"])][1])
        if m["expected_cached_tokens"] == 0:
            assert _rid(m["x_request_id"], m["seq"]) not in got
    s = r.summary
    # the launcher's warm-up request is in the server log only: no cached_tokens, so it cannot be decided
    assert (s["affected"], s["possibly_affected"], s["cannot_decide"], s["requests_total"]) == (0, 5, 1, 14)
    assert s["prefix_cache"]["formats_without_cached_tokens"] == ["vllm"]


def test_replay_of_the_real_runs_gives_the_constructions_verdicts(real_case):
    r, meta, tmp = real_case
    run = replay_case(tmp / "case")
    res = run.results
    inc = res[res["build_role"] == "incident"].set_index("request_id")
    assert set(inc["build"]) == {"prefix-cache-salted"}          # the keying the logged counts reproduce
    assert set(inc["build_basis"]) == {"ran"}
    judged = 0
    for m in meta["responses"]:
        rid = _rid(m["x_request_id"], m["seq"])
        if rid not in inc.index:
            continue
        judged += 1
        row = inc.loc[rid]
        assert row["cached_tokens"] == m["got_cached_tokens"] == m["expected_cached_tokens"]
        owners = sorted({o["account_id"] for o in row["foreign_owners"]})
        if m["expected_verdict"].startswith("cross-tenant hit"):
            assert (row["verdict"], owners) == ("exposed", m["primed_by"]), rid
        else:          # a same-tenant hit, or one another tenant primed too: nothing the tenant had not sent
            assert (row["verdict"], owners) == ("not-reproduced", []), rid
    assert judged == 5
    # unsalted keying (the connector defect) on the same requests: b's 4 reads a's blocks of a prefix b had sent
    uns = res[res["build"] == "prefix-cache-unsalted"].set_index("request_id")
    assert "tenant-a" in uns.loc["cmpl-tenant-b-04", "reason"]
    exp = run.exposure
    assert sorted(zip(exp["reader_account_id"], exp["source_account_id"])) == [
        ("tenant-a", "tenant-c"), ("tenant-b", "tenant-a"), ("tenant-c", "tenant-a")]
