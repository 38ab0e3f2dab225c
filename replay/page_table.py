"""Page tables in FlashInfer's CSR form: what the kernels read and what the ledger records.

For a batch of B requests over pages of `page_size` tokens:

    indptr         int64 [B + 1]    row b's pages are indices[indptr[b] : indptr[b + 1]]
    indices        int64 [nnz]      physical page ids, in the request's logical order
    last_page_len  int64 [B]        tokens used in the row's last page, in [1, page_size]

    seq_len[b] = (pages[b] - 1) * page_size + last_page_len[b]

Logical token j of row b lives in physical slot indices[indptr[b] + j // page_size] * page_size
+ j % page_size. Valid ranges of a row with n pages:

    page 0 .. n-2   every slot [0, page_size) is part of the sequence
    page n-1        slots [0, last_page_len) are; [last_page_len, page_size) are NOT (never read)

Page 0 of a pool is reserved (SGLang's padding page): it never appears in a valid table.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import torch


@dataclass(frozen=True)
class PageTable:
    indptr: torch.Tensor
    indices: torch.Tensor
    last_page_len: torch.Tensor
    page_size: int
    _slots: dict = field(default_factory=dict, repr=False, compare=False)   # row -> cached slot ids

    @classmethod
    def from_rows(cls, rows: Sequence[torch.Tensor | Sequence[int]], seq_lens: Sequence[int], page_size: int,
                  device: torch.device | str = "cpu") -> "PageTable":
        """Build from per-row page lists and sequence lengths (pages beyond the sequence are an error)."""
        if len(rows) != len(seq_lens):
            raise ValueError(f"{len(rows)} page rows but {len(seq_lens)} sequence lengths")
        tensors = [torch.as_tensor(r, dtype=torch.int64).reshape(-1) for r in rows]
        counts = [t.numel() for t in tensors]
        for b, (n, L) in enumerate(zip(counts, seq_lens)):
            need = -(-int(L) // page_size)
            if L < 1 or n != need:
                raise ValueError(f"row {b}: seq_len {L} needs {need} pages of {page_size}, got {n}")
        indptr = torch.zeros(len(rows) + 1, dtype=torch.int64)
        if counts:
            indptr[1:] = torch.cumsum(torch.tensor(counts, dtype=torch.int64), 0)
        indices = torch.cat(tensors) if tensors else torch.zeros(0, dtype=torch.int64)
        last = torch.tensor([(int(L) - 1) % page_size + 1 for L in seq_lens], dtype=torch.int64)
        return cls(indptr.to(device), indices.to(device), last.to(device), page_size)

    # ------------------------------------------------------------------ shape
    @property
    def batch_size(self) -> int:
        return self.indptr.numel() - 1

    @property
    def device(self) -> torch.device:
        return self.indices.device

    def num_pages(self, b: int) -> int:
        return int(self.indptr[b + 1] - self.indptr[b])

    def seq_len(self, b: int) -> int:
        return (self.num_pages(b) - 1) * self.page_size + int(self.last_page_len[b])

    def seq_lens(self) -> torch.Tensor:
        n = self.indptr[1:] - self.indptr[:-1]
        return (n - 1) * self.page_size + self.last_page_len

    def pages(self, b: int) -> torch.Tensor:
        return self.indices[int(self.indptr[b]): int(self.indptr[b + 1])]

    def slots(self, b: int) -> torch.Tensor:
        """Physical slot ids of row b's tokens in logical order (int64 [seq_len]); cached per table."""
        s = self._slots.get(b)
        if s is None:
            pages = self.pages(b)
            offs = torch.arange(self.page_size, dtype=torch.int64, device=pages.device)
            s = (pages[:, None] * self.page_size + offs).reshape(-1)[: self.seq_len(b)]
            self._slots[b] = s
        return s

    def to(self, device: torch.device | str) -> "PageTable":
        return PageTable(self.indptr.to(device), self.indices.to(device), self.last_page_len.to(device), self.page_size)

    # ------------------------------------------------------------------ invariants
    def validate(self, num_pages: int, *, allow_shared: bool = True) -> None:
        """The host-side checks a paged-KV engine makes before a kernel reads a page table: int64
        tensors, indptr well-formed, page ids in range, no page twice in one row.

        num_pages is the pool's allocatable page count (valid ids are 1..num_pages). A page shared by two
        rows is allowed (prefix reuse) unless allow_shared is False; a page twice in one row never is.
        """
        ip, idx, last = self.indptr.cpu(), self.indices.cpu(), self.last_page_len.cpu()
        if ip.dtype != torch.int64 or idx.dtype != torch.int64 or last.dtype != torch.int64:
            raise ValueError("page table tensors must be int64")
        if ip.numel() < 1 or int(ip[0]) != 0:
            raise ValueError("indptr must start at 0")
        if bool((ip[1:] < ip[:-1]).any()):
            raise ValueError("indptr must be non-decreasing")
        if int(ip[-1]) != idx.numel():
            raise ValueError(f"indptr[-1] = {int(ip[-1])} but indices holds {idx.numel()} pages")
        if last.numel() != ip.numel() - 1:
            raise ValueError("last_page_len must have one entry per row")
        if idx.numel() and (int(idx.min()) < 1 or int(idx.max()) > num_pages):
            raise ValueError(f"page ids must be in [1, {num_pages}] (page 0 is reserved)")
        for b in range(ip.numel() - 1):
            row = idx[int(ip[b]): int(ip[b + 1])]
            if row.numel() == 0:
                raise ValueError(f"row {b} has no pages")
            if torch.unique(row).numel() != row.numel():
                raise ValueError(f"row {b} holds a page twice")
            if not 1 <= int(last[b]) <= self.page_size:
                raise ValueError(f"row {b}: last_page_len {int(last[b])} not in [1, {self.page_size}]")
        if not allow_shared and torch.unique(idx).numel() != idx.numel():
            raise ValueError("a page appears in two rows")
