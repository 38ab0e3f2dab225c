"""The prefill worker: SGLang's intake checks, the placeholder swap, bootstrap admission, the forward.

    validate_input_length   len >= max_req_input_len: truncate (--allow-auto-truncate) or abort; SGLang's
                            set_finish_with_abort replaces origin_input_ids with the placeholder [0]
    bootstrap admission     _check_if_req_exceed_kv_capacity: len(origin_input_ids) > pool -> 400. It runs
                            AFTER the swap, so a rejected request (now 1 token) passes it, unpatched
    forward                 the (possibly placeholder) tokens are computed and written to this node's pool;
                            the first output token goes into the transfer metadata
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
    status: int | None          # None: continue to transfer; else the HTTP status the request ends with
    stage: str
    reason: str = ""
    tokens: np.ndarray | None = None     # what the forward computed (the placeholder: [0])
    pages: np.ndarray | None = None
    first_token: int | None = None
    aborted_at_intake: bool = False       # the placeholder path: origin_input_ids were swapped


def input_too_long(prompt_len: int, max_req_input_len: int) -> str:
    """SGLang's message (managers/utils.py validate_input_length), for the outcome's reason."""
    return (f"Input length ({prompt_len} tokens) exceeds the maximum allowed length ({max_req_input_len} tokens). "
            f"Use a shorter input or enable --allow-auto-truncate.")


class PrefillWorker:
    def __init__(self, node: KVNode, model: ReplayModel):
        self.node, self.model = node, model

    def intake(self, prompt: np.ndarray, policy: Policy, limits: NodeLimits | None = None) -> PrefillResult:
        """Validation and bootstrap admission (with the serving prefill node's limits); no pages touched."""
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
                if policy.reject_before_bootstrap:
                    return PrefillResult(400, "prefill-validate", input_too_long(L, lim.max_req_input_len),
                                         aborted_at_intake=True)
        if policy.bootstrap_checks_input_limit and L >= lim.max_req_input_len and not lim.allow_auto_truncate:
            return PrefillResult(400, "bootstrap", input_too_long(L, lim.max_req_input_len), aborted_at_intake=aborted)
        if tokens.size > lim.pool_tokens:
            return PrefillResult(400, "bootstrap", f"Request exceeds the maximum number of tokens: {tokens.size} > {lim.pool_tokens}",
                                 aborted_at_intake=aborted)
        reason = input_too_long(L, lim.max_req_input_len) if aborted else ""
        return PrefillResult(None, "prefill", reason, tokens=tokens, aborted_at_intake=aborted)

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
