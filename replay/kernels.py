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

The pure-torch implementation below is the CPU default. Per row it computes all scores (one BLAS pass
over the pool's K when the row covers much of the pool, else page-granular gathers in chunks), the
softmax, then the weighted V sum in one pass over the row's V rows (embedding_bag with per-token weights
for one query head per KV head; page-granular chunked gathers for GQA groups and bf16).
The Triton implementation (triton_kernels.py) serves CUDA. The float64 oracle is the tests' (tests/replay/reference.py).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from kvir.replay.checks import AttentionOutput, IsolationViolation, OwnerCheck, owned_mask
from kvir.replay.page_table import PageTable

POS_BITS = 24          # posenc covers logical positions < 2**24 (16.7 M tokens)


def posenc(j: torch.Tensor, bits: int = POS_BITS) -> torch.Tensor:
    """±1 bit pattern of logical positions j: float32 [len(j), bits]."""
    shifts = torch.arange(bits, device=j.device, dtype=torch.int64)
    return (((j[:, None] >> shifts) & 1).to(torch.float32) * 2.0) - 1.0


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
        from kvir.replay.triton_kernels import triton_paged_decode

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
    cp = max(1, (chunk_tokens or default_chunk(k_cache)) // P)
    acc_dtype = torch.float64 if q.dtype == torch.float64 else torch.float32   # bf16/fp32 accumulate in fp32
    out = torch.zeros(B, Hq, D, dtype=acc_dtype, device=q.device)
    lse = torch.full((B, Hq), -math.inf, dtype=torch.float32, device=q.device)
    foreign = torch.zeros(B, dtype=torch.int64, device=q.device)
    for b in range(B):
        keep = None
        if check is not None:
            ok = owned_mask(check, table, b)
            n_bad = 0 if ok is None else int(ok.numel() - int(ok.sum()))
            foreign[b] = n_bad
            if n_bad and check.mode == "raise":
                bad_pages = torch.unique(table.slots(b)[~ok] // P).tolist()
                raise IsolationViolation(b, int(check.owners[b]), n_bad, bad_pages)
            if n_bad and check.mode == "mask":
                keep = ok
        qg = q[b].to(acc_dtype).view(Hkv, G, D)
        pq = pos_query[b].to(acc_dtype).view(Hkv, G, -1) if pos_query is not None else None
        s = _row_scores(qg, k_cache, table, b, sm_scale, pq, keep, cp)             # [Hkv, G, L]
        m = s.amax(-1)
        base = torch.where(torch.isinf(m), torch.zeros_like(m), m)
        p = _exp_(s.sub_(base[..., None]))                                         # in place: s is ours
        l = p.sum(-1)
        acc = _row_values(p, v_cache, table, b, keep, cp)                           # [Hkv, G, D]
        out[b] = torch.where(l[..., None] > 0, acc / l.clamp_min(1e-30)[..., None], torch.zeros_like(acc)).view(Hq, D)
        lse[b] = torch.where(l > 0, base + torch.log(l.clamp_min(1e-30)), torch.full_like(l, -math.inf)).view(Hq).float()
    return AttentionOutput(out.to(q.dtype), lse, foreign)


# Score the whole pool in one BLAS pass when it holds at most this many times the row's tokens: reading
# every K row once beats gathering the row's pages (a copy) and multiplying them (measured, replay_bench).
POOL_SCORING = 2.0


def _row_scores(qg, k_cache, table, b, sm_scale, pq, keep, cp) -> torch.Tensor:
    """Scores of row b: [Hkv, G, L], scaled, with the positional term, failing slots at -inf."""
    Hkv, G, D = qg.shape
    L, P = table.seq_len(b), table.page_size
    if sm_scale != 1.0:
        qg = qg * sm_scale                            # scale the query once, not every score
    if k_cache.dtype == qg.dtype and k_cache.shape[0] <= POOL_SCORING * L:
        # [Hkv, S, G] for every slot of the pool; only the row's are kept. Slots failing the check get a
        # score here but are set to -inf below and their V rows are never read.
        sp = torch.bmm(k_cache.transpose(0, 1), qg.transpose(1, 2))
        if Hkv * G == 1:
            s = sp.view(-1).index_select(0, table.slots(b)).view(1, 1, L)
        else:
            s = sp.index_select(1, table.slots(b)).transpose(1, 2)
    else:
        kp = _paged_view(k_cache, P)
        # bmm over KV heads with strided operands maps onto BLAS directly; matmul(q, K.permute(1, 2, 0)) is
        # ~250x slower on CPU for a single-row query (measured: 8.8 ms vs 0.034 ms for 16 K tokens)
        s = torch.cat([torch.bmm(kp.index_select(0, pg).view(-1, Hkv, D)[:n].transpose(0, 1).to(qg.dtype),
                                 qg.transpose(1, 2)) for _, n, pg in _chunks(table.pages(b), L, P, cp)], 1).transpose(1, 2)
    s = s.contiguous()
    if pq is not None:
        s += pos_scores(pq, 0, L)
    if keep is not None:
        s.masked_fill_(~keep, -math.inf)              # also replaces NaN scores of stale slots
    return s


def _row_values(p, v_cache, table, b, keep, cp) -> torch.Tensor:
    """sum_j p[h, g, j] * V[slot(j)] for row b: [Hkv, G, D]. Failing slots (keep False) are never read."""
    Hkv, G, L = p.shape
    D = v_cache.shape[-1]
    slots = table.slots(b)
    if keep is not None:
        slots = torch.where(keep, slots, torch.zeros_like(slots))      # slot 0: the reserved zero page
    if G == 1 and v_cache.dtype == p.dtype:
        # one weighted pass over the row's V rows, no gathered copy: embedding_bag with per-token weights
        idx = slots if Hkv == 1 else (slots[None, :] * Hkv + torch.arange(Hkv, device=slots.device)[:, None]).reshape(-1)
        offsets = torch.arange(Hkv, device=slots.device) * L
        return F.embedding_bag(idx, v_cache.view(-1, D), offsets, mode="sum",
                               per_sample_weights=p.reshape(-1)).view(Hkv, 1, D)
    vp = _paged_view(v_cache, table.page_size)
    acc = torch.zeros(Hkv, G, D, dtype=p.dtype, device=p.device)
    for j0, n, pg in _chunks(table.pages(b), L, table.page_size, cp):
        V = vp.index_select(0, pg).view(-1, Hkv, D)[:n]
        if keep is not None:
            V = V.masked_fill(~keep[j0: j0 + n, None, None], 0)        # 0 weight x NaN would still be NaN
        acc += torch.bmm(p[..., j0: j0 + n], V.transpose(0, 1).to(p.dtype))
    return acc


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


def _exp_(x: torch.Tensor) -> torch.Tensor:
    """exp(x) in place, with x first clamped to -80 (fp32; -700 in fp64).

    Sharp attention (the recall model's scores differ by multiples of 24) otherwise produces subnormal
    weights, and x86 arithmetic on subnormals is ~100x slower (measured: a 16 K-token chunk went from
    0.03 ms to 6 ms). A clamped weight is e^-80 ~ 1.8e-35 of the largest instead of smaller: far below
    fp32 resolution, and independent of the slot's contents (masked slots stay content-free)."""
    return x.clamp_min_(-700.0 if x.dtype == torch.float64 else -80.0).exp_()


def attention_probs(q: torch.Tensor, k_cache: torch.Tensor, table: PageTable, b: int, sm_scale: float, *,
                    keep: torch.Tensor | None = None, pos_query: torch.Tensor | None = None,
                    chunk_tokens: int | None = None) -> torch.Tensor:
    """Softmax weights of row b over its logical tokens: float64 [Hq, seq_len] (for attribution).
    With `keep`, failing slots get weight 0 (the patched kernel's view); without, the unpatched view."""
    Hq, D = q.shape[1], q.shape[2]
    Hkv = k_cache.shape[1]
    qg = q[b].float().view(Hkv, Hq // Hkv, D)
    pq = pos_query[b].float().view(Hkv, Hq // Hkv, -1) if pos_query is not None else None
    cp = max(1, (chunk_tokens or default_chunk(k_cache)) // table.page_size)
    s = _row_scores(qg, k_cache, table, b, sm_scale, pq, keep, cp)
    return torch.softmax(s.double().reshape(Hq, -1), -1)
