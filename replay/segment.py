"""One decode node's segment (between restarts) replayed: its logged requests in arrival order through one
prefill/decode pair, every affected request among them replayed under its production build and the builds
compared.

The production build of a request is the build its prefill node ran; which one that is, and what is assumed
when the logs do not decide it, is the caller's (Settings.production: the mechanism's replay part reads it
from the audit's node_configs). Every request of the segment runs under its production policy, so the pages
later requests find are the ones production left.

Placement is never scaled: every request runs at its logged lengths on the nodes' own pools (their page size,
their rounding to whole pages, SGLang's free list), because whose pages a response reads depends on all of them
(a scaled pool rounds each request up to whole pages of the unscaled size, and the free list then hands out
other pages). Settings.scale shrinks only the numeric part: the decode attention over a sample of each row's
pages (kvir.replay.sample).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable

import pandas as pd
import torch

from kvir.replay.attribution import TargetResult, can_admit, replay_target
from kvir.replay.config import NodeLimits, PairConfig
from kvir.replay.history import LimitsSource, LoggedRequest, Segment
from kvir.replay.ledger import Registry
from kvir.replay.models import RecallModel
from kvir.replay.pd_pair import PDPair
from kvir.replay.policy import Policy
from kvir.replay.request import ReplayRequest
from kvir.replay.sample import every_for

FREE_LIST = "sglang-pd"

# (prefill node, ts in ns) -> (the policy of the build it ran, where that came from, whether it is assumed)
ProductionBuild = Callable[[str | None, int], tuple[Policy, str, bool]]


@dataclass
class Row:
    """One affected response and what its replay found."""

    target: pd.Series
    reason: str = ""
    result: TargetResult | None = None
    registry: Registry | None = None    # the segment's request uids (its pair's pools are freed after it)
    history: int = 0
    replayed_prompt: int | None = None
    limits_source: str = ""
    production: Policy | None = None
    build_source: str = ""
    build_assumed: bool = True          # False only when the start-up evidence names the build
    notes: list[str] = field(default_factory=list)


@dataclass
class Settings:
    scale: float                         # the numeric part's (decode attention over 1 in 1/scale pages), never placement
    device: torch.device
    checksum: bool
    canary: bool
    max_steps: int
    causal_top: int
    compared: list[Policy]               # the builds asked for besides each request's production build
    production: ProductionBuild          # the build a request's prefill node ran
    assumed: Policy                      # the build of a response whose production build was never determined
    first_fixed: str                     # the policy of the first fixed build (replay_results.first_fixed)


def replay_segment(seg: Segment, rows: dict[str, Row], limits: LimitsSource, model: RecallModel, cfg: Settings,
                   skipped: dict[str, int], advance: Callable[[], None]) -> None:
    reqs, policies, pre_max = _plan(seg, rows, limits, cfg)
    pair = _pair_for(seg, reqs, pre_max, cfg, model)
    _SegmentRun(seg, rows, reqs, policies, pair, cfg, skipped, advance).run()


def _plan(seg: Segment, rows: dict[str, Row], limits: LimitsSource,
          cfg: Settings) -> tuple[dict[str, ReplayRequest], dict[str, Policy], NodeLimits]:
    """Each logged request as the pair runs it (its logged lengths, the limits of its prefill node) and its
    production policy, and the largest prefill pool among them; the affected ones' rows say what was replayed
    and under which build."""
    dec = seg.limits
    reqs: dict[str, ReplayRequest] = {}
    policies: dict[str, Policy] = {}
    pre_max: NodeLimits | None = None
    for lr in seg.requests:
        pre_o = limits.at(lr.prefill_node, "prefill", lr.ts)
        pre = NodeLimits(pre_o.pool_tokens, pre_o.context_len, dec.page_size, source=pre_o.source)
        reqs[lr.request_id] = ReplayRequest(lr.request_id, lr.prompt_tokens, _completion(lr, rows, cfg), lr.account_id,
                                            decode_steps=cfg.max_steps if lr.is_target else 0, prefill_limits=pre)
        prod, why, assumed = cfg.production(lr.prefill_node, lr.ts)
        policies[lr.request_id] = prod
        if pre_max is None or pre.pool_tokens > pre_max.pool_tokens:
            pre_max = pre
        if lr.is_target and lr.request_id in rows:
            row = rows[lr.request_id]
            row.replayed_prompt = lr.prompt_tokens
            row.limits_source = f"decode {dec.source or 'assumed'}; prefill {pre_o.source or 'assumed'}"
            row.production, row.build_source, row.build_assumed = prod, why, assumed
            if assumed:
                row.notes.append(why)
    assert pre_max is not None                # a segment holds at least one request
    return reqs, policies, pre_max


def _completion(lr: LoggedRequest, rows: dict[str, Row], cfg: Settings) -> int:
    """The response length replayed: the logged one; a target without one decodes its usual steps."""
    if lr.completion_tokens < 0:
        if lr.request_id in rows:
            rows[lr.request_id].notes.append(f"its response length is not in the logs: {cfg.max_steps} decode "
                                              f"steps were replayed")
        return cfg.max_steps + 1
    return lr.completion_tokens


def _pair_for(seg: Segment, reqs: dict[str, ReplayRequest], pre_max: NodeLimits, cfg: Settings,
              model: RecallModel) -> PDPair:
    dec = seg.limits
    # the prefill pool only ever holds one request (it is freed after each transfer): context-sized storage
    ctx_pages = -(-max(r.prefill_limits.context_len for r in reqs.values()) // dec.page_size)
    storage = NodeLimits(max(dec.page_size, min(pre_max.pool_tokens, ctx_pages * dec.page_size)), pre_max.context_len,
                         dec.page_size)
    return PDPair(PairConfig(prefill=storage, decode=dec, free_list=FREE_LIST), model, device=cfg.device,
                  checksum="log" if cfg.checksum else "off", canary="log" if cfg.canary else "off",
                  attention_every=every_for(cfg.scale))


class _SegmentRun:
    """The segment's arrivals and releases in time order: a request waits (in arrival order) until the pair
    has room for it; each affected one is replayed under every build when it is admitted."""

    def __init__(self, seg: Segment, rows: dict[str, Row], reqs: dict[str, ReplayRequest],
                 policies: dict[str, Policy], pair: PDPair, cfg: Settings, skipped: dict[str, int],
                 advance: Callable[[], None]):
        self.seg, self.rows, self.reqs, self.policies, self.pair, self.cfg = seg, rows, reqs, policies, pair, cfg
        self.advance = advance
        self.targets = {lr.request_id for lr in seg.requests if lr.is_target}
        self.served_before = 0
        self.notes = [f"{n} of this node's logged requests left out: {k}" for k, n in sorted(skipped.items())]

    def run(self) -> None:
        pending: deque[str] = deque()
        for _, kind, rid in self.seg.events():
            if kind in (0, 2):
                if rid in pending:                         # its logged end came before the model had room for it
                    pending.remove(rid)
                    row = self.rows.get(rid)
                    if rid in self.targets and row is not None and row.result is None:
                        row.reason = f"the modelled decode node {self.seg.node} had no room for it before its logged end"
                    continue
                self.pair.finish(rid)
                while pending and self.admit(pending[0]):
                    pending.popleft()
            elif pending or not self.admit(rid):
                pending.append(rid)
        for rid in pending:
            row = self.rows.get(rid)
            if row is not None and row.result is None and not row.reason:
                row.reason = f"the modelled decode node {self.seg.node} never had room for it"

    def admit(self, rid: str) -> bool:
        req = self.reqs[rid]
        if not can_admit(self.pair, req):
            return False
        row = self.rows.get(rid)
        if row is not None and rid in self.targets:
            row.history = self.served_before
            row.notes = self.notes + row.notes
            row.registry = self.pair.registry
            if self.served_before == 0:
                row.reason = (f"no earlier request on decode node {self.seg.node} in the logs: what its pages held "
                              f"is unknown")
                self.pair.start(req, self.policies[rid])       # it still occupies pages for later targets
            else:
                row.result = replay_target(self.pair, req, self.policies[rid], self.cfg.compared,
                                           causal_top=self.cfg.causal_top)
            self.advance()
        elif self.pair.start(req, self.policies[rid]).http_status is None:
            return False
        self.served_before += 1
        return True


__all__ = ["Row", "Settings", "ProductionBuild", "replay_segment", "FREE_LIST"]
