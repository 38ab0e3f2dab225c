"""A prefill/decode pair: one prefill node and one decode node joined by a KV transfer, as a PD-disaggregated
deployment serves. One request goes through tokenizer check, decode pre-allocation, prefill intake and
bootstrap door, forward, page transfer, receive checks and decode steps, under a policy (policy.py: a
build's behaviour, or kvir's proposal). Deterministic.

    pair = PDPair(PairConfig(prefill=NodeLimits(...), decode=NodeLimits(...)), RecallModel())
    out = pair.start(ReplayRequest("req-1", prompt_len=700_000, completion_len=8), policy_for("0.5.19"))
    pair.finish("req-1")               # the decode side frees the request's pages (they keep their bytes)

`start` leaves the decode pages held until `finish` (a node's requests overlap in time). A counterfactual
runs inside `with pair.counterfactual():` and leaves no trace: pools, allocators and ledgers are
restored exactly. Requests rejected at the bootstrap door never reach decode pre-allocation here (0.5.21+
retire them before any handshake; assumed: decode holds no pages for them).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numpy as np
import torch

from kvir.replay.config import PairConfig
from kvir.replay.decode import DecodeState, DecodeWorker
from kvir.replay.kernels import IsolationViolation
from kvir.replay.ledger import Registry
from kvir.replay.models import ReplayModel
from kvir.replay.node import KVNode
from kvir.replay.policy import BUILD_POLICIES, FreedPageFill, Policy
from kvir.replay.prefill import PrefillWorker
from kvir.replay.request import OwnerExposure, Outcome, ReplayRequest
from kvir.replay.tokens import synthetic_tokens
from kvir.replay.transfer import Fault, KVTransfer


LEAKING = BUILD_POLICIES[next(iter(BUILD_POLICIES))]     # the first row: the incident's builds


class PDPair:
    def __init__(self, config: PairConfig, model: ReplayModel, *, device: str | torch.device = "cpu",
                 fill: FreedPageFill = FreedPageFill(), checksum: str = "off", canary: str = "off",
                 fault: Fault | None = None, impl: str = "auto", hash_on_free: bool = False, attention_every: int = 1):
        """checksum: off | log (verify and report) | enforce (a mismatch aborts with 500), on builds that have
        --disaggregation-enable-kv-checksum; canary: off | log (report reads of slots the request did not
        write) | raise (abort with 500), on builds that have --kv-canary. A policy whose builds lack the flag
        runs without it and says so (Outcome.checksum / canary = 'not in this build'). attention_every: decode
        attention over 1 in that many pages of a row beyond its head (kvir.replay.sample; 1: the whole row),
        which changes no page, ledger entry or foreign owner, only the attention arithmetic."""
        if checksum not in ("off", "log", "enforce") or canary not in ("off", "log", "raise"):
            raise ValueError("checksum is off|log|enforce and canary off|log|raise")
        self.config, self.model, self.device = config, model, torch.device(device)
        self.checksum_mode, self.canary_mode = checksum, canary
        self.registry = Registry()
        self.prefill_node = KVNode("prefill", config.prefill, model.dims, self.device, config.free_list, fill, hash_on_free)
        self.decode_node = KVNode("decode", config.decode, model.dims, self.device, config.free_list, fill, hash_on_free)
        self.prefill = PrefillWorker(self.prefill_node, model)
        self.decode = DecodeWorker(self.decode_node, model, impl, attention_every)
        self.transfer = KVTransfer(config.transfer_batch_cap, checksum != "off", fault)
        self.step = 0
        self.check_every_step = False      # tests: check_integrity() before every step
        self.prefill_live: dict[int, np.ndarray] = {}

    def next_step(self) -> int:
        if self.check_every_step:
            self.check_integrity()
        self.step += 1
        return self.step

    # ------------------------------------------------------------------ one request
    def prompt_of(self, req: ReplayRequest) -> np.ndarray:
        if req.prompt is not None:
            return np.asarray(req.prompt, dtype=np.int64)
        return synthetic_tokens(req.rid, 0, req.prompt_len, self.model.vocab)

    def start(self, req: ReplayRequest, policy: Policy | None = None, *, attribution: bool = False,
              before_decode=None) -> Outcome:
        """Run `req` up to its last output; its decode pages stay held until finish(rid).

        An Outcome with http_status None means the decode node had no room yet (the caller retries after
        a finish). `before_decode(pair, state)` runs after the transfer, before the first decode step
        (the causal check swaps an owner's pages for sentinels there). What a build does differently is
        the policy's to say (Policy.after_forward, on_receive, checksum_in_effect, decode_check)."""
        policy = policy or LEAKING
        uid = self.registry.uid(req.rid, req.account)
        out = Outcome(req.rid, policy.name, None, "waiting")
        plim = req.prefill_limits or self.config.prefill
        refused = self._refused_before_prefill(req.prompt_len, plim.context_len)
        if refused:
            out.http_status, out.stage, out.reason = refused
            return out
        prompt = self.prompt_of(req)
        intake = self.prefill.intake(prompt, policy, plim)
        if intake.status is not None:
            # rejected at the door: no sender, no handshake, no decode pages (see module docstring)
            out.http_status, out.stage, out.reason = intake.status, intake.stage, intake.reason
            return out
        step = self.next_step()
        st = self.decode.preallocate(uid, req.rid, req.prompt_len, req.prompt_len + max(0, req.completion_len - 1), step)
        if st is None:
            return out                                    # waiting for decode memory
        if attribution:
            self.decode_node.seal_previous(st.pages)      # what the previous tenants left, hashed
        xfer = self._prefill_and_send(intake, policy, uid, st, out, step)
        if xfer is None:
            return out
        if not self._receive(xfer, policy, st, out, req.prompt_len):
            return out
        if before_decode is not None:
            before_decode(self, st)
        if self._decode(req, prompt, policy, st, xfer.first_token, out, attribution):
            out.http_status, out.stage = 200, "served"
        return out

    def _refused_before_prefill(self, L: int, context_len: int) -> tuple[int, str, str] | None:
        """The tokenizer's and decode's own refusals (every build)."""
        if L >= context_len:
            return 400, "tokenizer", f"The input ({L} tokens) is longer than the model's context length ({context_len} tokens)."
        if L < 1:
            return 400, "tokenizer", "empty prompt"
        return self.decode.validate(L)

    def _prefill_and_send(self, intake, policy: Policy, uid: int, st: DecodeState, out: Outcome, step: int):
        """The forward (in the step decode pre-allocated in), then the transfer of its pages; None when the
        request ends here (no prefill room: out stays waiting; or the build retires it after the forward)."""
        fwd = self.prefill.forward(intake, uid, step)
        if fwd is None:
            self.decode.release(st, step)
            return None
        assert fwd.tokens is not None and fwd.pages is not None and fwd.first_token is not None
        self.prefill_live[uid] = fwd.pages
        out.prefill_tokens, out.reason = int(fwd.tokens.size), fwd.reason
        ends = policy.after_forward(fwd.aborted_at_intake, fwd.reason)
        if ends is not None:                              # 0.5.20: sender aborted, no transfer
            self._release_prefill(fwd, uid)
            out.transferred_tokens = 0
            self._abort(out, st, *ends)
            return None
        xfer = self.transfer.send(self.prefill_node, fwd.pages, self.decode_node, st.pages, int(fwd.tokens.size),
                                  uid, fwd.first_token, self.next_step())
        self._release_prefill(fwd, uid)
        out.transferred_tokens, out.transferred_pages, out.carried_foreign = xfer.n_tokens, xfer.pages, xfer.carried_foreign
        return xfer

    def _release_prefill(self, fwd, uid: int) -> None:
        step = self.next_step()
        self.prefill_live.pop(uid, None)
        self.prefill.release(fwd, uid, step)

    def _receive(self, xfer, policy: Policy, st: DecodeState, out: Outcome, L: int) -> bool:
        """Decode's checks of what arrived: the checksum (builds with the flag) and the policy's own."""
        mode, note = policy.checksum_in_effect(self.checksum_mode)
        verdict = self.transfer.verify(self.decode_node, st.pages, xfer, L) if mode != "off" else None
        out.checksum = note or verdict
        refused = policy.on_receive(xfer.n_tokens, L)
        if refused is not None:
            self._abort(out, st, *refused)
            return False
        if verdict is not None and verdict != "ok" and mode == "enforce":
            self._abort(out, st, 500, "checksum", f"Decode transfer failed for request {out.rid}: {verdict}")
            return False
        return True

    def _decode(self, req: ReplayRequest, prompt: np.ndarray, policy: Policy, st: DecodeState, first_token: int,
                out: Outcome, attribution: bool) -> bool:
        """The decode steps (kernel, then teacher-forced), canary reports and attribution; False: aborted."""
        L = req.prompt_len
        check_mode, note = policy.decode_check(self.canary_mode)
        out.decode_seq_len = L + 1
        try:
            tokens = self.decode.run(st, first_token, req.kernel_steps, self.next_step, check_mode=check_mode,
                                     attribution=attribution)
        except IsolationViolation as e:
            out.canary, out.canary_slots = f"violation: {e}", e.slots
            self._abort(out, st, 500, "canary", str(e))
            return False
        if req.kernel_steps < req.completion_len - 1:
            # the rest of the logged response, teacher-forced from the synthetic response stream
            tail = synthetic_tokens(req.rid, L + req.kernel_steps, req.completion_len - 1 - req.kernel_steps, self.model.vocab)
            seq = np.concatenate([prompt[:L], np.asarray(tokens[:-1], dtype=np.int64), tail])
            self.decode.teacher_force(st, seq, L + req.kernel_steps, self.next_step())
        out.tokens = tokens
        out.foreign_reads = st.foreign_reads
        if note:
            out.canary = note
        elif self.canary_mode != "off" and check_mode in ("count", "raise"):
            out.canary_slots = st.foreign_reads
            out.canary = "clean" if st.foreign_reads == 0 else (
                f"violation: read {st.foreign_reads} slot(s) this request did not write in its tenancy")
        if attribution:
            self._attribute(out, st)
        return True

    def finish(self, rid: str) -> None:
        uid = self.registry.get(rid)
        st = self.decode.live.get(uid) if uid is not None else None
        if st is not None:
            self.decode.release(st, self.next_step())

    def run(self, req: ReplayRequest, policy: Policy | None = None, **kw) -> Outcome:
        """start + finish."""
        out = self.start(req, policy, **kw)
        self.finish(req.rid)
        return out

    def _abort(self, out: Outcome, st: DecodeState, status: int, stage: str, reason: str) -> Outcome:
        out.http_status, out.stage, out.reason = status, stage, reason
        self.decode.release(st, self.next_step())
        return out

    # ------------------------------------------------------------------ attribution
    def _attribute(self, out: Outcome, st: DecodeState) -> None:
        """Per foreign writer of the prompt range: slots, their positions, tenancies, mean attention mass."""
        node = self.decode_node
        L = st.prompt_len
        slots = node.slots(st.pages, 0, L).cpu().numpy()
        writer, pos, _ = node.ledger.attribute(slots)
        stamp = node.ledger.stamp[slots]
        n_steps = max(1, len(st.steps))
        mass: dict[int, float] = {}
        for rec in st.steps:
            for u, m in rec.mass.items():
                mass[u] = mass.get(u, 0.0) + m / n_steps
        order = np.argsort(writer, kind="stable")
        w_sorted = writer[order]
        bounds = np.flatnonzero(np.diff(w_sorted)) + 1
        owners = []
        for grp in np.split(order, bounds):
            u = int(writer[grp[0]])
            if u == st.uid or u < 0:
                continue
            st_g = stamp[grp]
            owners.append(OwnerExposure(u, int(grp.size), int(pos[grp].min()), int(pos[grp].max()),
                                        mass.get(u, 0.0), int(np.unique(st_g[st_g > 0]).size),
                                        int(node.ledger.carried[slots[grp]].sum())))
        owners.sort(key=lambda o: (-o.attention_mass, -o.tokens, o.uid))
        out.owners = owners
        out.steps = st.steps
        out.uninitialised_tokens = int((writer < 0).sum())
        out.uninitialised_mass = mass.get(-1, 0.0)
        out.self_mass = mass.get(st.uid, 0.0)

    # ------------------------------------------------------------------ counterfactuals and invariants
    @contextmanager
    def counterfactual(self) -> Iterator[None]:
        """Everything inside is undone afterwards (pools, allocators, ledgers, registry, live requests)."""
        cps = [(n, n.checkpoint()) for n in (self.prefill_node, self.decode_node)]
        n_reg, step, pre_live = len(self.registry), self.step, dict(self.prefill_live)
        live = dict(self.decode.live)
        live_pages = {u: (s.pages.copy(), s.seq_len) for u, s in live.items()}
        try:
            yield
        finally:
            for n, cp in reversed(cps):
                n.undo(cp)
            self.registry.truncate(n_reg)
            self.step = step
            self.prefill_live = pre_live
            self.decode.live = live
            for u, (p, sl) in live_pages.items():
                live[u].pages, live[u].seq_len, live[u].pages_t = p, sl, None

    def check_integrity(self) -> None:
        self.decode_node.check_integrity({u: s.pages for u, s in self.decode.live.items()})
        self.prefill_node.check_integrity(dict(self.prefill_live))
