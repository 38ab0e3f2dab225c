"""The Triton kernel against the float64 reference: on CPU under TRITON_INTERPRET=1 (set in conftest when
no GPU is present), on the GPU when there is one. Small shapes: the interpreter runs Python per block."""
from __future__ import annotations

import math

import pytest
import torch

triton = pytest.importorskip("triton", reason="triton is not installed: pip install 'kvir[triton]' to run these")

from kvir.replay.kernels import IsolationViolation, OwnerCheck, paged_decode_attention  # noqa: E402

from .helpers import random_table  # noqa: E402
from .reference import dense_reference, dense_same_dtype, error_ratio_ok  # noqa: E402
from .test_kernels import _owned_scenario  # noqa: E402

DEV = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.mark.parametrize("page, group, dtype, fudge", [
    (1, 1, torch.float32, 10.0),
    (16, 4, torch.float32, 10.0),
    (64, 8, torch.bfloat16, 1.1),
])
def test_triton_paged_equals_dense(page, group, dtype, fudge):
    g = torch.Generator().manual_seed(page + group)
    lens = sorted({L for L in (1, page - 1, page, page + 1, 2 * page + 3) if L >= 1})
    need = sum(-(-L // page) for L in lens)
    table = random_table(lens, page, need + 5, g)
    slots = (need + 6) * page
    k = torch.randn(slots, 2, 16, generator=g).to(dtype)
    v = torch.randn(slots, 2, 16, generator=g).to(dtype)
    q = torch.randn(len(lens), 2 * group, 16, generator=g).to(dtype)
    scale = 1 / math.sqrt(16)
    golden = dense_reference(q, k, v, table, scale)
    out = paged_decode_attention(q.to(DEV), k.to(DEV), v.to(DEV), table.to(DEV), scale, impl="triton").out.cpu()
    ok, e_test, e_base = error_ratio_ok(out, dense_same_dtype(q, k, v, table, scale), golden, fudge)
    assert ok, (e_test, e_base)


def test_triton_positional_term_and_check_modes():
    q, k, v, table, check = _owned_scenario()
    pq = torch.randn(2, 8, 24)
    ref = paged_decode_attention(q, k, v, table, 0.2, check=check, pos_query=pq, impl="torch")
    tri = paged_decode_attention(q, k, v, table, 0.2, check=check, pos_query=pq, impl="triton")
    torch.testing.assert_close(tri.out, ref.out, rtol=1e-5, atol=1e-5)
    assert tri.foreign.tolist() == [15, 0]
    count = OwnerCheck(check.page_owner, check.page_epoch, check.slot_stamp, check.owners, "count")
    assert paged_decode_attention(q, k, v, table, 0.2, check=count, impl="triton").foreign.tolist() == [15, 0]
    loud = OwnerCheck(check.page_owner, check.page_epoch, check.slot_stamp, check.owners, "raise")
    with pytest.raises(IsolationViolation):
        paged_decode_attention(q, k, v, table, 0.2, check=loud, impl="triton")
