"""Paged decode attention against the float64 dense reference, and the patched kernel's isolation."""
from __future__ import annotations

import math

import pytest
import torch

from kvir.replay.kernels import IsolationViolation, OwnerCheck, paged_decode_attention
from kvir.replay.page_table import PageTable

from .helpers import random_table
from .reference import dense_reference, dense_same_dtype, error_ratio_ok

D = 32


def _lens(p: int) -> list[int]:
    # 1, p-1, p, p+1 and a multi-page length: last_page_len covers 1 and p
    return sorted({L for L in (1, p - 1, p, p + 1, 3 * p + 5) if L >= 1})


def _setup(page: int, hkv: int, group: int, dtype: torch.dtype, seed: int, share: bool = True):
    g = torch.Generator().manual_seed(seed)
    lens = _lens(page)
    need = sum(-(-L // page) for L in lens)
    pool_pages = need + 7                                       # spare pages: the table is not contiguous
    table = random_table(lens, page, pool_pages, g, share=(len(lens) - 1, len(lens) - 2) if share else None)
    slots = (pool_pages + 1) * page
    k = torch.randn(slots, hkv, D, generator=g).to(dtype)
    v = torch.randn(slots, hkv, D, generator=g).to(dtype)
    q = torch.randn(len(lens), hkv * group, D, generator=g).to(dtype)
    return q, k, v, table


@pytest.mark.parametrize("dtype, fudge", [(torch.float32, 10.0), (torch.bfloat16, 1.1)])
@pytest.mark.parametrize("group", [1, 4, 8])
@pytest.mark.parametrize("page", [1, 16, 64, 256])
def test_paged_equals_dense(page, group, dtype, fudge):
    q, k, v, table = _setup(page, 2, group, dtype, seed=page * 100 + group)
    table.validate(num_pages=k.shape[0] // page - 1)
    scale = 1 / math.sqrt(D)
    golden = dense_reference(q, k, v, table, scale)
    baseline = dense_same_dtype(q, k, v, table, scale)
    for chunk in (None, 7):                                      # one chunk and many (online softmax)
        out = paged_decode_attention(q, k, v, table, scale, impl="torch", chunk_tokens=chunk).out
        ok, e_test, e_base = error_ratio_ok(out, baseline, golden, fudge)
        assert ok, f"paged error {e_test:.3g} > {fudge} x dense {dtype} error {e_base:.3g}"


def test_float64_paged_matches_golden_tightly():
    q, k, v, table = _setup(16, 2, 4, torch.float64, seed=3)
    out = paged_decode_attention(q, k, v, table, 0.2, impl="torch", chunk_tokens=5).out
    torch.testing.assert_close(out, dense_reference(q, k, v, table, 0.2), rtol=1e-12, atol=1e-12)


def test_positional_term_matches_reference():
    q, k, v, table = _setup(16, 1, 1, torch.float32, seed=4, share=False)
    pq = torch.randn(q.shape[0], q.shape[1], 24)
    out = paged_decode_attention(q, k, v, table, 0.2, impl="torch", pos_query=pq, chunk_tokens=9).out
    torch.testing.assert_close(out.double(), dense_reference(q, k, v, table, 0.2, pos_query=pq), rtol=1e-5, atol=1e-5)


def test_padding_rows_do_not_change_real_rows():
    """Extra batch rows (B + 3, on the reserved zero page or on other pages) leave the real rows bitwise equal."""
    q, k, v, table = _setup(16, 2, 4, torch.float32, seed=5, share=False)
    real = paged_decode_attention(q, k, v, table, 0.2, impl="torch").out
    rows = [table.pages(b) for b in range(table.batch_size)] + [torch.tensor([0]), torch.tensor([0]), table.pages(0)]
    lens = table.seq_lens().tolist() + [1, 16, 3]
    padded = PageTable.from_rows(rows, lens, 16)
    qp = torch.cat([q, torch.randn(3, q.shape[1], D)])
    out = paged_decode_attention(qp, k, v, padded, 0.2, impl="torch").out
    assert torch.equal(out[: q.shape[0]], real)


# ------------------------------------------------------------------------------------------ isolation

def _owned_scenario(seed: int = 11):
    """Two rows over a 24-page pool (page 16). Row 0 (owner 7) owns pages [3, 9, 4] (40 tokens) but wrote
    only its first 25 slots in this tenancy (the rest are a previous tenant's); row 1 (owner 8) wrote all of
    pages [12, 5] (20 tokens). Every other page belongs to someone else."""
    g = torch.Generator().manual_seed(seed)
    P, pages = 16, 24
    slots = (pages + 1) * P
    k, v = torch.randn(slots, 2, D, generator=g), torch.randn(slots, 2, D, generator=g)
    k[:P] = 0
    v[:P] = 0                                                    # the reserved page 0 is zero
    owner = torch.full((pages + 1,), 3, dtype=torch.int32)
    owner[0] = -2
    epoch = torch.arange(pages + 1, dtype=torch.int32) + 100
    stamp = (torch.arange(slots) // P).to(torch.int32) + 100     # every slot written in its page's tenancy
    owner[[3, 9, 4]] = 7
    owner[[12, 5]] = 8
    row0 = torch.tensor([3, 9, 4])
    s0 = (row0[:, None] * P + torch.arange(P)).reshape(-1)
    stamp[s0[25:]] = 42                                          # stale: written in an older tenancy
    table = PageTable.from_rows([row0, torch.tensor([12, 5])], [40, 20], P)
    check = OwnerCheck(owner, epoch, stamp, torch.tensor([7, 8]), "mask")
    q = torch.randn(2, 8, D, generator=g)
    return q, k, v, table, check


def _foreign_slots(check: OwnerCheck, table: PageTable, b: int, n_slots: int) -> torch.Tensor:
    """Every slot of the pool except the ones row b legitimately owns (and the zero page)."""
    own = set(table.slots(b)[: 25 if b == 0 else None].tolist())
    return torch.tensor([s for s in range(16, n_slots) if s not in own])


@pytest.mark.parametrize("impl", ["torch", "triton"])
def test_isolation_patched_bitwise_unchanged_unpatched_changes(impl):
    if impl == "triton":
        pytest.importorskip("triton", reason="triton is not installed (pip install 'kvir[triton]')")
    q, k, v, table, check = _owned_scenario()
    patched0 = paged_decode_attention(q, k, v, table, 0.2, check=check, impl=impl).out
    unpatched0 = paged_decode_attention(q, k, v, table, 0.2, impl=impl).out
    g = torch.Generator().manual_seed(99)
    for b in (0, 1):
        foreign = _foreign_slots(check, table, b, k.shape[0])
        for fill in ("random", "nan"):
            k2, v2 = k.clone(), v.clone()
            if fill == "random":
                k2[foreign] = torch.randn(foreign.numel(), 2, D, generator=g) * 5
                v2[foreign] = torch.randn(foreign.numel(), 2, D, generator=g) * 5
            else:
                k2[foreign] = float("nan")
                v2[foreign] = float("nan")
            patched = paged_decode_attention(q, k2, v2, table, 0.2, check=check, impl=impl).out
            assert torch.equal(patched[b], patched0[b]), f"row {b}, {fill}: patched output changed"
            unpatched = paged_decode_attention(q, k2, v2, table, 0.2, impl=impl).out
            if b == 0:       # row 0 reads 15 stale slots unpatched
                assert not torch.equal(unpatched[0], unpatched0[0]), f"{fill}: unpatched row 0 did not change"
            else:            # row 1 owns everything it reads: unchanged either way
                assert torch.equal(unpatched[1], unpatched0[1])
    # the patched output is the dense attention over the owned slots only
    keep = [torch.arange(40) < 25, None]
    torch.testing.assert_close(patched0.double(), dense_reference(q, k, v, table, 0.2, keep=keep), rtol=1e-5, atol=1e-5)


def test_page_level_fresh_counts_give_the_same_mask():
    """page_fresh (whole pages pass or fail without reading slot stamps) must mask exactly what the
    slot-level check masks, including a partly written page in the middle of a row."""
    from kvir.replay.kernels import owned_mask

    q, k, v, table, check = _owned_scenario()
    fresh = (check.slot_stamp.view(-1, 16) == check.page_epoch[:, None]).sum(1).to(torch.int32)
    fast = OwnerCheck(check.page_owner, check.page_epoch, check.slot_stamp, check.owners, "mask", fresh)
    for b in (0, 1):
        slow_ok, fast_ok = owned_mask(check, table, b), owned_mask(fast, table, b)
        assert torch.equal(slow_ok, fast_ok) if fast_ok is not None else bool(slow_ok.all())
    assert owned_mask(fast, table, 1) is None                   # row 1 owns everything: no slot-level work
    stamp = check.slot_stamp.clone()
    stamp[9 * 16 + 3] = 0                                       # a hole in a middle page of row 0
    fresh2 = (stamp.view(-1, 16) == check.page_epoch[:, None]).sum(1).to(torch.int32)
    slow2 = OwnerCheck(check.page_owner, check.page_epoch, stamp, check.owners, "mask")
    fast2 = OwnerCheck(check.page_owner, check.page_epoch, stamp, check.owners, "mask", fresh2)
    assert torch.equal(owned_mask(slow2, table, 0), owned_mask(fast2, table, 0))
    assert torch.equal(paged_decode_attention(q, k, v, table, 0.2, check=fast2).out,
                       paged_decode_attention(q, k, v, table, 0.2, check=slow2).out)


def test_check_modes_count_and_raise():
    q, k, v, table, check = _owned_scenario()
    masked = paged_decode_attention(q, k, v, table, 0.2, check=check)
    assert masked.foreign.tolist() == [15, 0]
    count = OwnerCheck(check.page_owner, check.page_epoch, check.slot_stamp, check.owners, "count")
    counted = paged_decode_attention(q, k, v, table, 0.2, check=count)
    assert counted.foreign.tolist() == [15, 0]
    assert torch.equal(counted.out, paged_decode_attention(q, k, v, table, 0.2).out)     # count mode = unpatched math
    loud = OwnerCheck(check.page_owner, check.page_epoch, check.slot_stamp, check.owners, "raise")
    with pytest.raises(IsolationViolation) as e:
        paged_decode_attention(q, k, v, table, 0.2, check=loud)
    assert e.value.row == 0 and e.value.slots == 15 and e.value.pages == [4, 9]


def test_nan_on_masked_positions_is_not_loaded():
    """Canary semantics (FA3/FA4 false positive): NaN beyond the sequence or in masked slots must not
    reach the output; the masked read goes to the zero page."""
    q, k, v, table, check = _owned_scenario()
    base = paged_decode_attention(q, k, v, table, 0.2, check=check).out
    k2, v2 = k.clone(), v.clone()
    last = table.pages(1)[-1]
    k2[last * 16 + 4: last * 16 + 16] = float("nan")             # beyond row 1's last_page_len (4)
    v2[last * 16 + 4: last * 16 + 16] = float("nan")
    assert torch.equal(paged_decode_attention(q, k2, v2, table, 0.2, check=check).out, base)
    assert torch.isfinite(paged_decode_attention(q, k2, v2, table, 0.2).out[1]).all()


@pytest.mark.parametrize("group", [1, 4])
def test_pool_scoring_path_matches_reference_and_isolates(group, monkeypatch):
    """A row covering most of the pool takes the whole-pool scoring path; the chunked path must agree, and
    NaN in the slots the row does not own must not change the patched output."""
    import kvir.replay.kernels as K

    g = torch.Generator().manual_seed(21 + group)
    P, pages = 16, 12
    k = torch.randn((pages + 1) * P, 2, D, generator=g)
    v = torch.randn((pages + 1) * P, 2, D, generator=g)
    k[:P] = 0
    v[:P] = 0
    row = torch.randperm(pages, generator=g)[:10] + 1
    table = PageTable.from_rows([row], [150], P)                 # 150 of 192 slots: the pool path
    q = torch.randn(1, 2 * group, D, generator=g)
    golden = dense_reference(q, k, v, table, 0.2)
    pooled = paged_decode_attention(q, k, v, table, 0.2).out
    monkeypatch.setattr(K, "POOL_SCORING", 0.0)
    chunked = paged_decode_attention(q, k, v, table, 0.2, chunk_tokens=32).out
    monkeypatch.undo()
    for out in (pooled, chunked):
        torch.testing.assert_close(out.double(), golden, rtol=1e-5, atol=1e-5)
    owner = torch.full((pages + 1,), 5, dtype=torch.int32)
    owner[0] = -2
    epoch = torch.arange(pages + 1, dtype=torch.int32) + 1
    stamp = (torch.arange((pages + 1) * P) // P).to(torch.int32) + 1
    stamp[table.slots(0)[100:]] = 0                               # the row wrote only its first 100 tokens
    check = OwnerCheck(owner, epoch, stamp, torch.tensor([5]), "mask")
    base = paged_decode_attention(q, k, v, table, 0.2, check=check).out
    mine = set(table.slots(0)[:100].tolist())
    other = torch.tensor([s for s in range(P, k.shape[0]) if s not in mine])
    k2, v2 = k.clone(), v.clone()
    k2[other], v2[other] = float("nan"), float("nan")
    assert torch.equal(paged_decode_attention(q, k2, v2, table, 0.2, check=check).out, base)
    torch.testing.assert_close(base.double(), dense_reference(q, k, v, table, 0.2, keep=[torch.arange(150) < 100]),
                               rtol=1e-5, atol=1e-5)
