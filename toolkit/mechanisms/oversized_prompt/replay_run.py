"""The oversized-prompt replay: every affected response re-run on the paged-KV prefill/decode path
(kvir.replay.pd_pair) of the SGLang builds asked for, over a model of its decode node's history
(kvir.replay.history, kvir.replay.segment), and whose data it read.

`builds` (--builds; default: the incident's build and the first fixed one): "incident" is each response's
production build (its prefill node's, from the audit's node_configs; the leaking builds when the logs do not
say), then any SGLang version or policy name (kvir.replay.policy.policy_for: 0.5.19, 0.5.20, 0.5.21,
leaking, fixed, door, kvir-proposal). The replay engine models SGLang's prefill/decode builds only: a case
whose engine is another is not replayed on them (every response inconclusive, with the reason).

Imported only when a replay runs (it imports torch): the part (replay.py) loads it inside `replay`.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from kvir.case.store import Case
from kvir.core.errors import KvirError
from kvir.replay.device import describe_device, resolve_device, torch_threads
from kvir.replay.history import LimitsSource, build_segments
from kvir.replay.models import RecallModel
from kvir.replay.pd_rows import tables
from kvir.replay.plugin import ReplayOptions, ReplayOutput
from kvir.replay.policy import ALIASES, POLICIES, Policy, policy_for
from kvir.replay.progress import TargetBar
from kvir.replay.segment import FREE_LIST, ProductionBuild, Row, Settings, replay_segment
from kvir.rules.trigger import Trigger

DEFAULT_BUILDS = ("incident", "fixed")


def replay(case: Case, trigger: Trigger, options: ReplayOptions) -> ReplayOutput:
    compared = resolve_builds(options.builds)
    with torch_threads(options.threads):
        dev = resolve_device(options.device)
        facts = dict(case.run("replay/incident_facts", fetch="df").itertuples(index=False, name=None))
        configs = case.run("replay/node_configs", fetch="df") if case.has("node_configs") else None
        limits = LimitsSource(configs, trigger.pool_tokens, trigger.context_tokens)
        rows = _targets(case, options.limit, engine_not_replayable(facts))
        cfg = Settings(options.scale, dev, options.checksum, options.canary, options.max_decode_steps,
                       options.causal_top, compared, production_build(limits), policy_for("leaking"),
                       ALIASES["fixed"])
        model = RecallModel()
        _replay_nodes(case, rows, limits, model, cfg, options.progress)
        device_text = describe_device(dev)
        results, exposure = tables(rows, cfg, device_text, options.show_text, limits)
    summary = {"compared": [p.name for p in compared], "scale": options.scale, "device": device_text,
               "limits_source": limits.source, "model": model.name, "max_decode_steps": options.max_decode_steps,
               "free_list": FREE_LIST}
    return ReplayOutput(results, exposure, summary)


def resolve_builds(builds: Sequence[str] | None) -> list[Policy]:
    """The compared policies of --builds ("incident" is implicit: every response's production build runs)."""
    out: list[Policy] = []
    for b in builds or DEFAULT_BUILDS:
        if b.strip().lower() == "incident":
            continue
        try:
            p = policy_for(b)
        except ValueError as e:
            raise KvirError(str(e), key="--builds") from None
        if p not in out:
            out.append(p)
    return out


def engine_not_replayable(facts: dict[str, Any]) -> str:
    """Why the case's engine cannot be replayed ('' when it can): the replay engine reproduces SGLang's
    prefill/decode builds (kvir.replay.policy), so a case whose evidence or spec names another engine is not
    replayed on them; an unknown engine is replayed, each build said to be assumed."""
    engine = facts.get("engine") or "unknown"
    if engine in ("sglang", "unknown"):
        return ""
    return (f"the case's engine is {engine} ({facts.get('engine_source') or 'the incident table'}), and kvir's "
            f"replay engine has no model of {engine}'s serving path")


def _targets(case: Case, limit: int | None, not_replayable: str) -> dict[str, Row]:
    """The affected responses (oldest first, at most `limit`), each with why it cannot be replayed, if so."""
    targets = case.run("replay/targets", {"limit": limit if limit is not None else 2**62}, fetch="df")
    rows = {r.request_id: Row(r) for r in targets.itertuples(index=False)}
    for r in rows.values():
        t = r.target
        if not_replayable:
            r.reason = not_replayable
        elif pd.isna(t.decode_node):
            r.reason = "no decode node in the logs (gateway-only evidence): the node's history cannot be rebuilt"
        elif pd.isna(t.prompt_tokens):
            r.reason = "prompt length unknown"
    return rows


def _replay_nodes(case: Case, rows: dict[str, Row], limits: LimitsSource, model: RecallModel, cfg: Settings,
                  progress: bool) -> None:
    """Each decode node's history up to its last target, segment by segment (restarts), where a target is."""
    by_node: dict[str, list[str]] = {}
    for rid, r in rows.items():
        if not r.reason:
            by_node.setdefault(r.target.decode_node, []).append(rid)
    with TargetBar(progress, len(rows)) as bar:
        for node in sorted(by_node):
            tids = set(by_node[node])
            until = max(rows[t].target.ts for t in tids)
            hist = case.run("replay/node_history", {"node": node, "until": until}, fetch="df")
            segments, skipped = build_segments(hist, node, limits, tids)
            for seg in segments:
                if any(r.is_target for r in seg.requests):
                    replay_segment(seg, rows, limits, model, cfg, skipped, bar.advance)
        bar.done(len(rows))


def production_build(limits: LimitsSource) -> ProductionBuild:
    """The build a request's prefill node ran, from node_configs' build (kvir.rules.builds via the audit);
    where the logs do not decide it, the leaking builds' policy, said to be assumed."""

    def build(node: str | None, ts: int) -> tuple[Policy, str, bool]:
        name, why = _build_at(limits, node, ts)
        if name is None:
            p = policy_for("leaking")
            return p, f"{why}: assumed {p.name} (the incident's builds, {p.builds})", True
        return POLICIES[name], why, False

    return build


def _build_at(limits: LimitsSource, node: str | None, ts: int) -> tuple[str | None, str]:
    """(policy name, where it came from) for the build a prefill node ran at ts; (None, why) when the logs do
    not decide it."""
    rows = limits.rows(node)
    if rows is None or "build" not in rows.columns:
        return None, f"no start-up evidence for prefill node {node}"
    times = np.array([pd.Timestamp(t).value if not pd.isna(t) else np.iinfo(np.int64).min for t in rows["ts"]],
                     dtype=np.int64)
    r = rows.iloc[max(0, int(np.searchsorted(times, ts, side="right")) - 1)]
    build, lo, moved = r.get("build"), r.get("build_lo"), r.get("stub_transferred")
    if build is None or pd.isna(build) or build == "unknown" or moved is None or pd.isna(moved):
        return None, f"prefill node {node}: build {build if isinstance(build, str) else 'unknown'} does not decide it"
    return policy_for(str(lo if isinstance(lo, str) else build)).name, (
        f"prefill node {node}: build {build} ({r.get('build_evidence')})")


__all__ = ["replay", "resolve_builds", "engine_not_replayable", "production_build", "DEFAULT_BUILDS"]
