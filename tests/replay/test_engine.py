"""The engine's admission path step by step, per build (kvir.rules.builds: sglang-0.5.19 transfers the stub's
page, sglang-0.5.20 retires it after its forward, sglang-0.5.21 rejects it at the door) and kvir's proposal,
and its invariants.

Limits used here, worked out by hand: prefill pool 640, context 4096 ->
    max_req_input_len = min(4096 - 1, 640 - 1) - 5 = 634   (refused when len >= 634)
decode pool 8192 -> its own limit min(4095, 8191) - 5 = 4090.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from kvir.replay.attribution import replay_target
from kvir.replay.config import NodeLimits, PairConfig
from kvir.replay.pd_pair import PDPair
from kvir.replay.models import RecallModel
from dataclasses import replace

from kvir.replay.policy import KVIR_PROPOSAL, policy_for
from kvir.replay.request import ReplayRequest

from .helpers import small_engine


def eng(**kw) -> PDPair:
    return small_engine(prefill_pool=640, decode_pool=8192, context=4096, page=16, **kw)


def test_limits_formula():
    assert NodeLimits(640, 4096, 16).max_req_input_len == 634
    assert NodeLimits(681_280, 1_048_576, 64).max_req_input_len == 681_274      # the reference incident
    assert NodeLimits(2_097_152, 1_048_576, 64).max_req_input_len == 1_048_570


LEAK, RETIRE, DOOR = policy_for("0.5.19"), policy_for("0.5.20"), policy_for("0.5.21")
# what each policy does with a prompt of max_req_input_len (634) or more: (HTTP status, stage, prefill tokens,
# pages transferred), from builds.toml [[over_long_pd]] and the proposal's definition
OVER = {LEAK.name: (200, "served", 1, 1), RETIRE.name: (400, "prefill-retired-after-forward", 1, None),
        DOOR.name: (400, "prefill-door", None, None), KVIR_PROPOSAL.name: (400, "bootstrap", None, None)}


@pytest.mark.parametrize("L", [633, 634, 635, 640, 641, 4089])
@pytest.mark.parametrize("policy", [LEAK, RETIRE, DOOR, KVIR_PROPOSAL], ids=lambda p: p.name)
def test_admission_boundaries(L, policy):
    """633 = max_req_input_len - 1 fits and is computed in full on every build; 634 (the limit: `>=`), 635,
    640 (the pool), 641 (over the pool: the door's `> pool` check sees the 1-token stub and passes it) and
    4089 (under decode's own limit) take each build's over-long path."""
    e = eng()
    e.check_every_step = True
    out = e.run(ReplayRequest("r", L, 4), policy)
    if L == 633:
        assert (out.http_status, out.stage, out.prefill_tokens, out.transferred_pages) == (200, "served", 633, 40)
        assert len(out.tokens) == 4
    else:
        status, stage, pre, pages = OVER[policy.name]
        assert (out.http_status, out.stage, out.prefill_tokens, out.transferred_pages) == (status, stage, pre, pages)
        if status == 200:
            assert out.decode_seq_len == L + 1 and len(out.tokens) == 4
        else:
            assert out.tokens == []
            assert f"Input length ({L} tokens) exceeds the maximum allowed length (634 tokens)" in out.reason
    e.check_integrity()


@pytest.mark.parametrize("L, stage", [
    (4096, "tokenizer"),          # at the context: the tokenizer refuses (len >= context)
    (4097, "tokenizer"),
    (4095, "decode-validate"),    # context - 1 passes the tokenizer but not the decode node's own limit (4090)
    (4090, "decode-validate"),
])
def test_context_boundary_refused_by_both(L, stage):
    e = eng()
    outs = [e.run(ReplayRequest("r", L, 4), p) for p in (LEAK, RETIRE, DOOR, KVIR_PROPOSAL)]
    assert {(o.http_status, o.stage) for o in outs} == {(400, stage)}


def test_prompt_over_the_decode_pool():
    e = small_engine(prefill_pool=640, decode_pool=2048, context=4096, page=16)      # decode limit 2042
    assert e.run(ReplayRequest("a", 2048, 2)).stage == "decode-validate"
    assert e.run(ReplayRequest("b", 2049, 2)).stage == "decode-capacity"
    assert e.run(ReplayRequest("c", 2041, 2)).http_status == 200                       # placeholder, served


def test_each_part_of_kvirs_proposal_alone():
    """kvir's proposal, part by part, on top of the leaking builds' path: the decode-side token-count check
    alone refuses the stub; the owner-checking kernel alone serves it but reads nothing it does not own."""
    count_only = replace(KVIR_PROPOSAL, name="kvir-token-count", over_long="forwarded-transferred", http_status=200,
                         kernel_checks_ownership=False)
    kernel_only = replace(KVIR_PROPOSAL, name="kvir-kernel", over_long="forwarded-transferred", http_status=200,
                          decode_checks_token_count=False)
    e2 = small_engine(prefill_pool=640, decode_pool=1024, context=4096, page=16)        # force page reuse
    e2.run(ReplayRequest("writer", 600, 30, account="w", decode_steps=0))
    e2.run(ReplayRequest("w2", 400, 3, account="w", decode_steps=0))
    out = e2.run(ReplayRequest("v", 700, 6), count_only)
    assert (out.http_status, out.stage) == (400, "decode-token-count")
    assert e2.run(ReplayRequest("v2", 700, 6), KVIR_PROPOSAL).stage == "bootstrap"
    k = e2.start(ReplayRequest("v3", 700, 6), kernel_only, attribution=True)
    assert k.http_status == 200 and k.owners and all(o.attention_mass == 0.0 for o in k.owners)
    assert k.uninitialised_mass == 0.0 and k.self_mass == pytest.approx(1.0)
    e2.finish("v3")
    u = e2.run(ReplayRequest("v4", 700, 6), LEAK, attribution=True)
    assert sum(o.attention_mass for o in u.owners) > 0.99


def test_auto_truncate():
    """--allow-auto-truncate: validate_input_length truncates instead of aborting (every build), the prefill
    computes max_req_input_len tokens and every build serves them while decode pre-allocated the full prompt;
    kvir's proposal refuses the short token count."""
    lim = NodeLimits(640, 4096, 16, allow_auto_truncate=True)
    e = PDPair(PairConfig(prefill=lim, decode=NodeLimits(8192, 4096, 16)), RecallModel())
    for i, p in enumerate((LEAK, RETIRE, DOOR)):
        u = e.run(ReplayRequest(f"t{i}", 700, 3), p)
        assert (u.http_status, u.prefill_tokens, u.transferred_pages) == (200, 634, 40)
    k = e.run(ReplayRequest("t9", 700, 3), KVIR_PROPOSAL)
    assert (k.http_status, k.stage) == (400, "decode-token-count")


def test_batched_transfer_lands_the_same_bytes():
    pools = []
    for cap in (None, 1, 3):
        e = PDPair(PairConfig(prefill=NodeLimits(640, 4096, 16), decode=NodeLimits(1024, 4096, 16),
                                  transfer_batch_cap=cap), RecallModel())
        out = e.start(ReplayRequest("x", 333, 1))
        assert out.http_status == 200
        pools.append((e.decode_node.pool.k.clone(), e.decode_node.pool.v.clone(), e.decode_node.ledger.writer.copy()))
    for k, v, w in pools[1:]:
        assert torch.equal(k, pools[0][0]) and torch.equal(v, pools[0][1]) and np.array_equal(w, pools[0][2])


def _state(e: PDPair):
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
                    e.start(req, [LEAK, RETIRE, DOOR, KVIR_PROPOSAL][int(rng.integers(4))], attribution=True)
                assert _same(before, _state(e)), f"step {i}: the counterfactual left a trace"
            out = e.start(req)
            if out.http_status == 200:
                live.append(req.rid)
        e.check_integrity()
    # a whole target replay (other builds, attributed probe, causal checks, production run) keeps them too
    res = replay_target(e, ReplayRequest("target", 900, 6, account="t", decode_steps=5), LEAK, [RETIRE, DOOR])
    assert [res.outcomes[p.name].http_status for p in (LEAK, RETIRE, DOOR)] == [200, 400, 400]
    e.check_integrity()


def test_integrity_check_catches_a_desynchronised_stamp():
    e = eng()
    e.start(ReplayRequest("a", 100, 3))
    e.decode_node.pool.slot_stamp[20] += 1
    with pytest.raises(AssertionError, match="stamps disagree"):
        e.check_integrity()
