"""The KV transfer between the prefill and the decode pool (Mooncake's role), with checksums.

Rows of the first `n` logical tokens are copied from the prefill request's slots to the decode request's
slots, in ordered batches of at most `batch_cap` pages (SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES; None
is one unbounded batch). The metadata carries the token count and the first output token.

Checksum mode mirrors --disaggregation-enable-kv-checksum: the sender digests the rows it hands off
(BLAKE2b over the token count and the K/V bytes, all layers), the receiver re-digests what landed. A
fault can be injected to test that: `corrupt` flips one value after it lands, `truncate` drops the last
batch but still reports success (the token count then tells).
"""
from __future__ import annotations

import hashlib
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
    n_tokens: int             # what the metadata says was sent
    landed: int               # tokens whose rows actually reached the decode pool
    batches: int
    digest_sent: bytes | None
    first_token: int


def digest(node: KVNode, slots: torch.Tensor, n_tokens: int) -> bytes:
    h = hashlib.blake2b(digest_size=16, person=b"kvir-xfer")
    h.update(int(n_tokens).to_bytes(8, "little"))
    k, v = node.pool.read(slots)
    for t in (k, v):
        t = t.contiguous().cpu()
        h.update((t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes())
    return h.digest()


class KVTransfer:
    def __init__(self, batch_cap: int | None = None, checksum: bool = False, fault: Fault | None = None):
        if batch_cap is not None and batch_cap < 1:
            raise ValueError("batch_cap must be a positive number of pages")
        self.batch_cap, self.checksum, self.fault = batch_cap, checksum, fault

    def send(self, src: KVNode, src_pages: np.ndarray, dst: KVNode, dst_pages: np.ndarray, n: int, uid: int,
             tokens: np.ndarray, first_token: int, step: int) -> TransferResult:
        P = src.page_size
        src_slots = src.slots(src_pages, 0, n)
        sent = digest(src, src_slots, n) if self.checksum else None
        n_pages = -(-n // P)
        cap = self.batch_cap or max(1, n_pages)
        starts = list(range(0, n_pages, cap))
        if self.fault is not None and self.fault.kind == "truncate" and len(starts) > 1:
            starts = starts[:-1]
        landed = 0
        for b0 in starts:
            t0, t1 = b0 * P, min(n, (b0 + cap) * P)
            k, v = src.pool.read(src_slots[t0:t1])
            dst.write(dst.slots(dst_pages, t0, t1 - t0), k, v, uid, np.arange(t0, t1, dtype=np.int32),
                      tokens[t0:t1].astype(np.int32), step)
            landed = t1
        if self.fault is not None and self.fault.kind == "corrupt" and self.fault.token < landed:
            s = dst.slots(dst_pages, self.fault.token, 1)
            dst.pool.k[0, s, 0, 0] += 1.0          # the bytes change; the ledger's writer does not
        return TransferResult(n, landed, len(starts), sent, first_token)

    def verify(self, dst: KVNode, dst_pages: np.ndarray, res: TransferResult, expected_tokens: int) -> str:
        """The receiver's check: 'ok' or 'mismatch: ...' (token count first, then the digest)."""
        if res.n_tokens != expected_tokens:
            return f"mismatch: received {res.n_tokens} token(s), expected {expected_tokens}"
        if res.digest_sent is None:
            return "ok"
        got = digest(dst, dst.slots(dst_pages, 0, res.n_tokens), res.n_tokens)
        return "ok" if got == res.digest_sent else "mismatch: digest of the received KV differs from the sender's"
