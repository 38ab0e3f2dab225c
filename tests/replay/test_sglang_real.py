"""Differential tests against the real code of published sglang wheels (0.5.19, 0.5.20, 0.5.21, 0.5.23).

Each build's wheel is fetched from PyPI (`pip download sglang==X --no-deps`, cached in $KVIR_WHEEL_CACHE,
default ~/.cache/kvir-wheels); tests/replay/sglang_checks.py runs the wheel's own classes and functions on
CPU in a subprocess (tests/replay/sglang_real.py: the modules under test are real, SGLang's other modules are
recording stubs, whose calls are checked here) and prints what they did. The tests compare that with kvir:

* the allocator: SGLang's PagedTokenToKVPoolAllocator and kvir's PageAllocator (replay/allocator.py,
  sglang-pd for PD nodes, sglang for mixed ones) give the same pages, free list and parked pages at every
  one of 3,000 seeded random alloc / free / partial free / free-group steps; and a deliberately wrong kvir
  strategy diverges (the comparison is not vacuous);
* the intake: at prompt lengths around the limit, SGLang's validate_input_length, set_finish_with_abort, the
  bootstrap door (is_unadmitted_reject where the build has it) and what follows the forward give the same
  outcome, message, stub and HTTP status as kvir's policy for that build; the door's own capacity check
  (`> pool`) agrees with kvir's; and builds.toml says the same.

The tests skip only when PyPI cannot be reached (saying so); CI has PyPI.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .sglang_real import WheelUnavailable, fetch_wheel

HERE = Path(__file__).resolve().parent
BUILDS = ("0.5.19", "0.5.20", "0.5.21", "0.5.23")
CONTEXT, POOL = 1_048_576, 681_280                # the incident: limit min(1,048,575, 681,279) - 5 = 681,274
PAGE, PAGES, STEPS = 16, 96, 3000
# stubs a check may call (everything else it calls is a failure): bookkeeping objects of Req.__init__, the
# KV sender the door builds for a fake bootstrap host, the allocator's debug-flag read
ALLOWED_STUB_CALLS = {"sglang.srt.disaggregation.fake.FakeKVSender", "sglang.srt.utils.get_bool_env_var"}


@pytest.fixture(scope="module")
def real_runs() -> dict[str, dict]:
    return {}


def run_build(real_runs: dict, version: str) -> dict:
    if version not in real_runs:
        try:
            wheel = fetch_wheel(version)
        except WheelUnavailable as e:
            pytest.skip(f"sglang {version} wheel not available: {e}")
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        p = subprocess.run([sys.executable, str(HERE / "sglang_checks.py"), "all", str(wheel), "--steps", str(STEPS),
                            "--pages", str(PAGES), "--page-size", str(PAGE), "--context", str(CONTEXT), "--pool",
                            str(POOL)], capture_output=True, text=True, timeout=600, env=env)
        assert p.returncode == 0, p.stderr[-3000:]
        real_runs[version] = json.loads(p.stdout.strip().splitlines()[-1])
    return real_runs[version]


# ----------------------------------------------------------------------------------------------- allocator

def replay_on_kvir(trace: list[dict], strategy: str) -> list[str]:
    """Apply SGLang's recorded operations to kvir's allocator; the first step where the state differs (the
    trace's later frees name SGLang's pages, so replaying stops there)."""
    from kvir.replay.allocator import PageAllocator

    a = PageAllocator(PAGES, PAGE, strategy)
    for i, s in enumerate(trace):
        if s["op"] == "alloc":
            got = a.alloc(s["n"], s["id"] if s["id"] is not None else 10**9)
            got = None if got is None else got.tolist()
            if got != s["pages"]:
                return [f"step {i}: alloc {s['n']}: kvir {got}, sglang {s['pages']}"]
        elif s["op"] == "free":
            (aid, pages), = s["items"]
            a.free(np.asarray(pages), aid)
        else:
            a.free_many([(np.asarray(p), aid) for aid, p in s["items"]])
        fl = a.free_list
        parked = sorted(fl.release_pages.tolist())
        if fl.free_pages.tolist() != s["free_pages"] or parked != s["parked"] or len(fl) * PAGE != s["available"]:
            return [f"step {i} ({s['op']}): free list differs: kvir {fl.free_pages.tolist()[:8]} parked {parked[:8]}, "
                    f"sglang {s['free_pages'][:8]} parked {s['parked'][:8]}"]
    return []


@pytest.mark.parametrize("version", BUILDS)
def test_allocator_gives_the_same_pages_as_sglang(real_runs, version):
    out = run_build(real_runs, version)
    for mode, strategy in (("alloc_pd", "sglang-pd"), ("alloc_nonpd", "sglang")):
        trace = out[mode]["steps"]
        assert len(trace) == STEPS
        ops = {op: sum(1 for s in trace if s["op"] == op) for op in ("alloc", "free", "free_group")}
        assert min(ops.values()) > 300 and any(s["op"] == "alloc" and s["pages"] is None for s in trace)
        assert any(s.get("partial") for s in trace) and any(s["parked"] for s in trace) == (mode == "alloc_pd")
        assert replay_on_kvir(trace, strategy) == [], f"{version} {mode}"
        assert set(out[mode]["stub_calls"]) <= ALLOWED_STUB_CALLS
    # not vacuous: the non-PD free list on the PD trace diverges
    assert replay_on_kvir(out["alloc_pd"]["steps"], "sglang")
    assert out["alloc_pd"]["class"].endswith(":PagedTokenToKVPoolAllocator")


# ----------------------------------------------------------------------------------------------- intake

def sglang_outcome(row: dict) -> str:
    """What the build's own code did with the request (see sglang_checks.py)."""
    door = row["door"]
    if row["message"] is None:
        assert door["enqueued"] and door["sender_created"]
        return "admitted"
    if not door["enqueued"]:
        assert door["scheduler_calls"] == ["retire_unadmitted_request"] and not door["sender_created"]
        return "rejected-at-door"
    af = row["after_forward"]
    if af["path"] == "_retire_aborted_prefill_result":
        assert af["retired"] and af["sender_calls"] == ["abort"]
        assert af["finished_reason"]["type"] == "abort" and af["finished_reason"]["status_code"] == 400
        return "retired-after-forward"
    assert af["sends_kv"] and not af["abort_checked_before_send"]
    return "forwarded-transferred"


def kvir_outcome(version: str, n: int):
    from kvir.replay.config import NodeLimits
    from kvir.replay.policy import policy_for
    from kvir.replay.prefill import PrefillWorker

    policy = policy_for(version)
    res = PrefillWorker(None, None).intake(np.arange(1, n + 1, dtype=np.int64), policy, NodeLimits(POOL, CONTEXT, 64))
    if res.status == 400 and res.stage == "prefill-door":
        return "rejected-at-door", res, policy
    assert res.status is None, (res.status, res.stage)
    if not res.aborted_at_intake:
        return "admitted", res, policy
    return ("retired-after-forward" if res.retire_after_forward else "forwarded-transferred"), res, policy


@pytest.mark.parametrize("version", BUILDS)
def test_intake_gives_the_same_outcome_as_sglang(real_runs, version):
    from kvir.replay.prefill import door_capacity_refuses
    from kvir.rules.builds import TABLE

    out = run_build(real_runs, version)["intake"]
    assert out["limit"] == 681_274
    seen = {}
    for row in out["rows"]:
        n = row["prompt_tokens"]
        theirs = sglang_outcome(row)
        ours, res, policy = kvir_outcome(version, n)
        assert ours == theirs, (version, n)
        seen[n] = theirs
        if row["message"] is not None:
            assert res.reason.removeprefix(f"{policy.name}: ") == row["message"]          # the same message
            assert row["stub"] == [0] and row["stub_type"] == "array" and row["to_finish"]["status_code"] == 400
            assert not row["finished"]                # the verdict waits in to_finish: finished() is False
            if res.tokens is not None:
                assert res.tokens.tolist() == row["stub"]
            assert policy.http_status == (200 if theirs == "forwarded-transferred" else 400)
            assert "is_unadmitted_reject" not in row or row["is_unadmitted_reject"] == (theirs == "rejected-at-door")
        assert set(row["stub_calls"]) <= ALLOWED_STUB_CALLS
    # below the limit every build admits; at it and above, the build's row of builds.toml
    assert [seen[n] for n in (681_272, 681_273)] == ["admitted", "admitted"]
    over = {seen[n] for n in (681_274, 681_275, POOL, POOL + 1, CONTEXT - 1)}
    assert over == {TABLE.over_long(version).outcome}
    assert {"0.5.19": "forwarded-transferred", "0.5.20": "retired-after-forward", "0.5.21": "rejected-at-door",
            "0.5.23": "rejected-at-door"}[version] in over
    # the door's own capacity check, on requests that skipped intake: `> pool`
    ctl = {c["prompt_tokens"]: not c["door"]["enqueued"] for c in out["control"]}
    assert ctl == {POOL: False, POOL + 1: True} == {n: door_capacity_refuses(n, POOL) for n in (POOL, POOL + 1)}
    # SGLang's own logger.error line, which kvir audit reads as an input-length rejection
    assert out["log"][0] == ("Input length (681274 tokens) exceeds the maximum allowed length (681274 tokens). "
                             "Use a shorter input or enable --allow-auto-truncate., self.rid='req-681274'")


def test_the_real_rejection_line_goes_through_kvir_audit(real_runs, tmp_path):
    """The message 0.5.19's own set_finish_with_abort logged, behind the TP0 prefix of its configure_logger."""
    from kvir.audit import audit

    out = run_build(real_runs, "0.5.19")["intake"]
    from tests.audit.grammar import startup

    lines = startup("0.5.19", "2026-08-27 10:00:00", mode="prefill", context=CONTEXT, pool=POOL)
    lines += [f"[2026-08-27 10:05:0{i} TP0] {m}" for i, m in enumerate(out["log"][:3])]
    p = tmp_path / "glm-prefill-0.log"
    p.write_text("\n".join(lines) + "\n")
    r = audit([p], source_tz="UTC")
    ind = r.runtime_indicators
    assert list(ind["indicator"]) == ["input-length-exceeds"] and int(ind["count"].iloc[0]) == 3
    assert int(ind["limit_tokens"].iloc[0]) == 681_274
    f = r.findings[r.findings.rule_id == "KVA011"].iloc[0]
    assert f["severity"] == "critical" and "1-token stub" in f["message"]
