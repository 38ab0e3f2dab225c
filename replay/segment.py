"""One decode node's segment (between restarts) replayed: its logged requests in arrival order through one
engine, every affected request among them replayed under its production build and the builds compared.

The production build of a request is the build its prefill node ran (node_configs.build, from the audit's
kvir.rules.builds inference); when the logs do not decide it, the leaking builds' policy is assumed and
the row says so. Every request of the segment runs under that production policy, so the pages later
requests find are the ones production left.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable

import pandas as pd
import torch

from kvir.replay.attribution import TargetResult, can_admit, replay_target
from kvir.replay.config import EngineConfig, NodeLimits
from kvir.replay.engine import PDEngine
from kvir.replay.history import LimitsSource, Segment, scale_length, scale_limits, thresholds
from kvir.replay.models import RecallModel
from kvir.replay.policy import POLICIES, Policy, policy_for
from kvir.replay.request import ReplayRequest

FREE_LIST = "sglang-pd"


@dataclass
class Row:
    """One affected response and what its replay found."""

    target: pd.Series
    reason: str = ""
    result: TargetResult | None = None
    engine: PDEngine | None = None
    history: int = 0
    replayed_prompt: int | None = None
    limits_source: str = ""
    production: Policy | None = None
    build_source: str = ""
    build_assumed: bool = True          # False only when the start-up evidence names the build
    notes: list[str] = field(default_factory=list)


@dataclass
class Settings:
    scale: float
    device: torch.device
    checksum: bool
    canary: bool
    max_steps: int
    causal_top: int
    compared: list[Policy]               # the builds asked for besides each request's production build


def production_policy(limits: LimitsSource, prefill_node: str | None, ts: int) -> tuple[Policy, str, bool]:
    """(policy, where it came from, assumed) for the build a request's prefill node ran."""
    name, why = limits.build_at(prefill_node, ts)
    if name is None:
        p = policy_for("leaking")
        return p, f"{why}: assumed {p.name} (the incident's builds, {p.builds})", True
    return POLICIES[name], why, False


def replay_segment(seg: Segment, rows: dict[str, Row], limits: LimitsSource, model: RecallModel, cfg: Settings,
                   skipped: dict[str, int], advance: Callable[[], None]) -> None:
    f = cfg.scale
    dec_o = seg.limits
    dec = scale_limits(dec_o, f)
    reqs: dict[str, ReplayRequest] = {}
    policies: dict[str, Policy] = {}
    pre_max = None
    for lr in seg.requests:
        pre_o = limits.at(lr.prefill_node, "prefill", lr.ts)
        pre = scale_limits(NodeLimits(pre_o.pool_tokens, pre_o.context_len, dec_o.page_size, source=pre_o.source), f)
        L = scale_length(lr.prompt_tokens, thresholds(pre_o, dec_o), thresholds(pre, dec), f)
        if lr.completion_tokens < 0:      # a target without a logged response length: the usual steps
            c = cfg.max_steps + 1
            if lr.request_id in rows:
                rows[lr.request_id].notes.append(f"its response length is not in the logs: {cfg.max_steps} decode "
                                                  f"steps were replayed")
        else:
            c = lr.completion_tokens if f == 1.0 or lr.completion_tokens == 0 else max(1, int(round(lr.completion_tokens * f)))
        if lr.is_target and lr.completion_tokens >= 0:   # scaling shrinks the KV footprint, not the steps
            c = max(c, min(lr.completion_tokens, cfg.max_steps + 1))
        reqs[lr.request_id] = ReplayRequest(lr.request_id, L, c, lr.account_id,
                                            decode_steps=cfg.max_steps if lr.is_target else 0, prefill_limits=pre)
        prod, why, assumed = production_policy(limits, lr.prefill_node, lr.ts)
        policies[lr.request_id] = prod
        if pre_max is None or pre.pool_tokens > pre_max.pool_tokens:
            pre_max = pre
        if lr.is_target and lr.request_id in rows:
            row = rows[lr.request_id]
            row.replayed_prompt = L
            row.limits_source = f"decode {dec_o.source or 'assumed'}; prefill {pre_o.source or 'assumed'}"
            row.production, row.build_source, row.build_assumed = prod, why, assumed
            if assumed:
                row.notes.append(why)
    assert pre_max is not None
    # the prefill pool only ever holds one request (it is freed after each transfer): context-sized storage
    ctx_pages = -(-max(r.prefill_limits.context_len for r in reqs.values()) // dec.page_size)
    storage = NodeLimits(max(dec.page_size, min(pre_max.pool_tokens, ctx_pages * dec.page_size)), pre_max.context_len,
                         dec.page_size)
    engine = PDEngine(EngineConfig(prefill=storage, decode=dec, free_list=FREE_LIST), model, device=cfg.device,
                      checksum="log" if cfg.checksum else "off", canary="log" if cfg.canary else "off")
    pending: deque[str] = deque()
    target_ids = {lr.request_id for lr in seg.requests if lr.is_target}
    served_before = 0
    notes = [f"{n} of this node's logged requests left out: {k}" for k, n in sorted(skipped.items())]

    def admit(rid: str) -> bool:
        nonlocal served_before
        req = reqs[rid]
        if not can_admit(engine, req):
            return False
        row = rows.get(rid)
        if row is not None and rid in target_ids:
            row.history = served_before
            row.notes = notes + row.notes
            row.engine = engine
            if served_before == 0:
                row.reason = (f"no earlier request on decode node {seg.node} in the logs: what its pages held "
                              f"is unknown")
                engine.start(req, policies[rid])       # it still occupies pages for later targets
            else:
                row.result = replay_target(engine, req, policies[rid], cfg.compared, causal_top=cfg.causal_top)
            advance()
        else:
            out = engine.start(req, policies[rid])
            if out.http_status is None:
                return False
        served_before += 1
        return True

    for _, kind, rid in seg.events():
        if kind in (0, 2):
            if rid in pending:                         # its logged end came before the model had room for it
                pending.remove(rid)
                if rid in target_ids and rid in rows and rows[rid].result is None:
                    rows[rid].reason = f"the modelled decode node {seg.node} had no room for it before its logged end"
                continue
            engine.finish(rid)
            while pending and admit(pending[0]):
                pending.popleft()
        elif pending or not admit(rid):
            pending.append(rid)
    for rid in pending:
        row = rows.get(rid)
        if row is not None and row.result is None and not row.reason:
            row.reason = f"the modelled decode node {seg.node} never had room for it"


__all__ = ["Row", "Settings", "production_policy", "replay_segment", "FREE_LIST"]
