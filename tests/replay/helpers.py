"""Small builders shared by the replay tests."""
from __future__ import annotations

import torch

from kvir.replay.config import NodeLimits, PairConfig
from kvir.replay.pd_pair import PDPair
from kvir.replay.models import RecallModel, ReplayModel
from kvir.replay.page_table import PageTable


def random_table(lens: list[int], page_size: int, pool_pages: int, gen: torch.Generator,
                 share: tuple[int, int] | None = None) -> PageTable:
    """Rows of the given lengths on randomly permuted, non-contiguous pages of a pool of pool_pages pages.
    share=(a, b): row b starts with row a's first page (prefix aliasing across rows)."""
    need = sum(-(-L // page_size) for L in lens)
    assert need <= pool_pages
    perm = torch.randperm(pool_pages, generator=gen)[:need] + 1
    rows, i = [], 0
    for L in lens:
        n = -(-L // page_size)
        rows.append(perm[i:i + n].clone())
        i += n
    if share is not None:
        a, b = share
        if rows[b].numel() > 1:
            rows[b][0] = rows[a][0]
    return PageTable.from_rows(rows, lens, page_size)


def small_engine(prefill_pool: int = 640, decode_pool: int = 1024, context: int = 4096, page: int = 16,
                 model: ReplayModel | None = None, **kw) -> PDPair:
    cfg = PairConfig(prefill=NodeLimits(prefill_pool, context, page), decode=NodeLimits(decode_pool, context, page))
    return PDPair(cfg, model or RecallModel(), **kw)


def expected_tokens(rid: str, start: int, n: int, vocab: int = 1 << 16) -> list[int]:
    """A request's synthetic tokens, recomputed here (independent of kvir.replay.tokens) from the spec:
    blake2b(rid, person=kvir-tok) seeds splitmix64 over seed + i * M1; token = 1 + x mod (vocab - 1)."""
    import hashlib

    M = (1 << 64) - 1
    seed = int.from_bytes(hashlib.blake2b(rid.encode(), digest_size=8, person=b"kvir-tok").digest(), "little")
    out = []
    for i in range(start, start + n):
        z = (seed + i * 0xBF58476D1CE4E5B9 + 0x9E3779B97F4A7C15) & M
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
        z ^= z >> 31
        out.append(1 + z % (vocab - 1))
    return out


__all__ = ["random_table", "small_engine", "expected_tokens", "write", "sglang_finished"]


def write(path, text: str):
    """Write a text file, creating its folder."""
    from pathlib import Path

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def sglang_finished(ts_local: str, rid: str, prompt: int, *, latency: float, room: int | None, completion: int) -> str:
    """One SGLang JSON request-log `request.finished` line (--log-requests-format json)."""
    import json

    obj = {"rid": rid, "stream": True}
    if room is not None:
        obj.update({"bootstrap_host": "10.0.0.1", "bootstrap_port": 8998, "bootstrap_room": room})
    meta = {"id": rid, "finish_reason": {"type": "length", "length": completion}, "prompt_tokens": prompt,
            "completion_tokens": completion, "cached_tokens": 0, "e2e_latency": latency}
    return json.dumps({"timestamp": ts_local, "event": "request.finished", "rid": rid, "obj": obj,
                       "out": {"meta_info": meta}})
