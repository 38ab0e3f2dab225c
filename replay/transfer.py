"""The KV transfer between the prefill and the decode pool, page by page as Mooncake moves it.

SGLang's prefill sends page indices, not tokens (disaggregation/prefill.py send_kv_chunk:
`page_indices = kv_to_page_indices(kv_indices, page_size)`, i.e. `kv_indices[::page_size] // page_size`),
and Mooncake copies `item_len * len(prefill_index)` bytes per contiguous run of pages, where item_len is one
page (mooncake/conn.py set_transfer_blocks; memory_pool.py get_contiguous_buf_infos). So the request's first
ceil(n / P) prefill pages land whole in its first decode pages: for the one-token stub, one page, whose slots
1 .. P-1 carry whatever that prefill page held before (KVNode.receive_pages keeps their real writers). The
metadata carries the prefill's token count and its first output token.

Batches: SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES caps the page indices per all-layer batch (None or 0:
one batch, the default of every build that has it).

Checksum mode mirrors --disaggregation-enable-kv-checksum (0.5.21+, disaggregation/checksum.py): prefill
digests the pages it sends (Adler-32, all layers, K and V), decode re-digests the pages of its own prompt
length; a short transfer therefore mismatches. Faults for tests: `corrupt` flips one value after it lands,
`truncate` drops the last batch but still reports success.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import torch

from kvir.replay.node import KVNode


@dataclass(frozen=True)
class Fault:
    kind: str                 # corrupt | truncate
    token: int = 0            # corrupt: which transferred token's row (layer 0, head 0, dim 0)

    def __post_init__(self) -> None:
        if self.kind not in ("corrupt", "truncate"):
            raise ValueError(f"unknown fault {self.kind!r}")


@dataclass
class TransferResult:
    n_tokens: int             # what the metadata says the prefill computed
    pages: int                # pages sent
    landed_pages: int         # pages whose bytes reached the decode pool
    batches: int
    digest_sent: int | None   # Adler-32 over the sent pages (checksum mode)
    first_token: int
    carried_foreign: int = 0  # slots of the sent pages that another request had written on the prefill node

    @property
    def landed(self) -> int:
        """Token slots that reached decode (whole pages)."""
        return self.landed_pages


def page_digest(node: KVNode, pages: np.ndarray) -> int:
    """Adler-32 of the pages' K and V bytes, all layers (SGLang digests pages, never tokens)."""
    h = 1
    if np.size(pages) == 0:
        return h
    slots = node.pool.slots_of_pages(np.asarray(pages))
    k, v = node.pool.read(slots)
    for t in (k, v):
        t = t.contiguous().cpu()
        h = zlib.adler32((t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes(), h)
    return h


class KVTransfer:
    def __init__(self, batch_cap: int | None = None, checksum: bool = False, fault: Fault | None = None):
        if batch_cap is not None and batch_cap < 0:
            raise ValueError("batch_cap must be a non-negative number of pages (0: one unbounded batch)")
        self.batch_cap, self.checksum, self.fault = batch_cap or None, checksum, fault

    def send(self, src: KVNode, src_pages: np.ndarray, dst: KVNode, dst_pages: np.ndarray, n: int, uid: int,
             first_token: int, step: int) -> TransferResult:
        P = src.page_size
        n_pages = -(-n // P)
        sent = np.asarray(src_pages[:n_pages], dtype=np.int64)
        digest = page_digest(src, sent) if self.checksum else None
        cap = self.batch_cap or max(1, n_pages)
        starts = list(range(0, n_pages, cap))
        if self.fault is not None and self.fault.kind == "truncate" and len(starts) > 1:
            starts = starts[:-1]
        landed, carried = 0, 0
        for b0 in starts:
            b1 = min(n_pages, b0 + cap)
            carried += dst.receive_pages(src, sent[b0:b1], np.asarray(dst_pages[b0:b1]), uid, step)
            landed = b1
        if self.fault is not None and self.fault.kind == "corrupt" and self.fault.token < landed * P:
            s = dst.slots(dst_pages, self.fault.token, 1)
            dst.pool.k[0, s, 0, 0] += 1.0          # the bytes change; the ledger's writer does not
        return TransferResult(n, n_pages, landed, len(starts), digest, first_token, carried)

    def verify(self, dst: KVNode, dst_pages: np.ndarray, res: TransferResult, expected_tokens: int) -> str:
        """The receiver's check: 'ok' or 'mismatch: ...'. Decode digests the pages of its own prompt length
        (ceil(expected_tokens / P)), so a transfer of fewer pages cannot match."""
        P = dst.page_size
        want = -(-expected_tokens // P)
        if res.digest_sent is None:
            return "ok"
        got = page_digest(dst, np.asarray(dst_pages[:want]))
        if want != res.pages:
            return f"mismatch: the sender digested {res.pages} page(s), decode {want} (a {expected_tokens}-token prompt)"
        return "ok" if got == res.digest_sent else "mismatch: digest of the received KV pages differs from the sender's"
