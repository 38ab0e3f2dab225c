"""CSR page tables: construction, slot mapping and the host-side validity checks."""
from __future__ import annotations

import pytest
import torch

from kvir.replay.page_table import PageTable


def test_csr_fields_and_slot_mapping():
    t = PageTable.from_rows([[5, 2], [7], [3, 9, 4]], [20, 16, 33], page_size=16)
    assert t.indptr.tolist() == [0, 2, 3, 6]
    assert t.indices.tolist() == [5, 2, 7, 3, 9, 4]
    assert t.last_page_len.tolist() == [4, 16, 1]          # 20 = 16 + 4; 16 = one full page; 33 = 2*16 + 1
    assert t.seq_lens().tolist() == [20, 16, 33]
    # logical token j of row 0: page [5, 2][j // 16], offset j % 16
    assert t.slots(0).tolist() == list(range(80, 96)) + list(range(32, 36))
    assert t.slots(2).tolist()[-1] == 4 * 16


def test_page_size_one():
    t = PageTable.from_rows([[3, 1, 2]], [3], page_size=1)
    assert t.slots(0).tolist() == [3, 1, 2] and t.last_page_len.tolist() == [1]


@pytest.mark.parametrize("rows, lens, err", [
    ([[1, 2]], [40], "needs 3 pages"),            # too few pages for the length
    ([[1, 2, 3]], [20], "needs 2 pages"),         # a page beyond the sequence
    ([[1]], [0], "needs 0 pages"),
])
def test_from_rows_rejects_inconsistent_rows(rows, lens, err):
    with pytest.raises(ValueError, match=err):
        PageTable.from_rows(rows, lens, page_size=16)


def test_validate_catches_each_broken_invariant():
    good = PageTable.from_rows([[1, 2], [2, 3]], [20, 17], page_size=16)
    good.validate(num_pages=3)                                   # a page shared by two rows is allowed
    with pytest.raises(ValueError, match="two rows"):
        good.validate(num_pages=3, allow_shared=False)
    with pytest.raises(ValueError, match="reserved"):
        PageTable.from_rows([[0]], [3], 16).validate(num_pages=4)
    with pytest.raises(ValueError, match=r"in \[1, 2\]"):
        PageTable.from_rows([[3]], [3], 16).validate(num_pages=2)
    with pytest.raises(ValueError, match="twice"):
        PageTable.from_rows([[1, 1]], [20], 16).validate(num_pages=4)
    bad_len = PageTable(torch.tensor([0, 1]), torch.tensor([1]), torch.tensor([17]), 16)
    with pytest.raises(ValueError, match="last_page_len"):
        bad_len.validate(num_pages=4)
    bad_ptr = PageTable(torch.tensor([0, 2]), torch.tensor([1]), torch.tensor([3]), 16)
    with pytest.raises(ValueError, match="indptr"):
        bad_ptr.validate(num_pages=4)
