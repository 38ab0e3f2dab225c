"""One role's KV node: pool (device), allocator and ledger (host) kept in step, with checkpoints.

Every page allocation, free and write goes through here so the three never disagree; check_integrity()
verifies that they do not (and the allocator's own invariants).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from kvir.replay.allocator import AllocatorError, AllocatorState, PageAllocator
from kvir.replay.config import ModelDims, NodeLimits
from kvir.replay.ledger import Ledger, LedgerJournal
from kvir.replay.policy import FreedPageFill
from kvir.replay.pool import Journal, KVPool


@dataclass
class NodeCheckpoint:
    alloc: AllocatorState
    pool: Journal
    ledger: LedgerJournal


class KVNode:
    def __init__(self, name: str, limits: NodeLimits, dims: ModelDims, device: torch.device | str = "cpu",
                 strategy: str = "sglang-pd", fill: FreedPageFill = FreedPageFill(), hash_on_free: bool = False):
        self.name, self.limits, self.fill, self.hash_on_free = name, limits, fill, hash_on_free
        self.page_size = limits.page_size
        self.alloc = PageAllocator(limits.num_pages, self.page_size, strategy)
        self.pool = KVPool(limits.num_pages, self.page_size, dims, device)
        self.ledger = Ledger(name, limits.num_pages, self.page_size)

    # ------------------------------------------------------------------ pages
    def allocate(self, n_pages: int, uid: int, step: int) -> np.ndarray | None:
        pages = self.alloc.alloc(n_pages, uid)
        if pages is None or pages.size == 0:
            return pages
        epochs = self.alloc.epoch[pages]
        self.pool.sync_pages(pages, uid, epochs)
        self.ledger.on_alloc(pages, epochs, uid, step)
        return pages

    def release(self, pages: np.ndarray, uid: int, step: int, sentinel: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
        pages = np.asarray(pages, dtype=np.int64)
        if pages.size == 0:
            return
        epochs = self.alloc.epoch[pages]
        hashes = self.pool.page_hashes(pages) if self.hash_on_free else None
        self.ledger.on_free(epochs, step, hashes)
        mode = self.fill.mode
        if mode != "none":
            slots = self.pool.slots_of_pages(pages)
            if mode == "zero":
                self.overwrite(slots, 0.0, 0.0)
            elif mode == "nan":
                self.overwrite(slots, float("nan"), float("nan"))
            else:
                if sentinel is None:
                    raise ValueError("sentinel fill needs the owner's sentinel rows")
                self.overwrite(slots, sentinel[0], sentinel[1])
        self.alloc.free(pages, uid)
        self.pool.sync_pages(pages, -1, epochs)

    def seal_previous(self, pages: np.ndarray) -> None:
        """Record the content hash of each page's previous tenancy, if not yet known. A page keeps its
        last writer's bytes from its free until its next write, so this is the hash of what that tenancy
        left (pages a fill mitigation overwrote are skipped: their previous content is gone)."""
        if self.fill.mode != "none" or np.size(pages) == 0:
            return
        prev = self.ledger.last_closed[pages]
        need = (prev > 0) & (self.ledger.ep["hash"][prev] == 0)
        if need.any():
            self.ledger.seal(prev[need], self.pool.page_hashes(np.asarray(pages)[need]))

    def overwrite(self, slots: torch.Tensor, k, v) -> None:
        """Fill slots with a non-tenant pattern (zero, NaN, a sentinel): nobody's data afterwards."""
        self.pool.fill(slots, k, v)
        self.ledger.on_fill(slots.cpu().numpy())

    def write(self, slots: torch.Tensor, k: torch.Tensor, v: torch.Tensor, uid: int, positions: np.ndarray,
              tokens: np.ndarray, step: int) -> None:
        s = slots.cpu().numpy()
        owners = self.alloc.owner[s // self.page_size]
        if (owners != uid).any():
            raise AllocatorError(f"{self.name}: request {uid} writes a slot of a page it does not own")
        self.pool.write(slots, k, v)
        self.ledger.on_write(s, uid, positions, tokens, step, self.alloc.epoch)

    def receive_pages(self, src: "KVNode", src_pages: np.ndarray, dst_pages: np.ndarray, uid: int, step: int) -> int:
        """Copy whole pages from `src` (Mooncake moves pages, not tokens) into this node's `dst_pages`, held by
        `uid`. Slots uid wrote on src become uid's writes here; every other slot's bytes arrive too and keep
        their real writer on src in the ledger (carried, not stamped: no tenant wrote them here). Returns the
        number of slots carried that another request wrote."""
        src_pages = np.asarray(src_pages, dtype=np.int64)
        dst_pages = np.asarray(dst_pages, dtype=np.int64)
        if src_pages.size == 0:
            return 0
        if (self.alloc.owner[dst_pages] != uid).any():
            raise AllocatorError(f"{self.name}: request {uid} receives into a page it does not own")
        P = self.page_size
        s_slots = (src_pages[:, None] * P + np.arange(P)).reshape(-1)
        d_slots = (dst_pages[:, None] * P + np.arange(P)).reshape(-1)
        s_t = torch.as_tensor(s_slots, device=src.pool.device)
        d_t = torch.as_tensor(d_slots, device=self.pool.device)
        k, v = src.pool.read(s_t)
        self.pool.write(d_t, k, v)
        w = src.ledger.writer[s_slots]
        own = w == uid
        if own.any():
            self.ledger.on_write(d_slots[own], uid, src.ledger.pos[s_slots[own]], src.ledger.token[s_slots[own]],
                                 step, self.alloc.epoch)
        other = ~own
        if other.any():
            self.pool.stamp(d_t[torch.as_tensor(other, device=self.pool.device)], fresh=False)
            self.ledger.on_carry(d_slots[other], w[other], src.ledger.pos[s_slots[other]],
                                 src.ledger.token[s_slots[other]], step)
        return int((w[other] >= 0).sum())

    def slots(self, pages: np.ndarray, start: int, n: int) -> torch.Tensor:
        """Physical slots of logical tokens [start, start + n) of a request holding `pages`."""
        j = torch.arange(start, start + n, dtype=torch.int64)
        p = torch.as_tensor(pages, dtype=torch.int64)[j // self.page_size]
        return (p * self.page_size + j % self.page_size).to(self.pool.device)

    # ------------------------------------------------------------------ checkpoints
    def checkpoint(self) -> NodeCheckpoint:
        """Start recording so that undo() returns the node exactly to this point (counterfactual runs)."""
        live = self.alloc.epoch[np.flatnonzero(self.alloc.owner >= 0)]
        return NodeCheckpoint(self.alloc.state(), self.pool.open_journal(), self.ledger.open_journal(live))

    def undo(self, cp: NodeCheckpoint) -> None:
        self.pool.undo(cp.pool)
        self.ledger.undo(cp.ledger)
        self.alloc.restore(cp.alloc)
        self.pool.sync_all(self.alloc.owner, self.alloc.epoch)

    # ------------------------------------------------------------------ invariants
    def check_integrity(self, live: dict[int, np.ndarray] | None = None) -> None:
        self.alloc.check_integrity(live)
        if not np.array_equal(self.pool.page_owner.cpu().numpy(), self.alloc.owner.astype(np.int32)):
            raise AllocatorError(f"{self.name}: device page owners disagree with the allocator")
        if not np.array_equal(self.pool.page_epoch.cpu().numpy(), self.alloc.epoch.astype(np.int32)):
            raise AllocatorError(f"{self.name}: device page epochs disagree with the allocator")
        if not np.array_equal(self.pool.slot_stamp.cpu().numpy(), self.ledger.stamp):
            raise AllocatorError(f"{self.name}: device slot stamps disagree with the ledger")
        if not torch.equal(self.pool.page_fresh, self.pool.count_fresh()):
            raise AllocatorError(f"{self.name}: per-page fresh counts disagree with the slot stamps")
        written = (self.ledger.writer >= 0) & ~self.ledger.carried
        if (self.ledger.stamp[written] <= 0).any():
            raise AllocatorError(f"{self.name}: a written slot has no epoch stamp")
        if (self.ledger.stamp[self.ledger.carried] != 0).any():
            raise AllocatorError(f"{self.name}: a slot carried in from another node carries an epoch stamp")
        if self.pool.k[:, : self.page_size].abs().sum() != 0 or self.pool.v[:, : self.page_size].abs().sum() != 0:
            raise AllocatorError(f"{self.name}: the reserved page 0 was written")
