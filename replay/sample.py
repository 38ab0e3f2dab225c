"""The numeric part of a decode at a reduced scale: the decode attention over a sample of the row's pages.

Whose data a response read is never scaled: the allocator, the free list, the page tables and the ledger run
at the logged lengths on the nodes' own pools, and the foreign owners of a response are the writers of its
whole prompt range (pd_pair.PDPair._attribute). What `--scale f` shrinks is the attention arithmetic alone,
which costs one pass over the row per decode step: with `every` = round(1 / f) > 1, each step attends,
through the same paged kernel, the page table of

    the row's first `head` pages      the slots the decode steps read (the recall model's step t reads slot t)
    every `every`-th page after them  a sample of the rest of the prompt range
    every page from the prompt's end  the decode's own writes (the page holding the prompt's last position too)

in logical order. The kernel's positional term sees the sampled table's own (compressed) positions, so the
attention mass of a step is the mass over the sample; the ledger is read at each sampled slot's real position.
With every = 1 the table is the row's own (the exact computation).
"""
from __future__ import annotations

import numpy as np
import torch

from kvir.replay.page_table import PageTable


def every_for(scale: float) -> int:
    """The page sampling step of a numeric scale in (0, 1]: 1 keeps every page."""
    if not 0 < scale <= 1:
        raise ValueError(f"scale must be in (0, 1], got {scale}")
    return max(1, round(1 / scale))


def head_pages(steps: int, page_size: int) -> int:
    """Pages from the row's start that hold the logical slots 0..steps (every one is kept)."""
    return max(1, -(-(steps + 1) // page_size))


def kept_pages(n_pages: int, prompt_len: int, page_size: int, head: int, every: int) -> np.ndarray:
    """Logical page indices (ascending) of a row of n_pages that the sampled table keeps."""
    i = np.arange(n_pages)
    if every <= 1:
        return i
    keep = (i < head) | (i >= prompt_len // page_size) | ((i - head) % every == 0)
    return i[keep]


def sampled_table(pages: torch.Tensor, seq_len: int, prompt_len: int, page_size: int, head: int,
                  every: int) -> tuple[PageTable, np.ndarray]:
    """The sampled page table of a row holding `pages` (logical order) with seq_len positions, and the real
    logical position of each of its positions."""
    n = -(-seq_len // page_size)
    keep = kept_pages(n, prompt_len, page_size, head, every)
    idx = torch.as_tensor(keep, dtype=torch.int64, device=pages.device)
    last = (seq_len - 1) % page_size + 1
    table = PageTable(torch.tensor([0, keep.size], device=pages.device), pages[:n].index_select(0, idx),
                      torch.tensor([last], device=pages.device), page_size)
    real = (keep[:, None] * page_size + np.arange(page_size)).reshape(-1)[: table.seq_len(0)]
    return table, real


__all__ = ["every_for", "head_pages", "kept_pages", "sampled_table"]
