"""The prefill worker: SGLang's intake check, the one-token stub, the bootstrap door, the forward.

    validate_input_length   len >= max_req_input_len: truncate (--allow-auto-truncate) or abort; every build's
                            Req.set_finish_with_abort replaces origin_input_ids with the stub [0]
    the bootstrap door      PrefillBootstrapQueue.add. 0.5.21+ retire an intake-rejected request here
                            (is_unadmitted_reject -> retire_unadmitted_request, 400). Every build then runs
                            _check_if_req_exceed_kv_capacity: len(origin_input_ids) > pool -> 400, AFTER the
                            swap, so the stub (1 token) passes it
    forward                 the (possibly stub) tokens are computed and written to this node's pool; the first
                            output token goes into the transfer metadata. 0.5.20 retires an aborted request
                            right after its forward (_retire_aborted_prefill_result): no transfer, 400
The policy (policy.py) says which of these the replayed build has.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from kvir.replay.config import NodeLimits
from kvir.replay.models import ReplayModel
from kvir.replay.node import KVNode
from kvir.replay.policy import Policy
from kvir.replay.tokens import PLACEHOLDER


@dataclass
class PrefillResult:
    status: int | None          # None: continue to the forward; else the HTTP status the request ends with
    stage: str
    reason: str = ""
    tokens: np.ndarray | None = None     # what the forward computes (the stub: [0])
    pages: np.ndarray | None = None
    first_token: int | None = None
    aborted_at_intake: bool = False       # origin_input_ids were swapped for the stub
    retire_after_forward: bool = False    # 0.5.20: forwarded, then retired without a transfer


def door_capacity_refuses(n_tokens: int, pool_tokens: int) -> bool:
    """PrefillBootstrapQueue._check_if_req_exceed_kv_capacity: `len(req.origin_input_ids) > pool` (every build;
    0.5.23 compares with max_input_len, the pool when the shard size is 1)."""
    return n_tokens > pool_tokens


def input_too_long(prompt_len: int, max_req_input_len: int) -> str:
    """SGLang's message (managers/utils.py validate_input_length), for the outcome's reason."""
    return (f"Input length ({prompt_len} tokens) exceeds the maximum allowed length ({max_req_input_len} tokens). "
            f"Use a shorter input or enable --allow-auto-truncate.")


class PrefillWorker:
    def __init__(self, node: KVNode, model: ReplayModel):
        self.node, self.model = node, model

    def intake(self, prompt: np.ndarray, policy: Policy, limits: NodeLimits | None = None) -> PrefillResult:
        """Validation and the bootstrap door (with the serving prefill node's limits); no pages touched."""
        lim = limits or self.node.limits
        L = int(prompt.size)
        tokens = prompt
        aborted = False
        if L >= lim.max_req_input_len:
            if lim.allow_auto_truncate:
                tokens = prompt[: lim.max_req_input_len]
            else:
                aborted = True
                tokens = np.array([PLACEHOLDER], dtype=np.int64)
                msg = input_too_long(L, lim.max_req_input_len)
                if policy.over_long == "rejected-at-door":
                    return PrefillResult(400, "prefill-door", msg, aborted_at_intake=True)
                if policy.over_long == "rejected-at-bootstrap":
                    return PrefillResult(400, "bootstrap", f"{policy.name}: {msg}", aborted_at_intake=True)
        if door_capacity_refuses(int(tokens.size), lim.pool_tokens):
            return PrefillResult(400, "bootstrap", f"Request exceeds the maximum number of tokens: {tokens.size} > {lim.pool_tokens}",
                                 aborted_at_intake=aborted)
        reason = input_too_long(L, lim.max_req_input_len) if aborted else ""
        return PrefillResult(None, "prefill", reason, tokens=tokens, aborted_at_intake=aborted,
                             retire_after_forward=policy.after_forward(aborted, reason) is not None)

    def forward(self, res: PrefillResult, uid: int, step: int) -> PrefillResult | None:
        """Compute and store the KV of res.tokens; None when the prefill pool has no room (caller waits)."""
        tokens = res.tokens
        assert tokens is not None
        n = int(tokens.size)
        pages = self.node.allocate(-(-n // self.node.page_size), uid, step)
        if pages is None:
            return None
        out = self.model.prefill(torch.as_tensor(tokens, dtype=torch.int64))
        slots = self.node.slots(pages, 0, n)
        self.node.write(slots, out.k, out.v, uid, np.arange(n, dtype=np.int32), tokens.astype(np.int32), step)
        res.pages, res.first_token = pages, out.first_token
        return res

    def release(self, res: PrefillResult, uid: int, step: int) -> None:
        if res.pages is not None:
            self.node.release(res.pages, uid, step, self.model.sentinel(uid) if self.node.fill.mode == "sentinel" else None)
            res.pages = None
