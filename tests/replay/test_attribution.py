"""Attribution ground truth: who wrote the slots a placeholder request decoded over, down to token ranges.

Scenario, worked out by hand from SGLang's PD allocator (free_pages head first; released pages merged and
sorted only when free_pages runs short). Decode pool 1024 tokens = 64 pages of 16; prefill limit 634.

    A  prompt 600, 20 outputs: KV at positions 0..618 -> pages 1..39 (38 pre-allocated + 1 while decoding)
    A  ends: release = [1..39]; free_pages = [40..64]
    C  prompt 500, 10 outputs: 25 free < 32 needed -> merge+sort -> C takes pages 1..32, positions 0..508
    C  ends: release = [1..32]; free_pages = [33..64]
    V  prompt 700 (>= 634: the placeholder), 12 outputs: 32 free < 44 -> merge+sort -> V takes pages 1..44
       V position p sits on page p // 16 + 1, where C wrote position p (p <= 508) and A wrote it (509..618);
       positions 619..699 were never written. V's own transfer wrote position 0 only.
"""
from __future__ import annotations

import numpy as np
import pytest

from kvir.replay.attribution import causal_check, foreign_token_runs, replay_target
from kvir.replay.policy import PatchedPolicy, UnpatchedPolicy
from kvir.replay.request import ReplayRequest
from kvir.replay.tokens import locate

from .helpers import expected_tokens, small_engine

A = ReplayRequest("req-A", 600, 20, account="acct-A", decode_steps=0)
C = ReplayRequest("req-C", 500, 10, account="acct-C", decode_steps=0)
V = ReplayRequest("req-V", 700, 12, account="acct-V")


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
    out = e.start(V, UnpatchedPolicy(), attribution=True)
    assert out.http_status == 200 and out.prefill_tokens == 1
    assert owners(e, out) == [("req-C", "acct-C", 508, 1, 508), ("req-A", "acct-A", 110, 509, 618)]
    assert out.uninitialised_tokens == 81
    # decode steps 1..11 read V's logical slots 1..11: C's positions 1..11 hold all the mass
    assert out.owners[0].attention_mass == pytest.approx(1.0, abs=1e-6)
    assert out.uninitialised_mass < 1e-6 and out.self_mass < 1e-6
    for rec in out.steps:
        assert rec.top_index == rec.step and e.registry.rid(rec.top_writer) == "req-C"


def test_recall_model_returns_the_source_tokens_unpatched_and_400_patched():
    e = scenario()
    with e.counterfactual():
        p = e.run(V, PatchedPolicy())
    assert (p.http_status, p.stage, p.tokens) == (400, "prefill-validate", [])
    out = e.start(V, UnpatchedPolicy(), attribution=True)
    assert out.tokens[0] == 0                                   # the prefill's first token: the placeholder's
    assert out.tokens[1:] == expected_tokens("req-C", 1, 11)    # then C's prompt, in order
    assert locate(np.array(out.tokens[1:]), "req-C", 500, 1 << 16) == 1    # traceable without the ledger
    assert foreign_token_runs(out, e) == {e.registry.get("req-C"): expected_tokens("req-C", 1, 11)}


def test_negative_control_without_the_overwrite_names_the_first_writer():
    e = scenario(with_c=False)
    # without C: V's allocation (44 pages, 25 free) merges A's released pages: pages 1..44 again
    out = e.start(V, UnpatchedPolicy(), attribution=True)
    assert owners(e, out) == [("req-A", "acct-A", 618, 1, 618)]
    assert out.tokens[1:] == expected_tokens("req-A", 1, 11)


def test_causal_sentinel_swap_changes_the_output_only_for_the_owner_read():
    e = scenario()
    with e.counterfactual():
        base = e.start(V, UnpatchedPolicy(), attribution=True)
    c_uid, a_uid = e.registry.get("req-C"), e.registry.get("req-A")
    rc = causal_check(e, V, c_uid, base.tokens)
    ra = causal_check(e, V, a_uid, base.tokens)
    assert (rc.slots, ra.slots) == (508, 110)
    assert rc.changed_tokens == 11 and rc.first_changed == 1   # every step that read C's slots
    assert ra.changed_tokens == 0                               # A's slots carried no attention mass


def test_replay_target_runs_both_ways_and_checks_determinism():
    e = scenario()
    res = replay_target(e, V, causal_top=2)
    assert (res.unpatched.http_status, res.patched.http_status) == (200, 400)
    assert [e.registry.rid(c.owner) for c in res.causal] == ["req-C", "req-A"]
    assert [c.changed_tokens for c in res.causal] == [11, 0]
    assert "req-V" in {e.registry.rid(u) for u in e.decode.live}      # the production run holds its pages
    e.check_integrity()


def test_ledger_epoch_records_of_the_pages_read():
    e = scenario()
    out = e.start(V, UnpatchedPolicy(), attribution=True)
    led = e.decode_node.ledger
    page1 = led.epochs_of_page(1)
    recs = [led.epoch(int(x)) for x in page1]
    # page 1: A's tenancy, C's, then V's; C wrote all 16 slots, V only slot 0 (its transfer)
    assert [e.registry.rid(r["owner"]) for r in recs] == ["req-A", "req-C", "req-V"]
    assert [(r["lo"], r["hi"]) for r in recs] == [(0, 16), (0, 16), (0, 1)]
    assert recs[0]["free_step"] < recs[1]["alloc_step"] < recs[1]["free_step"] < recs[2]["alloc_step"]
    assert out.owners[0].epochs == 32                          # C's slots came from 32 page tenancies


def test_content_hash_of_the_tenancies_read_equals_the_hash_at_their_free():
    """The ledger's content hash of each page tenancy V read is what that tenancy left when it was freed
    (checked against an engine that hashes every page at free time)."""
    lazy = scenario()
    lazy.start(V, UnpatchedPolicy(), attribution=True)
    eager = small_engine(prefill_pool=640, decode_pool=1024, context=4096, page=16, hash_on_free=True)
    eager.run(A)
    eager.run(C)
    led_l, led_e = lazy.decode_node.ledger, eager.decode_node.ledger
    v_pages = lazy.decode.live[lazy.registry.get("req-V")].pages
    prev = led_l.last_closed[v_pages]
    assert (prev > 0).sum() == 39                 # pages 1..32 last held by C, 33..39 by A, 40..44 never
    assert (led_l.ep["hash"][prev[prev > 0]] != 0).all()
    assert np.array_equal(led_l.ep["hash"][prev[prev > 0]], led_e.ep["hash"][prev[prev > 0]])
