"""Paged decode attention: one new query per request over its paged KV, unpatched or patched.

    out[b, h] = softmax_j( sm_scale * q[b, h] . K[slot_b(j)] + pos_query[b, h] . posenc(j) ) @ V[slot_b(j)]

over the row's logical tokens j < seq_len[b] (page_table.py). GQA: query head h reads KV head
h // (Hq / Hkv). `pos_query` is an optional read-time positional term over the *logical* index j (the way
FlashInfer's fused RoPE/ALiBi modes apply positions inside the kernel from the page table's order);
posenc(j) is the ±1 bit pattern of j. Only the hand-built recall model uses it.

The unpatched kernel trusts the page table. The patched kernel also checks each slot's stamp (pool.py):
the slot is the reader's only if its page is owned by the reader now and the slot was written during
that tenancy. Check modes:

    mask    a failing slot is excluded: its score is set to -inf and its V row to zero before either
            enters any arithmetic, so stale bytes (even NaN) cannot reach the output (no 0 x NaN, the
            FA3 tile-load false positive); the Triton kernel does not even load them
    count   nothing is excluded (unpatched math); failing slots are only counted (canary verification)
    raise   IsolationViolation on the first row with a failing slot (fail-loud)

The pure-torch implementation below is the CPU default: it walks the row in chunks of whole pages with
an online softmax, so the gathered K/V of a chunk stays in cache instead of materialising the whole
context, and each gathered row is a whole page (page_size x Hkv x D elements), not a single token.
The Triton implementation (triton_kernels.py) serves CUDA. reference.py is the float64 oracle.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .page_table import PageTable

POS_BITS = 24          # posenc covers logical positions < 2**24 (16.7 M tokens)


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
    """bool [seq_len]: slot j of row b passes the owner/epoch check (computed page by page)."""
    pages = table.pages(b)
    P, L = table.page_size, table.seq_len(b)
    own = check.page_owner[pages] == check.owners[b].to(check.page_owner.dtype)
    stamps = check.slot_stamp.view(-1, P).index_select(0, pages)            # [n, P]
    ok = (stamps == check.page_epoch[pages][:, None]) & own[:, None]
    return ok.reshape(-1)[:L]


def pos_tables(pq: torch.Tensor) -> list[torch.Tensor]:
    """Per-byte lookup tables of pq [..., bits]: table k [..., 256] = sum over the bits b of byte k of
    pq_b * bit_b(x), for x = 0..255."""
    x = torch.arange(256, device=pq.device)
    out = []
    for k in range(0, pq.shape[-1], 8):
        w = pq[..., k: k + 8]
        bits = ((x[:, None] >> torch.arange(w.shape[-1], device=pq.device)) & 1).to(pq.dtype)   # [256, <=8]
        out.append(w @ bits.T)
    return out


def pos_scores(pq: torch.Tensor, j0: int, n: int, tables: list[torch.Tensor] | None = None) -> torch.Tensor:
    """pq . posenc(j) for j in [j0, j0 + n): [..., n], from per-byte lookup tables (no [n, bits] matrix).

    pq . posenc(j) = 2 * sum_b pq_b * bit_b(j) - sum_b pq_b, and the bit sum splits over the bytes of j:
    the low byte cycles inside each block of 256 positions, the higher bytes are constant over it."""
    tables = tables if tables is not None else pos_tables(pq)
    b0, b1 = j0 >> 8, (j0 + n - 1) >> 8
    blocks = torch.arange(b0, b1 + 1, device=pq.device)
    high = torch.zeros(pq.shape[:-1] + (blocks.numel(),), dtype=pq.dtype, device=pq.device)
    for i, t in enumerate(tables[1:], 1):
        high = high + t[..., (blocks >> (8 * (i - 1))) & 255]
    full = 2 * (tables[0][..., None, :] + high[..., :, None]) - pq.sum(-1)[..., None, None]
    off = j0 & 255
    return full.reshape(pq.shape[:-1] + (-1,))[..., off: off + n]


def default_chunk(k_cache: torch.Tensor) -> int:
    """Tokens per chunk: ~1 MiB of K per chunk (it stays in cache alongside V)."""
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
    P = table.page_size
    if Hq % Hkv:
        raise ValueError(f"{Hq} query heads over {Hkv} KV heads")
    if table.batch_size != B:
        raise ValueError(f"table has {table.batch_size} rows, q has {B}")
    G = Hq // Hkv
    kp, vp = _paged_view(k_cache, P), _paged_view(v_cache, P)
    cp = max(1, (chunk_tokens or default_chunk(k_cache)) // P)
    acc_dtype = torch.float64 if q.dtype == torch.float64 else torch.float32   # bf16/fp32 accumulate in fp32
    out = torch.zeros(B, Hq, D, dtype=acc_dtype, device=q.device)
    lse = torch.full((B, Hq), -math.inf, dtype=torch.float32, device=q.device)
    foreign = torch.zeros(B, dtype=torch.int64, device=q.device)
    for b in range(B):
        keep = None
        if check is not None:
            ok = owned_mask(check, table, b)
            n_bad = int(ok.numel() - int(ok.sum()))
            foreign[b] = n_bad
            if n_bad and check.mode == "raise":
                bad_pages = torch.unique(table.slots(b)[~ok] // P).tolist()
                raise IsolationViolation(b, int(check.owners[b]), n_bad, bad_pages)
            if n_bad and check.mode == "mask":
                keep = ok
        qg = q[b].to(acc_dtype).view(Hkv, G, D)
        pq = pos_query[b].to(acc_dtype).view(Hkv, G, -1) if pos_query is not None else None
        o, m, l = _attend(qg, kp, vp, table.pages(b), table.seq_len(b), sm_scale, keep, pq, cp)
        out[b] = o.view(Hq, D)
        lse[b] = torch.where(l > 0, m + torch.log(l), torch.full_like(m, -math.inf)).view(Hq).float()
    return AttentionOutput(out.to(q.dtype), lse, foreign)


def _paged_view(cache: torch.Tensor, P: int) -> torch.Tensor:
    """[slots, Hkv, D] -> [pages, P, Hkv, D] without a copy (a pool is whole pages)."""
    if cache.shape[0] % P or not cache.is_contiguous():
        raise ValueError("the KV cache must be contiguous and hold whole pages")
    return cache.view(-1, P, cache.shape[1], cache.shape[2])


def _chunks(pages: torch.Tensor, L: int, P: int, cp: int):
    """(first logical token, token count, page ids) of each chunk of a row."""
    for c0 in range(0, pages.numel(), cp):
        j0 = c0 * P
        yield j0, min(L - j0, cp * P), pages[c0: c0 + cp]


def _scores(qg, kp, pg, n, sm_scale, pos, j0, keep_c):
    """Scores [Hkv, G, n] of one chunk: whole pages are gathered (rows of P * Hkv * D elements)."""
    Hkv, G, D = qg.shape
    K = kp.index_select(0, pg).view(-1, Hkv, D)[:n]
    # bmm over KV heads with strided operands maps onto BLAS directly; matmul(q, K.permute(1, 2, 0)) is
    # ~250x slower on CPU for a single-row query (measured: 8.8 ms vs 0.034 ms for 16 K tokens)
    s = torch.bmm(K.transpose(0, 1).to(qg.dtype), qg.transpose(1, 2)).transpose(1, 2)
    if sm_scale != 1.0:
        s = s * sm_scale
    if pos is not None:
        s = s + pos[..., j0: j0 + n]
    if keep_c is not None:
        s = s.masked_fill(~keep_c, -math.inf)          # also replaces NaN scores of stale slots
    return s


def _exp(x: torch.Tensor) -> torch.Tensor:
    """exp(x) with weights below e^-60 (fp32; e^-700 in fp64) set to 0 instead of computed.

    Sharp attention (the recall model's scores differ by multiples of 24) otherwise produces subnormal
    weights, and x86 arithmetic on subnormals is ~100x slower (measured: a 16 K-token chunk went from
    0.03 ms to 6 ms). A dropped weight is below 9e-27 of the largest, far under fp32 resolution."""
    cut = -700.0 if x.dtype == torch.float64 else -60.0
    return torch.where(x >= cut, torch.exp(x.clamp_min(cut)), 0.0)


def _attend(qg, kp, vp, pages, L, sm_scale, keep, pq, cp):
    """Online softmax over chunks of whole pages; returns (out, max, sum) per (kv head, group)."""
    Hkv, G, D = qg.shape
    dt = qg.dtype
    P = kp.shape[1]
    m = torch.full((Hkv, G), -math.inf, device=qg.device, dtype=dt)
    l = torch.zeros((Hkv, G), device=qg.device, dtype=dt)
    acc = torch.zeros((Hkv, G, D), device=qg.device, dtype=dt)
    pos = pos_scores(pq, 0, L) if pq is not None else None       # one pass for the whole row
    for j0, n, pg in _chunks(pages, L, P, cp):
        kc = None if keep is None else keep[j0: j0 + n]
        s = _scores(qg, kp, pg, n, sm_scale, pos, j0, kc)
        m_new = torch.maximum(m, s.amax(-1))
        base = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        p = _exp(s - base[..., None])
        alpha = _exp(m - base)
        V = vp.index_select(0, pg).view(-1, Hkv, D)[:n]
        if kc is not None:
            V = V.masked_fill(~kc[:, None, None], 0)   # 0 weight x NaN would still be NaN: zero the rows
        acc = acc * alpha[..., None] + torch.bmm(p, V.transpose(0, 1).to(dt))
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
    P = table.page_size
    qg = q[b].float().view(Hkv, Hq // Hkv, D)
    pq = pos_query[b].float().view(Hkv, Hq // Hkv, -1) if pos_query is not None else None
    kp = _paged_view(k_cache, P)
    cp = max(1, (chunk_tokens or default_chunk(k_cache)) // P)
    pos = pos_scores(pq, 0, table.seq_len(b)) if pq is not None else None
    parts = [_scores(qg, kp, pg, n, sm_scale, pos, j0, None if keep is None else keep[j0: j0 + n])
             for j0, n, pg in _chunks(table.pages(b), table.seq_len(b), P, cp)]
    s = torch.cat(parts, -1).double().reshape(Hq, -1)
    return torch.softmax(s, -1)
