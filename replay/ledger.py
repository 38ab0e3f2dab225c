"""The provenance ledger: who wrote which KV slot, in which tenancy of its page, when, and what.

Host-side NumPy columns (no Python object per token or per page):

    per slot     writer (request uid, -1 never written), pos (the writer's logical token position),
                 token (the token id whose KV the slot holds), step (the pair's step of the write),
                 stamp (the page epoch the write happened in; 0 for bytes another node's page carried in),
                 carried (the slot's bytes arrived with a transferred page but were written, on the
                 sending node, by `writer` - not by the request the page now belongs to)
    per epoch    page, owner, alloc_step, free_step (-1 while held), written offsets [lo, hi) within the
                 page, last write step, content hash (64-bit BLAKE2b of the page at free time or when
                 sealed; 0 = not computed)

An epoch is one tenancy of one page (allocator.py). Every attended slot can be traced to its last writer
with `attribute(slots)`; a slot whose writer is not the reader is foreign.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


class Registry:
    """Request uids (dense ints used in stamps and ledgers) <-> request ids and accounts."""

    def __init__(self) -> None:
        self.rids: list[str] = []
        self.accounts: list[str | None] = []
        self._index: dict[str, int] = {}

    def uid(self, rid: str, account: str | None = None) -> int:
        u = self._index.get(rid)
        if u is None:
            u = len(self.rids)
            self._index[rid] = u
            self.rids.append(rid)
            self.accounts.append(account)
        elif account is not None and self.accounts[u] is None:
            self.accounts[u] = account
        return u

    def get(self, rid: str) -> int | None:
        return self._index.get(rid)

    def rid(self, uid: int) -> str:
        return self.rids[uid]

    def account(self, uid: int) -> str | None:
        return self.accounts[uid]

    def __len__(self) -> int:
        return len(self.rids)

    def truncate(self, n: int) -> None:
        for rid in self.rids[n:]:
            del self._index[rid]
        del self.rids[n:], self.accounts[n:]


_EP_COLS = {"page": np.int64, "owner": np.int64, "alloc_step": np.int64, "free_step": np.int64,
            "lo": np.int32, "hi": np.int32, "write_step": np.int64, "hash": np.uint64}
_SLOT_COLS = ("writer", "pos", "token", "step", "stamp", "carried")


@dataclass
class LedgerJournal:
    seen: np.ndarray
    pages: list[np.ndarray] = field(default_factory=list)
    pre: list[dict[str, np.ndarray]] = field(default_factory=list)
    n_epochs: int = 0
    last_closed: np.ndarray | None = None
    live_epochs: np.ndarray | None = None
    live_rows: dict[str, np.ndarray] | None = None


class Ledger:
    def __init__(self, name: str, num_pages: int, page_size: int):
        self.name, self.num_pages, self.page_size = name, num_pages, page_size
        n = (num_pages + 1) * page_size
        self.writer = np.full(n, -1, dtype=np.int32)
        self.pos = np.full(n, -1, dtype=np.int32)
        self.token = np.full(n, -1, dtype=np.int32)
        self.step = np.full(n, -1, dtype=np.int32)
        self.stamp = np.zeros(n, dtype=np.int32)
        self.carried = np.zeros(n, dtype=bool)
        self._cap = 1024
        self.ep = {k: np.zeros(self._cap, dtype=t) for k, t in _EP_COLS.items()}
        self.n_epochs = 1                   # epoch ids start at 1 (0 = never allocated)
        self.last_closed = np.zeros(num_pages + 1, dtype=np.int64)   # per page: its latest freed epoch
        self._journals: list[LedgerJournal] = []

    # ------------------------------------------------------------------ events
    def on_alloc(self, pages: np.ndarray, epochs: np.ndarray, owner: int, step: int) -> None:
        if epochs.size == 0:
            return
        top = int(epochs.max()) + 1
        if int(epochs.min()) != self.n_epochs or top - self.n_epochs != epochs.size:
            raise AssertionError(f"{self.name}: epochs must arrive in order ({self.n_epochs} expected)")
        self._grow(top)
        self.ep["page"][epochs] = pages
        self.ep["owner"][epochs] = owner
        self.ep["alloc_step"][epochs] = step
        self.ep["free_step"][epochs] = -1
        self.ep["lo"][epochs] = self.page_size
        self.ep["hi"][epochs] = 0
        self.ep["write_step"][epochs] = -1
        self.ep["hash"][epochs] = 0
        self.n_epochs = top

    def on_free(self, epochs: np.ndarray, step: int, hashes: np.ndarray | None = None) -> None:
        self.ep["free_step"][epochs] = step
        self.last_closed[self.ep["page"][epochs]] = epochs
        if hashes is not None:
            self.ep["hash"][epochs] = hashes

    def on_write(self, slots: np.ndarray, owner: int, positions: np.ndarray, tokens: np.ndarray, step: int,
                 page_epoch: np.ndarray) -> None:
        """Record a write of `slots` (in logical order) by `owner`; page_epoch is the allocator's epoch
        array (indexed by page)."""
        if slots.size == 0:
            return
        pages = slots // self.page_size
        self._touch(pages)
        ep = page_epoch[pages]
        self.writer[slots] = owner
        self.pos[slots] = positions
        self.token[slots] = tokens
        self.step[slots] = step
        self.stamp[slots] = ep
        self.carried[slots] = False
        # per-page written range: slots of one write come in runs of one page
        off = (slots % self.page_size).astype(np.int32)
        starts = np.concatenate([[0], np.flatnonzero(np.diff(pages) != 0) + 1])
        run_ep = ep[starts]
        np.minimum.at(self.ep["lo"], run_ep, np.minimum.reduceat(off, starts))
        np.maximum.at(self.ep["hi"], run_ep, np.maximum.reduceat(off, starts) + 1)
        self.ep["write_step"][run_ep] = step

    def on_carry(self, slots: np.ndarray, writer: np.ndarray, positions: np.ndarray, tokens: np.ndarray,
                 step: int) -> None:
        """Slots whose bytes a transferred page brought from another node: they keep their real writer there
        (`writer`, -1 never written), are no tenant's write here (stamp 0) and are marked carried."""
        if slots.size == 0:
            return
        self._touch(slots // self.page_size)
        self.writer[slots] = writer
        self.pos[slots] = positions
        self.token[slots] = tokens
        self.step[slots] = step
        self.stamp[slots] = 0
        self.carried[slots] = writer >= 0

    def on_fill(self, slots: np.ndarray) -> None:
        """Slots overwritten by a non-tenant fill (zeroing, poison, sentinel): no longer anyone's data."""
        self._touch(slots // self.page_size)
        self.writer[slots] = -1
        self.pos[slots] = -1
        self.token[slots] = -1
        self.stamp[slots] = 0
        self.carried[slots] = False

    def seal(self, epochs: np.ndarray, hashes: np.ndarray) -> None:
        self.ep["hash"][epochs] = hashes

    # ------------------------------------------------------------------ queries
    def attribute(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(writer uid or -1, writer position, token) of each slot."""
        return self.writer[slots], self.pos[slots], self.token[slots]

    def epoch(self, e: int) -> dict:
        return {k: v[e].item() for k, v in self.ep.items()} | {"epoch": e}

    def epochs_of_page(self, page: int) -> np.ndarray:
        return np.flatnonzero(self.ep["page"][1:self.n_epochs] == page) + 1

    # ------------------------------------------------------------------ checkpoints
    def open_journal(self, live_epochs: np.ndarray) -> LedgerJournal:
        live = np.asarray(live_epochs, dtype=np.int64)
        j = LedgerJournal(seen=np.zeros(self.num_pages + 1, dtype=bool), n_epochs=self.n_epochs,
                          last_closed=self.last_closed.copy(),
                          live_epochs=live, live_rows={k: v[live].copy() for k, v in self.ep.items()})
        self._journals.append(j)
        return j

    def _touch(self, pages: np.ndarray) -> None:
        for j in self._journals:
            new = np.unique(pages[~j.seen[pages]])
            if new.size == 0:
                continue
            j.seen[new] = True
            s = (new[:, None] * self.page_size + np.arange(self.page_size)).reshape(-1)
            j.pages.append(new)
            j.pre.append({c: getattr(self, c)[s].copy() for c in _SLOT_COLS})

    def undo(self, j: LedgerJournal) -> None:
        if j in self._journals:
            self._journals.remove(j)
        for pages, pre in zip(reversed(j.pages), reversed(j.pre)):
            s = (pages[:, None] * self.page_size + np.arange(self.page_size)).reshape(-1)
            for c in _SLOT_COLS:
                getattr(self, c)[s] = pre[c]
        self.n_epochs = j.n_epochs
        self.last_closed[:] = j.last_closed
        for k, v in self.ep.items():
            v[j.live_epochs] = j.live_rows[k]

    def _grow(self, n: int) -> None:
        if n <= self._cap:
            return
        while self._cap < n:
            self._cap *= 2
        for k in self.ep:
            grown = np.zeros(self._cap, dtype=self.ep[k].dtype)
            grown[: self.ep[k].size] = self.ep[k]
            self.ep[k] = grown
