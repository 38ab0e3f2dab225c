"""The replay engine as a serving backend: one PDPair (prefill pool, decode pool, KV transfer) that keeps
its pools across requests, so freed pages keep their last writer's KV as in SGLang, run by ONE worker
thread: requests queue and run one at a time, so the engine needs no locking of its own.

Model: the recall model (kvir.replay.models.RecallModel): output token t is the token held in the
request's logical KV slot t. A normal request therefore echoes its own prompt, and a request that decodes
over pages nobody wrote for it returns, in order, the tokens of whoever wrote them last: a leaking policy
visibly returns another tenant's text. The ledger (attribution) says whose slots each response read;
serve keeps that per request (ids, tenants and counts, never text).

What the engine serves beyond that is the registered mechanisms' (kvir.serve.plugin: each mechanism's
target mode): the replay policy requests are admitted under, what happens to a request once answered (a
cache it fills, say), and what the usage, /get_server_info and the request's record add.

One request never holds the engine thread for long: its output is capped at `max_tokens_cap` tokens (a
larger max_tokens is served up to the cap, finish_reason "length"), as it already is at what the context
leaves.
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import threading
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from kvir.serve.config import ServeConfig
from kvir.serve.plugin import Served, Targets
from kvir.serve.tokenizer import PLACEHOLDER

log = logging.getLogger("kvir.serve")


@dataclass
class Generation:
    """What one request got: status, tokens, counts, whose KV it read (tenant -> slots), and the fields the
    mechanisms' targets add to its record."""

    rid: str
    tenant: str
    http_status: int
    stage: str
    message: str = ""
    tokens: list[int] = field(default_factory=list)
    prompt_tokens: int = 0            # the prompt's length (what decode counts)
    prefill_tokens: int | None = None  # what the prefill side computed (1 for the stub)
    read_from: dict[str, int] = field(default_factory=dict)   # other tenants whose slots it decoded over
    uninitialised: int = 0            # slots nobody ever wrote
    extra: dict[str, Any] = field(default_factory=dict)      # the targets' record fields (ServeTarget.served)

    def as_record(self) -> dict:
        """The ledger record: ids, tenants, counts; never the tokens."""
        return {"rid": self.rid, "tenant": self.tenant, "http_status": self.http_status, "stage": self.stage,
                "prompt_tokens": self.prompt_tokens, "prefill_tokens": self.prefill_tokens,
                "completion_tokens": len(self.tokens), "read_from": dict(self.read_from),
                "uninitialised": self.uninitialised, **self.extra}


class ServeEngine:
    def __init__(self, cfg: ServeConfig):
        cfg.check()
        from kvir.replay.config import NodeLimits, PairConfig
        from kvir.replay.pd_pair import PDPair
        from kvir.replay.models import RecallModel

        self.cfg = cfg
        self.targets = Targets.of(cfg)
        self.policy = self.targets.policy()
        ecfg = PairConfig(prefill=NodeLimits(cfg.pool, cfg.context, cfg.page_size, source="kvir serve --pool"),
                            decode=NodeLimits(cfg.decode_tokens, cfg.context, cfg.page_size, source="kvir serve"),
                            free_list=cfg.free_list)
        self.engine = PDPair(ecfg, RecallModel())
        self.vocab = self.engine.model.vocab
        self.max_req_input_len = ecfg.prefill.max_req_input_len
        self.records: deque[dict] = deque(maxlen=100_000)
        self._worker = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvir-serve-engine")
        self._count_lock = threading.Lock()
        self.served = 0

    def close(self) -> None:
        self._worker.shutdown(wait=True, cancel_futures=True)

    def submit(self, tenant: str, tokens: list[int], max_tokens: int, rid: str | None = None,
               salt: str | None = None) -> cf.Future:
        """Queue one request on the engine thread; the future's result is a Generation."""
        return self._worker.submit(self._generate, rid or uuid.uuid4().hex, tenant, tokens, max_tokens, salt)

    def _generate(self, rid: str, tenant: str, tokens: list[int], max_tokens: int, salt: str | None = None) -> Generation:
        import numpy as np

        from kvir.replay.request import ReplayRequest

        L, C = len(tokens), self.cfg.context
        # Like SGLang, the output budget is clamped to what the context leaves (at least one token), and
        # to the per-request cap.
        n = max(1, min(int(max_tokens), C - L, self.cfg.max_tokens_cap)) if L < C else 1
        req = ReplayRequest(rid, L, n, account=tenant, prompt=np.asarray(tokens, dtype=np.int64))
        e = self.engine
        out = e.start(req, self.policy, attribution=self.cfg.attribution)
        e.finish(rid)
        if out.http_status is None:            # the decode pool cannot hold it even empty
            g = Generation(rid, tenant, 503, "decode-capacity", "The decode KV pool cannot hold this request.",
                           prompt_tokens=L)
        else:
            g = Generation(rid, tenant, out.http_status, out.stage, out.reason if out.http_status != 200 else "",
                           tokens=[int(t) for t in out.tokens], prompt_tokens=L, prefill_tokens=out.prefill_tokens)
        if out.owners:
            for o in out.owners:
                who = e.registry.account(o.uid) or f"uid-{o.uid}"
                if who != tenant:
                    g.read_from[who] = g.read_from.get(who, 0) + o.tokens
        g.uninitialised = out.uninitialised_tokens
        g.extra = self.targets.served(Served(rid, tenant, tokens, salt, g.http_status, g.prefill_tokens))
        with self._count_lock:
            self.served += 1
        rec = g.as_record()
        self.records.append(rec)
        log.info("request %s tenant=%s status=%d stage=%s prompt_tokens=%d prefill_tokens=%s completion_tokens=%d "
                 "read_from=%s uninitialised=%d%s", rid, tenant, g.http_status, g.stage, L, g.prefill_tokens,
                 len(g.tokens), rec["read_from"] or "-", g.uninitialised, self.targets.log(g.extra))
        return g

    def reported_prompt_tokens(self, g: Generation) -> int:
        if self.cfg.usage_from == "prefill" and g.prefill_tokens is not None:
            return g.prefill_tokens
        return g.prompt_tokens

    def usage(self, g: Generation) -> dict:
        """What the targets add to the response's usage (prompt_tokens_details, say)."""
        return self.targets.usage(g.extra)

    def server_info(self) -> dict:
        """An SGLang-shaped /get_server_info of the prefill node (server args, scheduler info, version),
        plus what kvir serve is (`kvir_serve`); the mechanisms' targets add theirs."""
        c = self.cfg
        return {
            "model_path": c.model, "served_model_name": c.model, "context_length": c.context,
            "page_size": c.page_size, "disaggregation_mode": "prefill", "disaggregation_transfer_backend": "mooncake",
            "allow_auto_truncate": False, "disaggregation_enable_kv_checksum": False, "kv_canary": "none",
            "max_total_num_tokens": c.pool, "max_req_input_len": self.max_req_input_len,
            "internal_states": [{"max_total_num_tokens": c.pool}],
            "version": "kvir.replay",
            **self.targets.server_info(),
            "kvir_serve": {**self.targets.describe(), "decode_pool": c.decode_tokens, "free_list": c.free_list,
                           "model": "recall", "placeholder_token": PLACEHOLDER, "max_tokens_cap": c.max_tokens_cap},
        }
