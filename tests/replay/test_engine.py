"""The engine's admission path step by step (research/sglang.md §2), both policies, and its invariants.

Limits used here, worked out by hand: prefill pool 640, context 4096 ->
    max_req_input_len = min(4096 - 1, 640 - 1) - 5 = 634   (refused when len >= 634)
decode pool 8192 -> its own limit min(4095, 8191) - 5 = 4090.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from kvir.replay.attribution import replay_target
from kvir.replay.config import EngineConfig, NodeLimits
from kvir.replay.engine import PDEngine
from kvir.replay.models import RecallModel
from kvir.replay.policy import PatchedPolicy, Policy, UnpatchedPolicy
from kvir.replay.request import ReplayRequest

from .helpers import small_engine


def eng(**kw) -> PDEngine:
    return small_engine(prefill_pool=640, decode_pool=8192, context=4096, page=16, **kw)


def test_limits_formula():
    assert NodeLimits(640, 4096, 16).max_req_input_len == 634
    assert NodeLimits(681_280, 1_048_576, 64).max_req_input_len == 681_274      # the incident (DESIGN.md §1)
    assert NodeLimits(2_097_152, 1_048_576, 64).max_req_input_len == 1_048_570


@pytest.mark.parametrize("L, unpatched, patched, prefill_tokens, stage", [
    (633, 200, 200, 633, "served"),              # max_req_input_len - 1: fits, computed in full
    (634, 200, 400, 1, "prefill-validate"),      # exactly the limit: refused (>=), the placeholder path
    (635, 200, 400, 1, "prefill-validate"),      # limit + 1
    (640, 200, 400, 1, "prefill-validate"),      # at the pool
    (641, 200, 400, 1, "prefill-validate"),      # over the pool: bootstrap admission still passes (1 token)
    (4089, 200, 400, 1, "prefill-validate"),     # just under the decode node's own limit
])
def test_admission_boundaries(L, unpatched, patched, prefill_tokens, stage):
    e = eng()
    e.check_every_step = True
    with e.counterfactual():
        p = e.run(ReplayRequest("r", L, 4), PatchedPolicy())
    u = e.run(ReplayRequest("r", L, 4), UnpatchedPolicy())
    assert (u.http_status, p.http_status) == (unpatched, patched)
    assert u.prefill_tokens == prefill_tokens and u.transferred_tokens == prefill_tokens
    assert u.decode_seq_len == L + 1 and len(u.tokens) == 4
    assert p.stage == stage
    if patched == 400:
        assert p.reason.startswith(f"Input length ({L} tokens) exceeds the maximum allowed length (634 tokens)")
        assert p.tokens == [] and p.transferred_tokens is None
    e.check_integrity()


@pytest.mark.parametrize("L, stage", [
    (4096, "tokenizer"),          # at the context: the tokenizer refuses (len >= context)
    (4097, "tokenizer"),
    (4095, "decode-validate"),    # context - 1 passes the tokenizer but not the decode node's own limit (4090)
    (4090, "decode-validate"),
])
def test_context_boundary_refused_by_both(L, stage):
    e = eng()
    u = e.run(ReplayRequest("r", L, 4), UnpatchedPolicy())
    p = e.run(ReplayRequest("r", L, 4), PatchedPolicy())
    assert u.http_status == p.http_status == 400 and u.stage == p.stage == stage


def test_prompt_over_the_decode_pool():
    e = small_engine(prefill_pool=640, decode_pool=2048, context=4096, page=16)      # decode limit 2042
    assert e.run(ReplayRequest("a", 2048, 2)).stage == "decode-validate"
    assert e.run(ReplayRequest("b", 2049, 2)).stage == "decode-capacity"
    assert e.run(ReplayRequest("c", 2041, 2)).http_status == 200                       # placeholder, served


def test_each_fix_alone():
    """The decode-side token-count check alone refuses the placeholder; the patched kernel alone serves it
    but reads nothing it does not own."""
    base = dict(reject_before_bootstrap=False, bootstrap_checks_input_limit=False)
    count_only = Policy("token-count", decode_checks_token_count=True, kernel_checks_ownership=False, **base)
    kernel_only = Policy("kernel", decode_checks_token_count=False, kernel_checks_ownership=True, **base)
    boot_only = Policy("bootstrap", reject_before_bootstrap=False, bootstrap_checks_input_limit=True,
                       decode_checks_token_count=False, kernel_checks_ownership=False)
    e2 = small_engine(prefill_pool=640, decode_pool=1024, context=4096, page=16)        # force page reuse
    e2.run(ReplayRequest("writer", 600, 30, account="w", decode_steps=0))
    e2.run(ReplayRequest("w2", 400, 3, account="w", decode_steps=0))
    out = e2.run(ReplayRequest("v", 700, 6), count_only)
    assert (out.http_status, out.stage) == (400, "decode-token-count")
    assert e2.run(ReplayRequest("v2", 700, 6), boot_only).stage == "bootstrap"
    k = e2.start(ReplayRequest("v3", 700, 6), kernel_only, attribution=True)
    assert k.http_status == 200 and k.owners and all(o.attention_mass == 0.0 for o in k.owners)
    assert k.uninitialised_mass == 0.0 and k.self_mass == pytest.approx(1.0)
    e2.finish("v3")
    u = e2.run(ReplayRequest("v4", 700, 6), UnpatchedPolicy(), attribution=True)
    assert sum(o.attention_mass for o in u.owners) > 0.99


def test_auto_truncate():
    """--allow-auto-truncate: the prefill computes max_req_input_len tokens; the decode side still
    pre-allocated the full prompt, so unpatched decodes over stale slots and patched refuses the count."""
    lim = NodeLimits(640, 4096, 16, allow_auto_truncate=True)
    e = PDEngine(EngineConfig(prefill=lim, decode=NodeLimits(8192, 4096, 16)), RecallModel())
    u = e.run(ReplayRequest("t", 700, 3), UnpatchedPolicy())
    assert (u.http_status, u.prefill_tokens) == (200, 634)
    p = e.run(ReplayRequest("t2", 700, 3), PatchedPolicy())
    assert (p.http_status, p.stage) == (400, "decode-token-count")


def test_batched_transfer_lands_the_same_bytes():
    pools = []
    for cap in (None, 1, 3):
        e = PDEngine(EngineConfig(prefill=NodeLimits(640, 4096, 16), decode=NodeLimits(1024, 4096, 16),
                                  transfer_batch_cap=cap), RecallModel())
        out = e.start(ReplayRequest("x", 333, 1))
        assert out.http_status == 200
        pools.append((e.decode_node.pool.k.clone(), e.decode_node.pool.v.clone(), e.decode_node.ledger.writer.copy()))
    for k, v, w in pools[1:]:
        assert torch.equal(k, pools[0][0]) and torch.equal(v, pools[0][1]) and np.array_equal(w, pools[0][2])


def _state(e: PDEngine):
    out = []
    for n in (e.prefill_node, e.decode_node):
        out += [n.pool.k.clone(), n.pool.v.clone(), n.pool.slot_stamp.clone(), n.pool.page_epoch.clone(),
                n.pool.page_owner.clone(), n.alloc.owner.copy(), n.alloc.epoch.copy(), n.alloc.free_list.pages().copy(),
                n.ledger.writer.copy(), n.ledger.pos.copy(), n.ledger.token.copy(), n.ledger.stamp.copy(),
                n.ledger.last_closed.copy(), {k: v[: n.ledger.n_epochs].copy() for k, v in n.ledger.ep.items()}]
    return out + [len(e.registry), e.step, sorted(e.decode.live)]


def _same(a, b) -> bool:
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor):
            if not torch.equal(x, y):
                return False
        elif isinstance(x, np.ndarray):
            if not np.array_equal(x, y):
                return False
        elif isinstance(x, dict):
            # content hashes of closed tenancies are filled lazily (a cache of a fact about the past, see
            # KVNode.seal_previous): a counterfactual may fill an unknown one, never change a known one
            same = [np.array_equal(x[k], y[k]) if k != "hash" else bool(((x[k] == y[k]) | (x[k] == 0)).all())
                    for k in x]
            if x.keys() != y.keys() or not all(same):
                return False
        elif x != y:
            return False
    return True


def test_random_workload_keeps_every_invariant_and_counterfactuals_leave_no_trace():
    rng = np.random.default_rng(7)
    e = small_engine(prefill_pool=640, decode_pool=2048, context=4096, page=16)
    e.check_every_step = True
    live: list[str] = []
    for i in range(60):
        op = rng.random()
        if op < 0.35 and live:
            e.finish(live.pop(int(rng.integers(len(live)))))
        else:
            L = int(rng.choice([rng.integers(1, 600), rng.integers(634, 1500)]))
            req = ReplayRequest(f"r{i}", L, int(rng.integers(1, 12)), account=f"a{i % 5}",
                                decode_steps=int(rng.integers(0, 4)))
            if rng.random() < 0.3:
                before = _state(e)
                with e.counterfactual():
                    e.start(req, PatchedPolicy() if rng.random() < 0.5 else UnpatchedPolicy(), attribution=True)
                assert _same(before, _state(e)), f"step {i}: the counterfactual left a trace"
            out = e.start(req)
            if out.http_status == 200:
                live.append(req.rid)
        e.check_integrity()
    # a whole target replay (patched, attributed probe, causal checks, production run) keeps them too
    res = replay_target(e, ReplayRequest("target", 900, 6, account="t", decode_steps=5))
    assert res.unpatched.http_status == 200 and res.patched.http_status == 400
    e.check_integrity()


def test_integrity_check_catches_a_desynchronised_stamp():
    e = eng()
    e.start(ReplayRequest("a", 100, 3))
    e.decode_node.pool.slot_stamp[20] += 1
    with pytest.raises(AssertionError, match="stamps disagree"):
        e.check_integrity()
