"""--scale shrinks the decode attention only (kvir.replay.sample): the sampled page table, worked out by hand,
and on test_attribution's hand-worked scenario the same owners, token ranges, tenancies, response tokens,
causal result and canary count as the whole row gives."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from kvir.replay.attribution import causal_check
from kvir.replay.sample import every_for, head_pages, kept_pages, sampled_table

from .helpers import expected_tokens, small_engine
from .test_attribution import A, C, LEAK, V, owners


def test_every_and_head_pages():
    assert [every_for(f) for f in (1, 0.5, 0.25, 1 / 16, 1 / 64)] == [1, 2, 4, 16, 64]
    with pytest.raises(ValueError):
        every_for(0)
    # the recall model's 11 decode steps read slots 1..11: page 0 of 16; 16 steps of pages of 16: slots 0..16
    assert (head_pages(11, 16), head_pages(16, 16), head_pages(16, 64), head_pages(0, 64)) == (1, 2, 1, 1)


def test_kept_pages_by_hand():
    # V's row after its 11 decode steps: 711 positions = 45 pages of 16; the prompt (700) ends in page 43
    assert kept_pages(45, 700, 16, 1, 4).tolist() == [0, 1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 43, 44]
    assert kept_pages(45, 700, 16, 1, 1).tolist() == list(range(45))
    # a prompt that ends on a page boundary: its last page (43, positions 688..703 of a 704 prompt) is sampled
    # like any other, the decode page 44 is kept
    assert kept_pages(45, 704, 16, 2, 8).tolist() == [0, 1, 2, 10, 18, 26, 34, 42, 44]


def test_sampled_table_maps_its_positions_to_the_rows():
    pages = torch.arange(101, 146)                              # the row's 45 physical pages, in logical order
    table, real = sampled_table(pages, 711, 700, 16, 1, 4)
    assert table.pages(0).tolist() == [101, 102, 106, 110, 114, 118, 122, 126, 130, 134, 138, 142, 144, 145]
    assert table.seq_len(0) == 13 * 16 + 7 == real.size          # the last page holds 711 - 44 * 16 = 7
    assert (real[:16].tolist(), real[16], real[32], real[-1]) == (list(range(16)), 16, 80, 710)
    assert np.array_equal(table.slots(0).numpy() // 16, np.repeat(table.pages(0).numpy(), 16)[: real.size])


def _run(every: int, canary: str = "off"):
    e = small_engine(prefill_pool=640, decode_pool=1024, context=4096, page=16, attention_every=every, canary=canary)
    assert e.run(A).http_status == 200 and e.run(C).http_status == 200
    with e.counterfactual():
        out = e.start(V, LEAK, attribution=True)
    causal = causal_check(e, V, e.registry.get("req-A"), out.tokens, LEAK)
    return e, out, causal


def test_sampled_attention_keeps_whose_data_and_what_was_recalled():
    full_e, full, full_c = _run(1)
    e, out, c = _run(4)
    assert owners(e, out) == owners(full_e, full) == [("req-A", "acct-A", 125, 509, 618),
                                                      ("req-C", "acct-C", 493, 16, 508)]
    assert [(o.epochs, o.carried) for o in out.owners] == [(7, 18), (31, 0)]
    assert (out.uninitialised_tokens, out.carried_foreign) == (81, 15)
    assert out.tokens == full.tokens == [0] + expected_tokens("req-A", 513, 11)
    assert [r.top_index for r in out.steps] == list(range(1, 12))          # real positions, not the sample's
    assert out.owners[0].attention_mass == pytest.approx(1.0, abs=1e-6)
    assert (c.slots, c.changed_tokens, c.first_changed) == (full_c.slots, full_c.changed_tokens,
                                                            full_c.first_changed) == (125, 11, 1)


def test_the_canary_counts_the_whole_row_when_the_attention_is_sampled():
    _, full, _ = _run(1, canary="log")
    _, out, _ = _run(4, canary="log")
    # every slot of V's prompt range but its own stub slot fails the owner/epoch check (it wrote none of them)
    assert out.canary_slots == full.canary_slots == 699      # the sample alone holds 203 of them
    assert out.canary.startswith("violation: read 699 slot(s)")
