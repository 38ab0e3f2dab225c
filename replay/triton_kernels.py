"""Triton paged decode attention (the CUDA path), split-KV in the flash-decoding style.

Stage 1, grid (batch, q_heads, splits): each program walks its slice of the row's logical tokens in
blocks of BLOCK_N, maps token j to slot indices[indptr[b] + j // P] * P + j % P, applies the owner/epoch
check (mode 1 masks and redirects the read to the zero slot 0, mode 2 only counts) and keeps an online
softmax; it writes an unnormalised partial output with its running max and sum. Stage 2 (torch) merges
the partials. Masked slots are never loaded (masked loads), so NaN in a stale page cannot leak through
0 x NaN. Runs on CPU tensors under TRITON_INTERPRET=1 (the tests do that when no GPU is present).
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from kvir.replay.checks import AttentionOutput, IsolationViolation, OwnerCheck, owned_mask
from kvir.replay.page_table import PageTable

_MODES = {None: 0, "mask": 1, "count": 2, "raise": 2}


@triton.jit
def _paged_decode_stage1(
    q_ptr, k_ptr, v_ptr, indptr_ptr, indices_ptr, seqlen_ptr,
    owner_ptr, page_owner_ptr, page_epoch_ptr, stamp_ptr, pos_ptr,
    out_ptr, m_ptr, l_ptr, bad_ptr,
    sm_scale, page_size, split_len, n_splits, group, head_dim, n_pos_bits,
    stride_qb, stride_qh, stride_ks, stride_kh, stride_vs, stride_vh, stride_pb, stride_ph,
    MODE: tl.constexpr, HAS_POS: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_P: tl.constexpr,
):
    b = tl.program_id(0)
    hq = tl.program_id(1)
    sp = tl.program_id(2)
    hk = hq // group
    L = tl.load(seqlen_ptr + b).to(tl.int64)
    start = sp.to(tl.int64) * split_len
    end = tl.minimum(start + split_len, L)
    row = tl.load(indptr_ptr + b)
    offs_d = tl.arange(0, BLOCK_D)
    d_mask = offs_d < head_dim
    q = tl.load(q_ptr + b * stride_qb + hq * stride_qh + offs_d, mask=d_mask, other=0.0).to(tl.float32)
    if HAS_POS:
        offs_p = tl.arange(0, BLOCK_P)
        p_mask = offs_p < n_pos_bits
        pq = tl.load(pos_ptr + b * stride_pb + hq * stride_ph + offs_p, mask=p_mask, other=0.0).to(tl.float32)
    owner = tl.load(owner_ptr + b)
    # scalars with fixed types (loop-carried values must keep their type)
    m_i = tl.max(tl.full([BLOCK_N], -float("inf"), tl.float32), axis=0)
    l_i = tl.sum(tl.zeros([BLOCK_N], dtype=tl.float32), axis=0)
    n_bad = tl.sum(tl.zeros([BLOCK_N], dtype=tl.int32), axis=0)
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for j0 in range(start, end, BLOCK_N):
        offs_n = j0 + tl.arange(0, BLOCK_N)
        n_mask = offs_n < end
        page = tl.load(indices_ptr + row + offs_n // page_size, mask=n_mask, other=0)
        slot = page * page_size + offs_n % page_size
        valid = n_mask
        if MODE > 0:
            po = tl.load(page_owner_ptr + page, mask=n_mask, other=-3)
            pe = tl.load(page_epoch_ptr + page, mask=n_mask, other=-1)
            st = tl.load(stamp_ptr + slot, mask=n_mask, other=0)
            ok = (po == owner) & (st == pe)
            bad = n_mask & (ok == 0)
            n_bad += tl.sum(bad.to(tl.int32), axis=0)
            if MODE == 1:
                valid = n_mask & ok
                slot = tl.where(ok, slot, 0)
        kv_mask = valid[:, None] & d_mask[None, :]
        k = tl.load(k_ptr + slot[:, None] * stride_ks + hk * stride_kh + offs_d[None, :], mask=kv_mask, other=0.0).to(tl.float32)
        s = tl.sum(q[None, :] * k, axis=1) * sm_scale
        if HAS_POS:
            bits = (((offs_n[:, None] >> offs_p[None, :]) & 1).to(tl.float32) * 2.0 - 1.0)
            bits = tl.where(p_mask[None, :], bits, 0.0)
            s += tl.sum(pq[None, :] * bits, axis=1)
        s = tl.where(valid, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=0))
        base = tl.where(m_new == -float("inf"), 0.0, m_new)
        p = tl.exp(s - base)
        alpha = tl.exp(m_i - base)
        v = tl.load(v_ptr + slot[:, None] * stride_vs + hk * stride_vh + offs_d[None, :], mask=kv_mask, other=0.0).to(tl.float32)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        l_i = l_i * alpha + tl.sum(p, axis=0)
        m_i = m_new
    o = (b * tl.num_programs(1) + hq) * n_splits + sp
    tl.store(out_ptr + o * head_dim + offs_d, acc, mask=d_mask)
    tl.store(m_ptr + o, m_i)
    tl.store(l_ptr + o, l_i)
    if MODE > 0:
        tl.store(bad_ptr + b * tl.num_programs(1) + hq, n_bad)


def _splits(max_len: int, work: int, block_n: int, device: torch.device) -> tuple[int, int]:
    """(split length, number of splits): enough programs to fill the device, at least one block each."""
    if device.type == "cuda":
        target = max(1, 4 * torch.cuda.get_device_properties(device).multi_processor_count // max(1, work))
    else:
        target = 2
    split = max(block_n, -(-max_len // target))
    split = -(-split // block_n) * block_n
    return split, max(1, -(-max_len // split))


def triton_paged_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, table: PageTable,
                        sm_scale: float, *, check: OwnerCheck | None = None,
                        pos_query: torch.Tensor | None = None, block_n: int = 64) -> AttentionOutput:
    B, Hq, D = q.shape
    Hkv = k_cache.shape[1]
    if Hq % Hkv:
        raise ValueError(f"{Hq} query heads over {Hkv} KV heads")
    if k_cache.stride(-1) != 1 or v_cache.stride(-1) != 1 or q.stride(-1) != 1:
        raise ValueError("the last dimension of q, k and v must be contiguous")
    dev = q.device
    seq = table.seq_lens().to(dev)
    max_len = int(seq.max()) if B else 0
    split, n_splits = _splits(max_len, B * Hq, block_n, dev)
    part = torch.zeros(B, Hq, n_splits, D, dtype=torch.float32, device=dev)
    part_m = torch.full((B, Hq, n_splits), -math.inf, dtype=torch.float32, device=dev)
    part_l = torch.zeros(B, Hq, n_splits, dtype=torch.float32, device=dev)
    bad = torch.zeros(B, Hq, dtype=torch.int32, device=dev)
    mode = _MODES[None if check is None else check.mode]
    dummy_i = torch.zeros(1, dtype=torch.int32, device=dev)
    owners = check.owners.to(dev) if check is not None else torch.zeros(B, dtype=torch.int64, device=dev)
    pos = pos_query.float().contiguous() if pos_query is not None else torch.zeros(1, 1, 1, device=dev)
    nb = pos.shape[-1] if pos_query is not None else 1
    _paged_decode_stage1[(B, Hq, n_splits)](
        q, k_cache, v_cache, table.indptr.to(dev), table.indices.to(dev), seq,
        owners, check.page_owner if check is not None else dummy_i, check.page_epoch if check is not None else dummy_i,
        check.slot_stamp if check is not None else dummy_i, pos,
        part, part_m, part_l, bad,
        float(sm_scale), table.page_size, split, n_splits, Hq // Hkv, D, nb,
        q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), v_cache.stride(0), v_cache.stride(1),
        pos.stride(0), pos.stride(1),
        MODE=mode, HAS_POS=pos_query is not None,
        BLOCK_N=block_n, BLOCK_D=triton.next_power_of_2(D), BLOCK_P=triton.next_power_of_2(max(nb, 1)),
    )
    m = part_m.max(-1).values                                     # [B, Hq]
    base = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    w = torch.exp(part_m - base[..., None])                       # 0 for empty splits
    l = (w * part_l).sum(-1)
    out = (w[..., None] * part).sum(-2) / l.clamp_min(1e-30)[..., None]
    out = torch.where(l[..., None] > 0, out, torch.zeros_like(out))
    lse = torch.where(l > 0, base + torch.log(l.clamp_min(1e-30)), torch.full_like(l, -math.inf))
    foreign = bad[:, 0].to(torch.int64)
    if check is not None and check.mode == "raise":
        for b in range(B):
            if int(foreign[b]):
                ok = owned_mask(check, table, b)
                assert ok is not None
                pages = torch.unique(table.slots(b)[~ok] // table.page_size).tolist()
                raise IsolationViolation(b, int(check.owners[b]), int(foreign[b]), pages)
    return AttentionOutput(out.to(q.dtype), lse, foreign)
