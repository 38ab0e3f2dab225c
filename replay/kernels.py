"""Paged decode attention: one new query per request over its paged KV, unpatched or patched.

    out[b, h] = softmax_j( sm_scale * q[b, h] . K[slot_b(j)] + pos_query[b, h] . posenc(j) ) @ V[slot_b(j)]

over the row's logical tokens j < seq_len[b] (page_table.py). GQA: query head h reads KV head
h // (Hq / Hkv). `pos_query` is an optional read-time positional term over the *logical* index j (the way
FlashInfer's fused RoPE/ALiBi modes apply positions inside the kernel from the page table's order);
posenc(j) is the ±1 bit pattern of j. Only the hand-built recall model uses it.

The unpatched kernel trusts the page table. The patched kernel also checks each slot's stamp (pool.py):
the slot is the reader's only if its page is owned by the reader now and the slot was written during
that tenancy. Check modes:

    mask    a failing slot is excluded: its score is -inf and its read is redirected to the zero page 0,
            so stale bytes (even NaN) are never loaded (no 0 x NaN, unlike FA3's tile loads)
    count   nothing is excluded (unpatched math); failing slots are only counted (canary verification)
    raise   IsolationViolation on the first row with a failing slot (fail-loud)

The pure-torch implementation below is the CPU default: it walks the row in chunks with an online
softmax, so the gathered K/V of a chunk stays in cache instead of materialising the whole context.
The Triton implementation (triton_kernels.py) serves CUDA. reference.py is the float64 oracle.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .page_table import PageTable

POS_BITS = 24          # posenc covers logical positions < 2**24 (16.7 M tokens)
DUMMY_SLOT = 0         # first slot of the reserved page 0: zero, never written


class IsolationViolation(RuntimeError):
    """The patched kernel in fail-loud mode found a slot the reading request does not own."""

    def __init__(self, row: int, owner: int, slots: int, pages: list[int]):
        self.row, self.owner, self.slots, self.pages = row, owner, slots, pages
        super().__init__(f"row {row} (owner {owner}) would read {slots} slot(s) it did not write in this "
                         f"tenancy, on pages {pages[:8]}{'...' if len(pages) > 8 else ''}")


@dataclass(frozen=True)
class OwnerCheck:
    """The stamps the patched kernel checks, and the reading owner of each row."""

    page_owner: torch.Tensor      # int32 [pages + 1]
    page_epoch: torch.Tensor      # int32 [pages + 1]
    slot_stamp: torch.Tensor      # int32 [slots]
    owners: torch.Tensor          # int64 [B]
    mode: str = "mask"            # mask | count | raise

    def __post_init__(self) -> None:
        if self.mode not in ("mask", "count", "raise"):
            raise ValueError(f"unknown check mode {self.mode!r}")


@dataclass
class AttentionOutput:
    out: torch.Tensor             # [B, Hq, D], the query's dtype
    lse: torch.Tensor             # [B, Hq] float32 log-sum-exp of the scores (-inf for an empty row)
    foreign: torch.Tensor         # int64 [B] slots that failed the check (0 without a check)


def posenc(j: torch.Tensor, bits: int = POS_BITS) -> torch.Tensor:
    """±1 bit pattern of logical positions j: float32 [len(j), bits]."""
    shifts = torch.arange(bits, device=j.device, dtype=torch.int64)
    return (((j[:, None] >> shifts) & 1).to(torch.float32) * 2.0) - 1.0


def owned_mask(check: OwnerCheck, table: PageTable, b: int) -> torch.Tensor:
    """bool [seq_len]: slot j of row b passes the owner/epoch check."""
    pages = table.pages(b)
    L, P = table.seq_len(b), table.page_size
    slots = table.slots(b)
    own = (check.page_owner[pages] == check.owners[b].to(check.page_owner.dtype))
    epoch = check.page_epoch[pages]
    own_s = own[:, None].expand(-1, P).reshape(-1)[:L]
    epoch_s = epoch[:, None].expand(-1, P).reshape(-1)[:L]
    return own_s & (check.slot_stamp[slots] == epoch_s)


def default_chunk(k_cache: torch.Tensor) -> int:
    """Tokens per chunk: ~1 MiB of K per chunk (stays in cache alongside V)."""
    per_token = k_cache.shape[1] * k_cache.shape[2] * k_cache.element_size()
    return max(256, (1 << 20) // per_token)


def paged_decode_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, table: PageTable,
                           sm_scale: float, *, check: OwnerCheck | None = None,
                           pos_query: torch.Tensor | None = None, impl: str = "auto",
                           chunk_tokens: int | None = None) -> AttentionOutput:
    """Decode attention of q [B, Hq, D] over caches [slots, Hkv, D] through `table` (see module doc)."""
    if impl == "auto":
        impl = "triton" if q.is_cuda else "torch"
    if impl == "triton":
        from .triton_kernels import triton_paged_decode

        return triton_paged_decode(q, k_cache, v_cache, table, sm_scale, check=check, pos_query=pos_query)
    if impl != "torch":
        raise ValueError(f"unknown kernel implementation {impl!r}")
    return _torch_paged_decode(q, k_cache, v_cache, table, sm_scale, check, pos_query, chunk_tokens)


def _torch_paged_decode(q, k_cache, v_cache, table, sm_scale, check, pos_query, chunk_tokens) -> AttentionOutput:
    B, Hq, D = q.shape
    Hkv = k_cache.shape[1]
    if Hq % Hkv:
        raise ValueError(f"{Hq} query heads over {Hkv} KV heads")
    if table.batch_size != B:
        raise ValueError(f"table has {table.batch_size} rows, q has {B}")
    G = Hq // Hkv
    C = chunk_tokens or default_chunk(k_cache)
    acc_dtype = torch.float64 if q.dtype == torch.float64 else torch.float32   # bf16/fp32 accumulate in fp32
    out = torch.zeros(B, Hq, D, dtype=acc_dtype, device=q.device)
    lse = torch.full((B, Hq), -math.inf, dtype=torch.float32, device=q.device)
    foreign = torch.zeros(B, dtype=torch.int64, device=q.device)
    for b in range(B):
        slots = table.slots(b)
        keep = None
        if check is not None:
            ok = owned_mask(check, table, b)
            n_bad = int((~ok).sum())
            foreign[b] = n_bad
            if n_bad and check.mode == "raise":
                bad_pages = torch.unique(slots[~ok] // table.page_size).tolist()
                raise IsolationViolation(b, int(check.owners[b]), n_bad, bad_pages)
            if n_bad and check.mode == "mask":
                keep = ok
                slots = torch.where(ok, slots, torch.full_like(slots, DUMMY_SLOT))
        qg = q[b].to(acc_dtype).view(Hkv, G, D)
        pq = pos_query[b].to(acc_dtype).view(Hkv, G, -1) if pos_query is not None else None
        o, m, l = _attend(qg, k_cache, v_cache, slots, sm_scale, keep, pq, C)
        out[b] = o.view(Hq, D)
        lse[b] = torch.where(l > 0, m + torch.log(l), torch.full_like(m, -math.inf)).view(Hq).float()
    return AttentionOutput(out.to(q.dtype), lse, foreign)


def _scores(qg, K, sm_scale, pq, j0, keep_c):
    s = torch.einsum("hgd,nhd->hgn", qg, K.to(qg.dtype)) * sm_scale
    if pq is not None:
        j = torch.arange(j0, j0 + K.shape[0], device=K.device, dtype=torch.int64)
        s = s + torch.einsum("hgb,nb->hgn", pq, posenc(j, pq.shape[-1]).to(qg.dtype))
    if keep_c is not None:
        s = s.masked_fill(~keep_c, -math.inf)
    return s


def _attend(qg, k_cache, v_cache, slots, sm_scale, keep, pq, C):
    """Online softmax over chunks of `slots`: returns (unnormalised-then-normalised out, max, sum)."""
    Hkv, G, D = qg.shape
    dt = qg.dtype
    m = torch.full((Hkv, G), -math.inf, device=qg.device, dtype=dt)
    l = torch.zeros((Hkv, G), device=qg.device, dtype=dt)
    acc = torch.zeros((Hkv, G, D), device=qg.device, dtype=dt)
    L = slots.numel()
    for j0 in range(0, L, C):
        sl = slots[j0: j0 + C]
        s = _scores(qg, k_cache.index_select(0, sl), sm_scale, pq, j0, None if keep is None else keep[j0: j0 + C])
        m_new = torch.maximum(m, s.amax(-1))
        base = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        p = torch.exp(s - base[..., None])
        alpha = torch.exp(m - base)
        V = v_cache.index_select(0, sl).to(dt)
        acc = acc * alpha[..., None] + torch.einsum("hgn,nhd->hgd", p, V)
        l = l * alpha + p.sum(-1)
        m = m_new
    o = torch.where(l[..., None] > 0, acc / l.clamp_min(1e-30)[..., None], torch.zeros_like(acc))
    return o, m, l


def attention_probs(q: torch.Tensor, k_cache: torch.Tensor, table: PageTable, b: int, sm_scale: float, *,
                    keep: torch.Tensor | None = None, pos_query: torch.Tensor | None = None,
                    chunk_tokens: int | None = None) -> torch.Tensor:
    """Softmax weights of row b over its logical tokens: float64 [Hq, seq_len] (for attribution).
    With `keep`, failing slots get weight 0 (the patched kernel's view); without, the unpatched view."""
    Hq, D = q.shape[1], q.shape[2]
    Hkv = k_cache.shape[1]
    qg = q[b].float().view(Hkv, Hq // Hkv, D)
    pq = pos_query[b].float().view(Hkv, Hq // Hkv, -1) if pos_query is not None else None
    slots = table.slots(b)
    if keep is not None:
        slots = torch.where(keep, slots, torch.full_like(slots, DUMMY_SLOT))
    C = chunk_tokens or default_chunk(k_cache)
    parts = [_scores(qg, k_cache.index_select(0, slots[j0: j0 + C]), sm_scale, pq, j0,
                     None if keep is None else keep[j0: j0 + C]) for j0 in range(0, slots.numel(), C)]
    s = torch.cat(parts, -1).double().reshape(Hq, -1)
    return torch.softmax(s, -1)
