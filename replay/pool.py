"""One role's paged KV storage on the device, with the stamps the patched kernel checks.

    k, v         [layers, (num_pages + 1) * page_size, kv_heads, head_dim]   slot = page * page_size + offset
    slot_stamp   int32 [slots]       epoch of the page's tenancy that last wrote the slot (0: never written)
    page_epoch   int32 [pages + 1]   current tenancy of each page (mirror of the allocator)
    page_owner   int32 [pages + 1]   current owner uid (-1 free, -2 the reserved page 0)
    page_fresh   int32 [pages + 1]   how many of the page's slots carry its current epoch: a page with
                                     page_size of them passes the check whole, one with 0 fails whole, so
                                     the patched kernel looks at slot stamps only on partly written pages

A slot belongs to the reading request R exactly when page_owner[page] == R and slot_stamp[slot] ==
page_epoch[page]: the page is R's now AND the slot was written during R's tenancy. A page R owns but
never wrote (the incident's pre-allocated pages) fails the second test. Page 0 stays zero: masked reads
are redirected to it so stale bytes (even NaN) are never loaded.

Writes can be journaled (pre-images of touched pages) so a counterfactual run can be undone exactly.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from kvir.replay.allocator import FREE, RESERVED
from kvir.replay.config import ModelDims

_I32 = np.iinfo(np.int32).max


@dataclass
class Journal:
    """Pre-images of every page touched while it is open."""

    pages: list[np.ndarray] = field(default_factory=list)
    pre: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = field(default_factory=list)
    seen: np.ndarray | None = None          # bool per page: pre-image already saved


class KVPool:
    def __init__(self, num_pages: int, page_size: int, dims: ModelDims, device: torch.device | str = "cpu"):
        self.num_pages, self.page_size, self.dims = num_pages, page_size, dims
        self.device = torch.device(device)
        n = (num_pages + 1) * page_size
        shape = (dims.n_layers, n, dims.n_kv_heads, dims.head_dim)
        # Deterministic start: a fresh pool reads as zeros ("never written" in the ledger).
        self.k = torch.zeros(shape, dtype=dims.dtype, device=self.device)
        self.v = torch.zeros(shape, dtype=dims.dtype, device=self.device)
        self.slot_stamp = torch.zeros(n, dtype=torch.int32, device=self.device)
        self.page_epoch = torch.zeros(num_pages + 1, dtype=torch.int32, device=self.device)
        self.page_owner = torch.full((num_pages + 1,), FREE, dtype=torch.int32, device=self.device)
        self.page_owner[0] = RESERVED
        self.page_fresh = torch.zeros(num_pages + 1, dtype=torch.int32, device=self.device)
        self._journals: list[Journal] = []

    @property
    def num_slots(self) -> int:
        return (self.num_pages + 1) * self.page_size

    def slots_of_pages(self, pages: np.ndarray | torch.Tensor) -> torch.Tensor:
        p = torch.as_tensor(np.asarray(pages), dtype=torch.int64, device=self.device)
        offs = torch.arange(self.page_size, dtype=torch.int64, device=self.device)
        return (p[:, None] * self.page_size + offs).reshape(-1)

    # ------------------------------------------------------------------ stamps
    def sync_pages(self, pages: np.ndarray, owner: np.ndarray | int, epoch: np.ndarray | int) -> None:
        """Mirror the allocator's owner/epoch of `pages` onto the device."""
        if np.size(pages) == 0:
            return
        if np.max(epoch) > _I32 or np.max(owner) > _I32:
            raise OverflowError("page epoch or owner uid exceeds int32 (device stamps are int32)")
        idx = torch.as_tensor(np.asarray(pages), dtype=torch.int64, device=self.device)
        self.page_owner[idx] = torch.as_tensor(np.broadcast_to(owner, np.shape(pages)).astype(np.int32), device=self.device)
        new_epoch = torch.as_tensor(np.broadcast_to(epoch, np.shape(pages)).astype(np.int32), device=self.device)
        self.page_fresh[idx] = torch.where(self.page_epoch[idx] == new_epoch, self.page_fresh[idx], 0)
        self.page_epoch[idx] = new_epoch

    def sync_all(self, owner: np.ndarray, epoch: np.ndarray) -> None:
        self.page_owner.copy_(torch.as_tensor(owner.astype(np.int32)))
        self.page_epoch.copy_(torch.as_tensor(epoch.astype(np.int32)))
        self.page_fresh.copy_(self.count_fresh())

    def count_fresh(self) -> torch.Tensor:
        """page_fresh recomputed from the slot stamps (after an undo; and in integrity checks)."""
        st = self.slot_stamp.view(-1, self.page_size)
        return ((st == self.page_epoch[:, None]) & (st > 0)).sum(1).to(torch.int32)

    def stamp(self, slots: torch.Tensor, fresh: bool = True) -> None:
        """Stamp slots with their page's current epoch (fresh) or 0 (not a tenant's bytes), keeping
        page_fresh in step. Slots in one call must be distinct."""
        pages = slots // self.page_size
        epoch = self.page_epoch[pages]
        was = ((self.slot_stamp[slots] == epoch) & (epoch > 0)).to(torch.int32)
        self.page_fresh.index_add_(0, pages, (1 - was) if fresh else -was)
        self.slot_stamp[slots] = epoch if fresh else torch.zeros_like(epoch)

    # ------------------------------------------------------------------ data
    def write(self, slots: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
        """Write rows k, v ([layers, n, kv_heads, head_dim]) into `slots` and stamp them with the epoch of
        their page's current tenancy."""
        slots = slots.to(self.device, torch.int64)
        self.touch(slots)
        self.k.index_copy_(1, slots, k.to(self.device, self.dims.dtype))
        self.v.index_copy_(1, slots, v.to(self.device, self.dims.dtype))
        self.stamp(slots)

    def fill(self, slots: torch.Tensor, k_value: torch.Tensor | float, v_value: torch.Tensor | float,
             *, stamp: bool = False) -> None:
        """Overwrite slots with a constant or a broadcastable pattern (zeroing, NaN poison, sentinels).
        A fill is not a tenant's write: the slots' stamps become 0 (never written) unless `stamp` is set."""
        slots = slots.to(self.device, torch.int64)
        self.touch(slots)
        shape = (self.dims.n_layers, slots.numel(), self.dims.n_kv_heads, self.dims.head_dim)
        kv = torch.as_tensor(k_value, dtype=self.dims.dtype, device=self.device).expand(shape)
        vv = torch.as_tensor(v_value, dtype=self.dims.dtype, device=self.device).expand(shape)
        self.k.index_copy_(1, slots, kv.contiguous())
        self.v.index_copy_(1, slots, vv.contiguous())
        self.stamp(slots, fresh=stamp)

    def read(self, slots: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        slots = slots.to(self.device, torch.int64)
        return self.k.index_select(1, slots), self.v.index_select(1, slots)

    def layer(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Layer i's caches as [slots, kv_heads, head_dim] (views, no copy)."""
        return self.k[i], self.v[i]

    # ------------------------------------------------------------------ journaling
    def open_journal(self) -> Journal:
        j = Journal(seen=np.zeros(self.num_pages + 1, dtype=bool))
        self._journals.append(j)
        return j

    def touch(self, slots: torch.Tensor) -> None:
        """Save pre-images of the pages of `slots` into every open journal (call before changing them)."""
        if not self._journals:
            return
        pages = np.unique((slots // self.page_size).cpu().numpy())
        for j in self._journals:
            new = pages[~j.seen[pages]]
            if new.size == 0:
                continue
            j.seen[new] = True
            s = self.slots_of_pages(new)
            j.pages.append(new)
            j.pre.append((self.k.index_select(1, s), self.v.index_select(1, s), self.slot_stamp[s].clone()))

    def close_journal(self, j: Journal) -> None:
        if j in self._journals:
            self._journals.remove(j)

    def undo(self, j: Journal) -> None:
        """Put back the pre-images (newest first) and stop journaling into j."""
        self.close_journal(j)
        self._apply(j.pages, j.pre)

    def _apply(self, pages_list: list[np.ndarray], images: list) -> None:
        for pages, (k, v, st) in zip(reversed(pages_list), reversed(images)):
            s = self.slots_of_pages(pages)
            self.k.index_copy_(1, s, k)
            self.v.index_copy_(1, s, v)
            self.slot_stamp[s] = st

    # ------------------------------------------------------------------ hashing
    def page_hashes(self, pages: np.ndarray) -> np.ndarray:
        """64-bit BLAKE2b of each page's K and V bytes (all layers), as uint64."""
        import hashlib

        out = np.zeros(len(pages), dtype=np.uint64)
        for i, p in enumerate(np.asarray(pages).tolist()):
            s = slice(p * self.page_size, (p + 1) * self.page_size)
            h = hashlib.blake2b(digest_size=8)
            h.update(_bytes(self.k[:, s]))
            h.update(_bytes(self.v[:, s]))
            out[i] = np.frombuffer(h.digest(), dtype=np.uint64)[0]
        return out


def _bytes(t: torch.Tensor) -> bytes:
    t = t.detach().contiguous().cpu()
    return t.view(torch.uint8).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
