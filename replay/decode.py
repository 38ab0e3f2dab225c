"""The decode worker: pre-allocation for the whole prompt, the transfer checks, decode steps, attribution.

    validate        the decode node's own intake: len >= its max_req_input_len, or len > its pool -> 400
    preallocate     pages for the FULL prompt length, before any KV arrives (DecodePreallocQueue); the
                    request is admitted only when the pages for prompt + completion are free
    receive         after the transfer: a patched decode refuses a short token count (400); checksum
                    mode compares digests (500 on mismatch when enforced)
    decode          for step t = 1.., write the KV of output t-1 at position prompt_len + t - 1, then
                    attend over positions [0, prompt_len + t) through the paged kernel. Positions the
                    transfer never filled are attended all the same: whatever their last writer left.

The attention of a decode step runs over the row's page table, or with `every` > 1 over a sample of its pages
(sample.py: --scale shrinks this numeric part only); the ledger's attribution always covers the whole row.

Row layout of a request on this node (page_size P, prompt length L, n outputs):

    [0, transferred)        written by the transfer (this request's own KV)
    [transferred, L)        pre-allocated, never written by this request: stale (the incident)
    [L, L + n - 1)          decode-written KV of outputs 0 .. n-2
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from kvir.replay.kernels import AttentionOutput, IsolationViolation, OwnerCheck, attention_probs, owned_mask, paged_decode_attention
from kvir.replay.models import ReplayModel
from kvir.replay.node import KVNode
from kvir.replay.page_table import PageTable
from kvir.replay.request import StepRecord
from kvir.replay.sample import head_pages, sampled_table


@dataclass
class DecodeState:
    uid: int
    rid: str
    prompt_len: int
    pages: np.ndarray
    seq_len: int                                   # positions holding (or reserved for) KV
    pages_t: torch.Tensor | None = None
    foreign_reads: int = 0                         # check failures the kernel still read (count mode)
    masked: int = 0                                # check failures the kernel masked
    steps: list[StepRecord] = field(default_factory=list)
    writers: tuple[np.ndarray, np.ndarray] | None = None   # (unique writers, inverse) of the attended prompt range
    attended_prompt: int = 0                       # positions of the prompt range the attention covers


class DecodeWorker:
    def __init__(self, node: KVNode, model: ReplayModel, impl: str = "auto", every: int = 1):
        """every: attend 1 in `every` pages of a row beyond its head (sample.py); 1: the whole row."""
        if every < 1:
            raise ValueError("every must be at least 1")
        self.node, self.model, self.impl, self.every = node, model, impl, every
        self.live: dict[int, DecodeState] = {}

    # ------------------------------------------------------------------ intake
    def validate(self, prompt_len: int) -> tuple[int, str, str] | None:
        lim = self.node.limits
        if prompt_len > lim.pool_tokens:
            return 400, "decode-capacity", f"Request exceeds the maximum number of tokens: {prompt_len} > {lim.pool_tokens}"
        if prompt_len >= lim.max_req_input_len:
            return 400, "decode-validate", (f"Input length ({prompt_len} tokens) exceeds the maximum allowed length "
                                            f"({lim.max_req_input_len} tokens) on the decode node")
        return None

    def pages_needed(self, n_tokens: int) -> int:
        return -(-n_tokens // self.node.page_size)

    def preallocate(self, uid: int, rid: str, prompt_len: int, reserve_tokens: int, step: int) -> DecodeState | None:
        """Pages for the prompt, if pages for `reserve_tokens` (prompt + decode) are free; else None."""
        if self.node.alloc.free_pages_count < self.pages_needed(reserve_tokens):
            return None
        pages = self.node.allocate(self.pages_needed(prompt_len), uid, step)
        assert pages is not None
        st = DecodeState(uid, rid, prompt_len, pages, prompt_len)
        self.live[uid] = st
        return st

    def release(self, st: DecodeState, step: int) -> None:
        sentinel = self.model.sentinel(st.uid) if self.node.fill.mode == "sentinel" else None
        self.node.release(st.pages, st.uid, step, sentinel)
        self.live.pop(st.uid, None)

    # ------------------------------------------------------------------ layout
    def _grow(self, st: DecodeState, n_tokens: int, step: int) -> None:
        need = self.pages_needed(n_tokens) - st.pages.size
        if need > 0:
            new = self.node.allocate(need, st.uid, step)
            if new is None:
                raise RuntimeError(f"{self.node.name}: out of pages while decoding {st.rid} (reservation broken)")
            st.pages = np.concatenate([st.pages, new])
            st.pages_t = None

    def table(self, st: DecodeState) -> PageTable:
        n = self.pages_needed(st.seq_len)
        if st.pages_t is None or st.pages_t.numel() != st.pages.size:
            st.pages_t = torch.as_tensor(st.pages, dtype=torch.int64, device=self.node.pool.device)
        return PageTable(torch.tensor([0, n], device=st.pages_t.device), st.pages_t[:n],
                         torch.tensor([(st.seq_len - 1) % self.node.page_size + 1], device=st.pages_t.device),
                         self.node.page_size)

    def attended(self, st: DecodeState, head: int) -> tuple[PageTable, np.ndarray | None]:
        """The table a decode step attends (sample.py) and the real position of each of its positions
        (None: the row's own table, positions 0..seq_len-1)."""
        if self.every == 1:
            return self.table(st), None
        if st.pages_t is None or st.pages_t.numel() != st.pages.size:
            st.pages_t = torch.as_tensor(st.pages, dtype=torch.int64, device=self.node.pool.device)
        return sampled_table(st.pages_t, st.seq_len, st.prompt_len, self.node.page_size, head, self.every)

    def foreign_in_row(self, st: DecodeState, check: OwnerCheck, mode: str) -> int:
        """Slots of the whole row failing the owner/epoch check (the canary's count when the attention is
        sampled); raise mode raises on the first, as the kernel would."""
        table = self.table(st)
        ok = owned_mask(check, table, 0)
        n_bad = 0 if ok is None else int(ok.numel() - int(ok.sum()))
        if n_bad and mode == "raise":
            pages = torch.unique(table.slots(0)[~ok] // self.node.page_size).tolist()
            raise IsolationViolation(0, st.uid, n_bad, pages)
        return n_bad

    def teacher_force(self, st: DecodeState, tokens_all: np.ndarray, start: int, step: int) -> None:
        """Write the KV of tokens_all[start:] at positions [start, len(tokens_all)) (no kernel call)."""
        end = int(tokens_all.size)
        if end <= start:
            return
        self._grow(st, end, step)
        k, v = self.model.extend_kv(torch.as_tensor(tokens_all, dtype=torch.int64), start)
        self.node.write(self.node.slots(st.pages, start, end - start), k, v, st.uid,
                        np.arange(start, end, dtype=np.int32), tokens_all[start:].astype(np.int32), step)
        st.seq_len = max(st.seq_len, end)

    # ------------------------------------------------------------------ decoding
    def run(self, st: DecodeState, first_token: int, n_steps: int, next_step, *, check_mode: str | None,
            attribution: bool = False) -> list[int]:
        """Decode steps 1..n_steps after the prefill's first token; returns every output token.

        check_mode: None (unpatched kernel), "mask" (patched kernel), "count"/"raise" (canary)."""
        outs = [int(first_token)]
        pool, ledger, dims = self.node.pool, self.node.ledger, self.model.dims
        owners = torch.tensor([st.uid], dtype=torch.int64, device=pool.device)
        check = None if check_mode is None else OwnerCheck(pool.page_owner, pool.page_epoch, pool.slot_stamp, owners, check_mode,
                                                        pool.page_fresh)
        head = head_pages(n_steps, self.node.page_size)
        for t in range(1, n_steps + 1):
            step = next_step()
            pos = st.seq_len
            self._grow(st, pos + 1, step)
            slot = self.node.slots(st.pages, pos, 1)
            st.seq_len = pos + 1
            token_in = outs[-1]
            # stamp and record the write first: the current token is attended by every layer
            pool.touch(slot)                          # journal the page before anything on it changes
            pool.stamp(slot)
            s_np = slot.cpu().numpy()
            ledger.on_write(s_np, st.uid, np.array([pos], dtype=np.int32), np.array([token_in], dtype=np.int32),
                            step, self.node.alloc.epoch)
            table, real = self.attended(st, head)
            row_bad = self.foreign_in_row(st, check, check_mode) if (check is not None and real is not None) else None
            keep = owned_mask(check, table, 0) if (attribution and check_mode == "mask") else None
            layer_p: list[torch.Tensor] = []

            def attend(layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, pq: torch.Tensor | None) -> torch.Tensor:
                kc, vc = pool.layer(layer)
                kc[slot] = k.view(1, dims.n_kv_heads, dims.head_dim).to(kc.device, kc.dtype)
                vc[slot] = v.view(1, dims.n_kv_heads, dims.head_dim).to(vc.device, vc.dtype)
                qb = q.view(1, dims.n_q_heads, dims.head_dim).to(pool.device, dims.dtype)
                pqb = None if pq is None else pq.view(1, dims.n_q_heads, -1).to(pool.device)
                res: AttentionOutput = paged_decode_attention(qb, kc, vc, table, self.model.sm_scale, check=check,
                                                              pos_query=pqb, impl=self.impl)
                if check is not None and layer == 0:
                    n_bad = int(res.foreign[0]) if row_bad is None else row_bad
                    if check_mode == "mask":
                        st.masked = max(st.masked, n_bad)
                    else:
                        st.foreign_reads = max(st.foreign_reads, n_bad)
                if attribution:
                    p = attention_probs(qb, kc, table, 0, self.model.sm_scale, keep=keep, pos_query=pqb)
                    layer_p.append(p.mean(0).cpu())
                return res.out[0].to(q.device)          # back where the model computes

            d = self.model.decode_step(token_in, pos, t, attend)
            outs.append(d.token)
            if attribution:
                st.steps.append(self._record(st, t, d.token, torch.stack(layer_p).mean(0).numpy(), table, real))
        return outs

    def _record(self, st: DecodeState, t: int, token: int, p: np.ndarray, table: PageTable,
                real: np.ndarray | None) -> StepRecord:
        """The step's softmax mass per writer of the attended slots, and its most attended slot."""
        slots = table.slots(0).cpu().numpy()
        if st.writers is None:          # the prompt range's writers do not change while decoding
            st.attended_prompt = st.prompt_len if real is None else int((real < st.prompt_len).sum())
            st.writers = np.unique(self.node.ledger.writer[slots[: st.attended_prompt]], return_inverse=True)
        L = st.attended_prompt
        uniq, inv = st.writers
        m = np.bincount(inv, weights=p[:L], minlength=uniq.size)
        mass = {int(u): float(x) for u, x in zip(uniq.tolist(), m.tolist())}
        mass[st.uid] = mass.get(st.uid, 0.0) + float(p[L:].sum())
        j = int(np.argmax(p))
        slot = int(slots[j])
        return StepRecord(t, token, j if real is None else int(real[j]), int(self.node.ledger.writer[slot]),
                          int(self.node.ledger.token[slot]), mass)


__all__ = ["DecodeState", "DecodeWorker", "IsolationViolation"]
