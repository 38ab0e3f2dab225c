"""Page allocator with a pluggable free-list strategy, per-page owner/epoch stamps and check_integrity().

Pages are numbered 1..num_pages; page 0 is SGLang's reserved padding page (never allocated, never freed,
kept zero: masked reads are redirected to it). Freed pages are NOT cleared: a page handed to a new
request keeps the bytes of its last writer until overwritten, which is what makes stale reads possible.

Every allocation of a page gets a fresh epoch from one counter per allocator, so a page's epoch strictly
increases on each reallocation and (owner, epoch) names one tenancy. The strategy decides which free
pages an allocation gets, so the replay can match the production engine:

    sglang-pd  SGLang's PagedTokenToKVPoolAllocator with need_sort=True (PD prefill/decode nodes):
               a free prepends the request's pages (sorted) to release_pages; an allocation takes from
               the head of free_pages and, when that is too short, first merges release_pages in and sorts
    sglang     the same allocator with need_sort=False (mixed nodes): a free prepends to free_pages
    fifo       nano-vllm's deque: freed pages go to the tail, allocations take from the head
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

FREE = -1          # page_owner of a free page
RESERVED = -2      # page_owner of page 0


class AllocatorError(AssertionError):
    """An allocator invariant does not hold (a bug, or corrupted state)."""


class FreeList(ABC):
    name: str

    @abstractmethod
    def reset(self, num_pages: int) -> None: ...

    @abstractmethod
    def take(self, n: int) -> np.ndarray | None:
        """n free pages, or None when fewer are free (nothing taken then)."""

    @abstractmethod
    def give(self, pages: np.ndarray) -> None:
        """Return one request's pages."""

    @abstractmethod
    def pages(self) -> np.ndarray:
        """Every free page (for integrity checks)."""

    @abstractmethod
    def state(self) -> tuple: ...

    @abstractmethod
    def restore(self, state: tuple) -> None: ...

    def __len__(self) -> int:
        return int(self.pages().size)


class SGLangPDFreeList(FreeList):
    name = "sglang-pd"

    def reset(self, num_pages: int) -> None:
        self.free_pages = np.arange(1, num_pages + 1, dtype=np.int64)
        self.release_pages = np.zeros(0, dtype=np.int64)

    def take(self, n: int) -> np.ndarray | None:
        if n > self.free_pages.size:
            self._merge_and_sort()
        return self._take_head(n)

    def _take_head(self, n: int) -> np.ndarray | None:
        if n > self.free_pages.size:
            return None
        out, self.free_pages = self.free_pages[:n].copy(), self.free_pages[n:]
        return out

    def _merge_and_sort(self) -> None:
        if self.release_pages.size:
            self.free_pages = np.sort(np.concatenate([self.free_pages, self.release_pages]), kind="stable")
            self.release_pages = np.zeros(0, dtype=np.int64)

    def give(self, pages: np.ndarray) -> None:
        self.release_pages = np.concatenate([np.unique(pages), self.release_pages])

    def pages(self) -> np.ndarray:
        return np.concatenate([self.free_pages, self.release_pages])

    def __len__(self) -> int:
        return int(self.free_pages.size + self.release_pages.size)

    def state(self) -> tuple:
        return (self.free_pages.copy(), self.release_pages.copy())

    def restore(self, state: tuple) -> None:
        self.free_pages, self.release_pages = state[0].copy(), state[1].copy()


class SGLangFreeList(SGLangPDFreeList):
    name = "sglang"

    def take(self, n: int) -> np.ndarray | None:
        return self._take_head(n)

    def give(self, pages: np.ndarray) -> None:
        self.free_pages = np.concatenate([np.unique(pages), self.free_pages])


class FifoFreeList(SGLangPDFreeList):
    name = "fifo"

    def take(self, n: int) -> np.ndarray | None:
        return self._take_head(n)

    def give(self, pages: np.ndarray) -> None:
        self.free_pages = np.concatenate([self.free_pages, np.asarray(pages, dtype=np.int64)])


STRATEGIES: dict[str, type[FreeList]] = {c.name: c for c in (SGLangPDFreeList, SGLangFreeList, FifoFreeList)}


def make_free_list(name: str) -> FreeList:
    if name not in STRATEGIES:
        raise ValueError(f"unknown free-list strategy {name!r}; known: {', '.join(sorted(STRATEGIES))}")
    return STRATEGIES[name]()


@dataclass
class AllocatorState:
    free: tuple
    owner: np.ndarray
    epoch: np.ndarray
    next_epoch: int


class PageAllocator:
    """Hands out pages of one pool to owners (request uids) and takes them back."""

    def __init__(self, num_pages: int, page_size: int, strategy: str = "sglang-pd"):
        if num_pages < 1:
            raise ValueError("a pool needs at least one page")
        self.num_pages, self.page_size = num_pages, page_size
        self.free_list = make_free_list(strategy)
        self.free_list.reset(num_pages)
        self.owner = np.full(num_pages + 1, FREE, dtype=np.int64)
        self.owner[0] = RESERVED
        self.epoch = np.zeros(num_pages + 1, dtype=np.int64)     # 0 = never allocated
        self.next_epoch = 1

    @property
    def free_pages_count(self) -> int:
        return len(self.free_list)

    def alloc(self, n: int, owner: int) -> np.ndarray | None:
        """n pages for `owner` (a request uid >= 0), each with a fresh epoch; None when not enough are free."""
        if owner < 0:
            raise ValueError("owner uids are non-negative")
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        pages = self.free_list.take(n)
        if pages is None:
            return None
        if (self.owner[pages] != FREE).any():
            raise AllocatorError(f"free list handed out a page that is in use: {pages[self.owner[pages] != FREE][:5]}")
        self.owner[pages] = owner
        self.epoch[pages] = np.arange(self.next_epoch, self.next_epoch + n, dtype=np.int64)
        self.next_epoch += n
        return pages

    def free(self, pages: np.ndarray, owner: int) -> None:
        pages = np.asarray(pages, dtype=np.int64)
        if pages.size == 0:
            return
        wrong = self.owner[pages] != owner
        if wrong.any():
            p = int(pages[wrong][0])
            raise AllocatorError(f"page {p} freed by {owner} but owned by {int(self.owner[p])} (double free?)")
        if np.unique(pages).size != pages.size:
            raise AllocatorError("a page is freed twice in one call")
        self.owner[pages] = FREE
        self.free_list.give(pages)

    def free_many(self, items: list[tuple[np.ndarray, int]]) -> None:
        """Free several owners' pages as one release, as SGLang's free_group_begin()/free_group_end() does
        (the group's pages go back in one call: unique, ascending)."""
        pages = [np.asarray(p, dtype=np.int64) for p, _ in items]
        for p, (_, owner) in zip(pages, items):
            wrong = self.owner[p] != owner
            if wrong.any():
                raise AllocatorError(f"page {int(p[wrong][0])} freed by {owner} but owned by {int(self.owner[p[wrong][0]])}")
        allp = np.concatenate(pages) if pages else np.zeros(0, dtype=np.int64)
        if allp.size == 0:
            return
        if np.unique(allp).size != allp.size:
            raise AllocatorError("a page is freed twice in one group")
        self.owner[allp] = FREE
        self.free_list.give(allp)

    def pages_of(self, owner: int) -> np.ndarray:
        return np.flatnonzero(self.owner == owner)

    # ------------------------------------------------------------------ state for counterfactual runs
    def state(self) -> AllocatorState:
        return AllocatorState(self.free_list.state(), self.owner.copy(), self.epoch.copy(), self.next_epoch)

    def restore(self, s: AllocatorState) -> None:
        self.free_list.restore(s.free)
        self.owner[:] = s.owner
        self.epoch[:] = s.epoch
        self.next_epoch = s.next_epoch

    # ------------------------------------------------------------------ invariants
    def check_integrity(self, live: dict[int, np.ndarray] | None = None) -> None:
        """Raise AllocatorError unless every invariant holds.

        free + used == total; page 0 reserved and never free; no page both free and owned; no duplicate
        in the free list; every owned page has an epoch, all owned epochs distinct and below next_epoch;
        with `live` (owner -> the pages its page tables reference): each owner's tables hold exactly
        the pages the allocator says it owns, and no page is in two owners' tables.
        """
        free = self.free_list.pages()
        if free.size and (free.min() < 1 or free.max() > self.num_pages):
            raise AllocatorError("free list holds a page id out of range (or the reserved page 0)")
        if np.unique(free).size != free.size:
            raise AllocatorError("free list holds a page twice")
        if self.owner[0] != RESERVED:
            raise AllocatorError("page 0 lost its reserved mark")
        if (self.owner[free] != FREE).any():
            raise AllocatorError("a page is both free and owned")
        used = np.flatnonzero(self.owner[1:] >= 0) + 1
        if free.size + used.size != self.num_pages:
            raise AllocatorError(f"free ({free.size}) + used ({used.size}) != total ({self.num_pages})")
        if (self.owner[1:] < FREE).any():
            raise AllocatorError("a page other than 0 carries the reserved mark")
        ep = self.epoch[used]
        if used.size and ((ep < 1).any() or (ep >= self.next_epoch).any()):
            raise AllocatorError("an owned page has no valid epoch")
        if np.unique(ep).size != ep.size:
            raise AllocatorError("two owned pages share an epoch")
        if live is not None:
            seen = np.zeros(self.num_pages + 1, dtype=bool)
            for owner in sorted(live):
                pages = np.asarray(live[owner], dtype=np.int64)
                if seen[pages].any():
                    raise AllocatorError(f"owner {owner} references a page another live owner references")
                seen[pages] = True
                if not np.array_equal(np.sort(pages), self.pages_of(owner)):
                    raise AllocatorError(f"owner {owner}: page table and allocator disagree")
            if seen.sum() != used.size:
                raise AllocatorError("the allocator holds pages no live page table references (leak)")
