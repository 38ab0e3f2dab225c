"""The oracle: dense attention in float64 over K/V gathered by walking the page table token by token.

Written independently of kernels.py (vLLM's ref_single_query_cached_kv_attention pattern): logical token
j of row b is read from page indices[indptr[b] + j // page_size] at offset j % page_size, the gathered
K/V are expanded for GQA and attended in float64. `dense_same_dtype` is the same math through
torch's scaled_dot_product_attention in the cache dtype, the baseline of PyTorch's error-ratio test:
a paged kernel passes when its error against the float64 golden is at most `fudge` times the error of
dense attention in the same dtype.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from kvir.replay.page_table import PageTable


def gather_row(cache: torch.Tensor, table: PageTable, b: int) -> torch.Tensor:
    """[seq_len, Hkv, D] rows of `cache` for row b, by the token walk."""
    P = table.page_size
    start = int(table.indptr[b])
    L = table.seq_len(b)
    idx = torch.empty(L, dtype=torch.int64)
    indices = table.indices.cpu()
    for j in range(L):
        idx[j] = int(indices[start + j // P]) * P + j % P
    return cache.index_select(0, idx.to(cache.device))


def dense_reference(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, table: PageTable,
                    sm_scale: float, *, keep: list[torch.Tensor | None] | None = None,
                    pos_query: torch.Tensor | None = None) -> torch.Tensor:
    """float64 [B, Hq, D]. keep[b] (bool [seq_len]) drops tokens from row b (the patched view)."""
    from kvir.replay.kernels import posenc

    B, Hq, D = q.shape
    Hkv = k_cache.shape[1]
    out = torch.zeros(B, Hq, D, dtype=torch.float64)
    for b in range(B):
        K = gather_row(k_cache, table, b).double().cpu()
        V = gather_row(v_cache, table, b).double().cpu()
        if keep is not None and keep[b] is not None:
            kb = keep[b].cpu()
            j = torch.arange(K.shape[0])[kb]
            K, V = K[kb], V[kb]
        else:
            j = torch.arange(K.shape[0])
        K = K.repeat_interleave(Hq // Hkv, dim=1)            # [L, Hq, D]
        V = V.repeat_interleave(Hq // Hkv, dim=1)
        s = torch.einsum("hd,lhd->hl", q[b].double().cpu(), K) * sm_scale
        if pos_query is not None:
            s = s + pos_query[b].double().cpu() @ posenc(j, pos_query.shape[-1]).double().T
        if s.shape[-1] == 0:
            continue
        p = torch.softmax(s, -1)
        out[b] = torch.einsum("hl,lhd->hd", p, V)
    return out


def dense_same_dtype(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, table: PageTable,
                     sm_scale: float) -> torch.Tensor:
    """SDPA in the caches' dtype over the gathered rows (the error baseline): [B, Hq, D]."""
    B, Hq, D = q.shape
    Hkv = k_cache.shape[1]
    out = torch.empty(B, Hq, D, dtype=q.dtype)
    for b in range(B):
        K = gather_row(k_cache, table, b).permute(1, 0, 2).unsqueeze(0)     # [1, Hkv, L, D]
        V = gather_row(v_cache, table, b).permute(1, 0, 2).unsqueeze(0)
        o = F.scaled_dot_product_attention(q[b].view(1, Hq, 1, D), K, V, scale=sm_scale, enable_gqa=Hq != Hkv)
        out[b] = o.view(Hq, D).cpu()
    return out


def error_ratio_ok(test: torch.Tensor, baseline: torch.Tensor, golden: torch.Tensor, fudge: float) -> tuple[bool, float, float]:
    """PyTorch's paged-attention criterion: max|test - golden| <= fudge * max|baseline - golden|.
    A floor of a few units in the last place of the test dtype covers a baseline that happens to be exact."""
    g = golden.double().cpu()
    e_test = (test.double().cpu() - g).abs().max().item()
    e_base = (baseline.double().cpu() - g).abs().max().item()
    floor = 4 * torch.finfo(test.dtype).eps * max(1.0, g.abs().max().item())
    return e_test <= max(fudge * e_base, floor), e_test, e_base
