"""What a paged decode kernel returns and checks, shared by the torch and the Triton kernels (kernels.py,
triton_kernels.py): the owner/epoch check over the pool's stamps (pool.py), its result and its failure.

A slot belongs to the reading request R exactly when page_owner[page] == R and slot_stamp[slot] ==
page_epoch[page]: the page is R's now AND the slot was written during R's tenancy (slots a transferred page
carried in from another node have stamp 0, so they fail it).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from kvir.replay.page_table import PageTable


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
    page_fresh: torch.Tensor | None = None   # int32 [pages + 1] (pool.py): skips slot stamps of whole pages

    def __post_init__(self) -> None:
        if self.mode not in ("mask", "count", "raise"):
            raise ValueError(f"unknown check mode {self.mode!r}")


@dataclass
class AttentionOutput:
    out: torch.Tensor             # [B, Hq, D], the query's dtype
    lse: torch.Tensor             # [B, Hq] float32 log-sum-exp of the scores (-inf for an empty row)
    foreign: torch.Tensor         # int64 [B] slots that failed the check (0 without a check)


def owned_mask(check: OwnerCheck, table: PageTable, b: int) -> torch.Tensor | None:
    """bool [seq_len]: slot j of row b passes the owner/epoch check; None when every slot passes.

    With page_fresh, a page the row owns whose every slot carries the current epoch passes whole and
    the slot stamps are read only for the other pages (a normal request: just its last page)."""
    pages = table.pages(b)
    P, L = table.page_size, table.seq_len(b)
    own = check.page_owner[pages] == check.owners[b].to(check.page_owner.dtype)
    if check.page_fresh is not None:
        whole = own & (check.page_fresh[pages] == P)
        if bool(whole[:-1].all()):
            last = int(pages[-1])
            n_last = L - (pages.numel() - 1) * P
            ok_last = own[-1] & (check.slot_stamp[last * P: last * P + n_last] == check.page_epoch[last])
            if bool(ok_last.all()):
                return None
            ok = torch.ones(L, dtype=torch.bool, device=pages.device)
            ok[L - n_last:] = ok_last
            return ok
    stamps = check.slot_stamp.view(-1, P).index_select(0, pages)            # [n, P]
    ok = (stamps == check.page_epoch[pages][:, None]) & own[:, None]
    return ok.reshape(-1)[:L]


__all__ = ["IsolationViolation", "OwnerCheck", "AttentionOutput", "owned_mask"]
