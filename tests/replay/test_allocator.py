"""Allocator: strategies match SGLang's free-list behaviour; invariants hold and are checked."""
from __future__ import annotations

import numpy as np
import pytest

from kvir.replay.allocator import AllocatorError, PageAllocator


def test_sglang_pd_takes_fresh_pages_first_then_merges_and_sorts():
    a = PageAllocator(8, 16, "sglang-pd")
    x = a.alloc(3, owner=1)                       # [1, 2, 3]
    y = a.alloc(2, owner=2)                       # [4, 5]
    assert x.tolist() == [1, 2, 3] and y.tolist() == [4, 5]
    a.free(np.array([3, 1, 2]), 1)                # released, not yet reusable
    assert a.alloc(3, owner=3).tolist() == [6, 7, 8]      # free_pages still has enough
    # now free_pages is empty: the next allocation merges the released pages and sorts them
    assert a.alloc(2, owner=4).tolist() == [1, 2]
    assert a.alloc(1, owner=4).tolist() == [3]
    assert a.alloc(1, owner=5) is None            # nothing left: nothing taken
    a.check_integrity()


def test_sglang_mixed_reuses_the_latest_freed_pages_first():
    a = PageAllocator(6, 16, "sglang")
    a.alloc(2, 1)
    a.alloc(2, 2)
    a.free(np.array([4, 3]), 2)                   # prepended, sorted: [3, 4, 5, 6]
    assert a.alloc(1, 3).tolist() == [3]


def test_fifo_reuses_the_oldest_freed_page_last():
    a = PageAllocator(4, 16, "fifo")
    a.alloc(2, 1)
    a.free(np.array([2, 1]), 1)                   # appended in order: [3, 4, 2, 1]
    assert a.alloc(4, 2).tolist() == [3, 4, 2, 1]


def test_epochs_increase_on_every_reallocation():
    a = PageAllocator(2, 16, "fifo")
    seen = []
    for owner in range(5):
        p = a.alloc(2, owner)
        seen.append(a.epoch[p].copy())
        a.free(p, owner)
    per_page = np.array(seen)                     # rows: allocations; columns: the two allocated pages
    assert (np.diff(np.sort(per_page, axis=1), axis=0) > 0).all()
    assert len(np.unique(per_page)) == per_page.size          # every tenancy has its own epoch


def test_double_free_and_foreign_free_are_refused():
    a = PageAllocator(4, 16)
    p = a.alloc(2, 1)
    with pytest.raises(AllocatorError, match="owned by"):
        a.free(p, 2)
    a.free(p, 1)
    with pytest.raises(AllocatorError, match="double free"):
        a.free(p, 1)


@pytest.mark.parametrize("corrupt, msg", [
    (lambda a: a.owner.__setitem__(5, 7), "free and owned"),                   # owned page still in the free list
    (lambda a: a.owner.__setitem__(0, -1), "page 0"),
    (lambda a: setattr(a.free_list, "free_pages", np.append(a.free_list.free_pages, 6)), "twice"),
    (lambda a: a.epoch.__setitem__(2, a.epoch[1]), "share an epoch"),
    (lambda a: a.owner.__setitem__(1, -1), "free \\(.*\\) \\+ used"),             # page leaked: neither free nor owned
])
def test_check_integrity_catches_corruption(corrupt, msg):
    a = PageAllocator(8, 16, "sglang-pd")
    a.alloc(2, 1)
    a.check_integrity()
    corrupt(a)
    with pytest.raises(AllocatorError, match=msg):
        a.check_integrity()


def test_check_integrity_against_live_page_tables():
    a = PageAllocator(8, 16)
    p1, p2 = a.alloc(2, 1), a.alloc(1, 2)
    a.check_integrity({1: p1, 2: p2})
    with pytest.raises(AllocatorError, match="another live owner"):
        a.check_integrity({1: p1, 2: np.concatenate([p2, p1[:1]])})
    with pytest.raises(AllocatorError, match="leak"):
        a.check_integrity({1: p1})


def test_state_restore_is_exact():
    a = PageAllocator(8, 16)
    a.alloc(3, 1)
    s = a.state()
    before = (a.owner.copy(), a.epoch.copy(), a.free_list.pages().copy(), a.next_epoch)
    a.free(a.pages_of(1), 1)
    a.alloc(5, 2)
    a.restore(s)
    assert np.array_equal(a.owner, before[0]) and np.array_equal(a.epoch, before[1])
    assert np.array_equal(a.free_list.pages(), before[2]) and a.next_epoch == before[3]
