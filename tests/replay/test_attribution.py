"""Attribution ground truth: who wrote the slots a stub request decoded over, down to token ranges, on the
leaking builds (sglang-0.5.19: the stub is forwarded and its first KV page transferred whole).

Scenario, worked out by hand from SGLang's PD allocator (free_pages head first; released pages merged and
sorted only when free_pages runs short) on both nodes, and from Mooncake moving whole pages. Pages of 16;
prefill pool 640 = 40 pages, limit 634; decode pool 1024 = 64 pages.

    A  prompt 600, 20 outputs. Prefill: pages 1..38 (positions 0..599), then parked; free [39, 40].
       Decode: pages 1..38 receive them, page 39 while decoding: positions 0..618. A ends: parked [1..39].
    C  prompt 500, 10 outputs. Prefill: 2 free < 32 -> merge+sort -> pages 1..32; free [33..40].
       Decode: 25 free < 32 -> merge+sort -> pages 1..32. Its last page (positions 496..511) arrives whole:
       slots 500..511 carry A's prefill positions 500..511; C's decoding overwrites 500..508, so decode
       positions 509..511 hold A's data carried in by C's transfer. C ends: parked.
    V  prompt 700 (>= 634: the stub [0]), 12 outputs. Prefill: the stub takes page 33 (free [33..40]), which
       held A's positions 512..527: slot 0 becomes V's stub, slots 1..15 keep A's positions 513..527.
       Decode: 32 free < 44 -> merge+sort -> pages 1..44; the stub's page lands on page 1. So V's positions
         0          V's own stub KV (token 0)
         1..15      A's prompt positions 513..527 (carried from the prefill node)
         16..508    C (decode pages 1..32)
         509..511   A's positions 509..511 (carried in by C's transfer)
         512..618   A (decode pages 33..39)
         619..699   never written (81 slots)
       A: 15 + 3 + 107 = 125 slots, positions 509..618 (the carried 513..527 lie inside), 7 decode tenancies
       (pages 33..39), 18 carried; C: 493 slots, positions 16..508, 31 tenancies (pages 2..32).
"""
from __future__ import annotations

import numpy as np
import pytest

from kvir.replay.attribution import causal_check, foreign_token_runs, replay_target
from kvir.replay.policy import KVIR_PROPOSAL, policy_for
from kvir.replay.request import ReplayRequest
from kvir.replay.tokens import locate

from .helpers import expected_tokens, small_engine

A = ReplayRequest("req-A", 600, 20, account="acct-A", decode_steps=0)
C = ReplayRequest("req-C", 500, 10, account="acct-C", decode_steps=0)
V = ReplayRequest("req-V", 700, 12, account="acct-V")
LEAK, RETIRE, DOOR = policy_for("0.5.19"), policy_for("0.5.20"), policy_for("0.5.21")


def scenario(with_c: bool = True):
    e = small_engine(prefill_pool=640, decode_pool=1024, context=4096, page=16)
    assert e.run(A).http_status == 200
    if with_c:
        assert e.run(C).http_status == 200
    return e


def owners(e, out):
    return [(e.registry.rid(o.uid), e.registry.account(o.uid), o.tokens, o.first_token, o.last_token) for o in out.owners]


def test_last_writer_is_named_with_exact_token_ranges():
    e = scenario()
    out = e.start(V, LEAK, attribution=True)
    assert out.http_status == 200 and out.prefill_tokens == 1 and out.transferred_pages == 1
    assert out.carried_foreign == 15                           # the stub's page: slots 1..15 were A's
    assert owners(e, out) == [("req-A", "acct-A", 125, 509, 618), ("req-C", "acct-C", 493, 16, 508)]
    assert [(o.epochs, o.carried) for o in out.owners] == [(7, 18), (31, 0)]
    assert out.uninitialised_tokens == 81
    # decode steps 1..11 read V's logical slots 1..11: A's carried prefill positions hold all the mass
    assert out.owners[0].attention_mass == pytest.approx(1.0, abs=1e-6)
    assert out.uninitialised_mass < 1e-6 and out.self_mass < 1e-6
    led = e.decode_node.ledger
    v_pages = e.decode.live[e.registry.get("req-V")].pages
    assert v_pages[0] == 1 and list(led.pos[16 * 1 + 1:16 * 2]) == list(range(513, 528))
    for rec in out.steps:
        assert rec.top_index == rec.step and e.registry.rid(rec.top_writer) == "req-A"


def test_recall_model_returns_the_source_tokens_on_the_leaking_build_and_400_on_the_others():
    e = scenario()
    for p, stage in ((RETIRE, "prefill-retired-after-forward"), (DOOR, "prefill-door"), (KVIR_PROPOSAL, "bootstrap")):
        with e.counterfactual():
            o = e.run(V, p)
        assert (o.http_status, o.stage, o.tokens) == (400, stage, [])
    out = e.start(V, LEAK, attribution=True)
    assert out.tokens[0] == 0                                   # the prefill's first token: the stub's
    assert out.tokens[1:] == expected_tokens("req-A", 513, 11)  # then A's prompt from the stub's prefill page
    assert locate(np.array(out.tokens[1:]), "req-A", 600, 1 << 16) == 513   # traceable without the ledger
    assert foreign_token_runs(out, e.registry) == {e.registry.get("req-A"): expected_tokens("req-A", 513, 11)}


def test_negative_control_without_the_overwrite_names_the_first_writer():
    e = scenario(with_c=False)
    # without C: V's decode allocation (44 pages, 25 free) merges A's released pages: pages 1..44 again; on
    # prefill the stub takes page 39, which nobody wrote: the stub's page carries zeros over A's positions 1..15
    out = e.start(V, LEAK, attribution=True)
    assert out.carried_foreign == 0
    assert owners(e, out) == [("req-A", "acct-A", 603, 16, 618)]
    assert out.uninitialised_tokens == 15 + 81


def test_causal_sentinel_swap_changes_the_output_only_for_the_owner_read():
    e = scenario()
    with e.counterfactual():
        base = e.start(V, LEAK, attribution=True)
    c_uid, a_uid = e.registry.get("req-C"), e.registry.get("req-A")
    rc = causal_check(e, V, c_uid, base.tokens, LEAK)
    ra = causal_check(e, V, a_uid, base.tokens, LEAK)
    assert (rc.slots, ra.slots) == (493, 125)
    assert ra.changed_tokens == 11 and ra.first_changed == 1   # every step read A's carried slots
    assert rc.changed_tokens == 0                               # C's slots carried no attention mass


def test_replay_target_runs_every_build_and_checks_determinism():
    e = scenario()
    res = replay_target(e, V, LEAK, [RETIRE, DOOR, KVIR_PROPOSAL], causal_top=2)
    assert {k: o.http_status for k, o in res.outcomes.items()} == {
        "sglang-0.5.19": 200, "sglang-0.5.20": 400, "sglang-0.5.21": 400, "kvir-proposal": 400}
    assert res.main is res.outcomes["sglang-0.5.19"]
    assert [e.registry.rid(c.owner) for c in res.causal] == ["req-A", "req-C"]
    assert [c.changed_tokens for c in res.causal] == [11, 0]
    assert "req-V" in {e.registry.rid(u) for u in e.decode.live}      # the production run holds its pages
    e.check_integrity()


def test_ledger_epoch_records_of_the_pages_read():
    e = scenario()
    out = e.start(V, LEAK, attribution=True)
    led = e.decode_node.ledger
    page1 = led.epochs_of_page(1)
    recs = [led.epoch(int(x)) for x in page1]
    # page 1: A's tenancy, C's, then V's; C wrote all 16 slots, V only slot 0 (the rest arrived carried)
    assert [e.registry.rid(r["owner"]) for r in recs] == ["req-A", "req-C", "req-V"]
    assert [(r["lo"], r["hi"]) for r in recs] == [(0, 16), (0, 16), (0, 1)]
    assert recs[0]["free_step"] < recs[1]["alloc_step"] < recs[1]["free_step"] < recs[2]["alloc_step"]
    assert out.owners[1].epochs == 31                          # C's slots came from 31 page tenancies


def test_content_hash_of_the_tenancies_read_equals_the_hash_at_their_free():
    """The ledger's content hash of each page tenancy V read is what that tenancy left when it was freed
    (checked against an engine that hashes every page at free time)."""
    lazy = scenario()
    lazy.start(V, LEAK, attribution=True)
    eager = small_engine(prefill_pool=640, decode_pool=1024, context=4096, page=16, hash_on_free=True)
    eager.run(A)
    eager.run(C)
    led_l, led_e = lazy.decode_node.ledger, eager.decode_node.ledger
    v_pages = lazy.decode.live[lazy.registry.get("req-V")].pages
    prev = led_l.last_closed[v_pages]
    assert (prev > 0).sum() == 39                 # pages 1..32 last held by C, 33..39 by A, 40..44 never
    assert (led_l.ep["hash"][prev[prev > 0]] != 0).all()
    assert np.array_equal(led_l.ep["hash"][prev[prev > 0]], led_e.ep["hash"][prev[prev > 0]])
