"""`kvir replay`: re-run every affected response of a case under the builds asked for, over a model of its
decode node's history, and say whose data each one read.

    run = kvir.replay(case_dir, limit=20, scale=0.01, builds=["incident", "0.5.20", "kvir-proposal"])
    run.results      # replay_results as pandas: one row per response and build (verdict, status, owners)
    run.exposure     # replay_exposure: whose data reached whom (under each response's production build)

`builds` (default: the incident's build and the first fixed one): "incident" is each response's
production build (its prefill node's, from node_configs; the leaking builds when the logs do not say),
then any SGLang version or policy name (kvir.replay.policy.policy_for: 0.5.19, 0.5.20, 0.5.21, leaking,
fixed, door, kvir-proposal). Writes replay_results and replay_exposure into the case (exports:
replay_results.parquet, replay_exposure.csv), the SQL that ran into the manifest, and a summary under
manifest["replay"].
"""
from __future__ import annotations

import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import pandas as pd
import torch

import kvir.replay.queries as queries
from kvir.case.store import Case
from kvir.core.errors import KvirError
from kvir.replay.history import LimitsSource, build_segments
from kvir.replay.models import RecallModel
from kvir.replay.policy import Policy, policy_for
from kvir.replay.results import VERDICTS, export, tables, write
from kvir.replay.segment import FREE_LIST, Row, Settings, replay_segment

MAX_DECODE_STEPS = 16        # decode steps per target run through the kernel; the rest is teacher-forced
CAUSAL_TOP = 2               # foreign owners (by attention mass) given a causal sentinel check
DEFAULT_BUILDS = ("incident", "fixed")


@dataclass
class ReplayRun:
    case: Case
    results: pd.DataFrame
    exposure: pd.DataFrame
    summary: dict[str, Any]
    outputs: dict[str, Path] = field(default_factory=dict)


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise KvirError("--device cuda: no CUDA device is available", hint="use --device cpu or auto")
    if device not in ("cpu", "cuda"):
        raise KvirError(f"unknown device {device!r}", hint="auto, cpu or cuda")
    return torch.device(device)


def describe_device(dev: torch.device) -> str:
    if dev.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(dev)})"
    return f"cpu ({platform.machine()}, torch {torch.__version__})"


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


def replay_case(case_or_path: Case | str | Path, limit: int | None = None, device: str = "auto", canary: bool = False,
                checksum: bool = False, scale: float | None = None, show_text: bool = False, progress: bool = False,
                *, builds: Sequence[str] | None = None, max_decode_steps: int = MAX_DECODE_STEPS,
                causal_top: int = CAUSAL_TOP, threads: int | None = 1) -> ReplayRun:
    """Replay the case's affected responses (see module docstring). `scale` in (0, 1] shrinks every length.

    threads: torch intra-op threads on CPU while the replay runs (restored afterwards; None keeps torch's
    setting). One by default: the replay is a long chain of small memory-bound ops, and on a shared
    machine multi-threaded ops stall (measured on the 2-core development VM with other jobs running:
    the demo's 12 replays took 3.7 s with one thread and 25.9 s with two)."""
    if threads is not None and threads < 1:
        raise KvirError("threads must be at least 1")
    compared = resolve_builds(builds)
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        kw = dict(limit=limit, device=device, canary=canary, checksum=checksum, scale=scale, show_text=show_text,
                  progress=progress, compared=compared, max_decode_steps=max_decode_steps, causal_top=causal_top)
        if isinstance(case_or_path, Case):
            return _replay_into(case_or_path, **kw)
        case = Case.open(case_or_path, staged=True)    # staged: committed only when complete
        try:
            run = _replay_into(case, **kw)
            case.commit()
        except BaseException:
            case.close()
            raise
        run.outputs = {k: case.path / v.name for k, v in run.outputs.items()}
        return run
    finally:
        torch.set_num_threads(before)


def _replay_into(case: Case, *, limit, device, canary, checksum, scale, show_text, progress, compared,
                 max_decode_steps, causal_top) -> ReplayRun:
    t0 = time.perf_counter()
    f = 1.0 if scale is None else float(scale)
    if not 0 < f <= 1:
        raise KvirError(f"--scale must be in (0, 1], got {scale}")
    if limit is not None and limit < 0:
        raise KvirError("--limit must not be negative")
    for table in ("affected", "requests", "incident"):
        if not case.has(table):
            raise KvirError(f"the case has no {table} table", path=str(case.path), hint="run `kvir triage` first")
    dev = resolve_device(device)
    incident = dict(queries.run(case, "incident_facts").itertuples(index=False, name=None))
    if incident.get("mechanism") == "prefix-cache":
        return _replay_prefix_into(case, incident, limit, t0)
    configs = queries.run(case, "node_configs") if case.has("node_configs") else None
    limits = LimitsSource(configs, incident)
    targets = queries.run(case, "targets", {"limit": limit if limit is not None else 2**62})
    rows = {r.request_id: Row(r) for r in targets.itertuples(index=False)}
    not_sglang = _engine_not_replayable(incident)
    for r in rows.values():
        t = r.target
        if not_sglang:
            r.reason = not_sglang
        elif pd.isna(t.decode_node):
            r.reason = "no decode node in the logs (gateway-only evidence): the node's history cannot be rebuilt"
        elif pd.isna(t.prompt_tokens):
            r.reason = "prompt length unknown"
    by_node: dict[str, list[str]] = {}
    for rid, r in rows.items():
        if not r.reason:
            by_node.setdefault(r.target.decode_node, []).append(rid)

    cfg = Settings(f, dev, checksum, canary, max_decode_steps, causal_top, compared)
    model = RecallModel()
    with _Bar(progress, len(rows)) as bar:
        for node in sorted(by_node):
            tids = set(by_node[node])
            until = max(rows[t].target.ts for t in tids)
            hist = queries.run(case, "node_history", {"node": node, "until": until})
            segments, skipped = build_segments(hist, node, limits, tids)
            for seg in segments:
                if any(r.is_target for r in seg.requests):
                    replay_segment(seg, rows, limits, model, cfg, skipped, bar.advance)
        bar.done(len(rows))

    device_text = describe_device(dev)
    results, exposure = tables(rows, compared, f, device_text, show_text, limits, max_decode_steps)
    write(case, results, exposure)
    summary: dict[str, Any] = {k: int(v) for k, v in dict(queries.run(case, "summary").iloc[0]).items()}
    per_build = queries.run(case, "summary_by_build")
    summary.update({"builds": {b: {v: int(n) for v, n in g[["verdict", "n"]].itertuples(index=False)}
                               for b, g in per_build.groupby("build", sort=True)},
                    "compared": [p.name for p in compared], "scale": f, "device": device_text,
                    "limits_source": limits.source, "seconds": round(time.perf_counter() - t0, 3), "model": model.name,
                    "max_decode_steps": max_decode_steps, "free_list": FREE_LIST})
    outputs = export(case)
    case.manifest["replay"] = summary
    case.manifest.setdefault("timings", {})["replay_s"] = summary["seconds"]
    case.manifest.setdefault("outputs", {}).update({k: v.name for k, v in outputs.items()})
    case.save_manifest()
    return ReplayRun(case, case.df("replay_results"), case.df("replay_exposure"), summary, outputs)


def _replay_prefix_into(case: Case, incident: dict, limit: int | None, t0: float) -> ReplayRun:
    """A prefix-cache case: its affected responses through the prefix cache (kvir.replay.prefix_run)."""
    from kvir.replay.prefix_run import replay_prefix

    results, exposure, extra = replay_prefix(case, incident, limit)
    write(case, results, exposure)
    summary: dict[str, Any] = {k: int(v) for k, v in dict(queries.run(case, "summary").iloc[0]).items()}
    per_build = queries.run(case, "summary_by_build")
    summary.update(extra, builds={b: {v: int(n) for v, n in g[["verdict", "n"]].itertuples(index=False)}
                                  for b, g in per_build.groupby("build", sort=True)},
                   compared=[b for b in sorted(set(per_build["build"]))], scale=1.0, device="cpu",
                   seconds=round(time.perf_counter() - t0, 3), model="prefix-cache")
    outputs = export(case)
    case.manifest["replay"] = summary
    case.manifest.setdefault("timings", {})["replay_s"] = summary["seconds"]
    case.manifest.setdefault("outputs", {}).update({k: v.name for k, v in outputs.items()})
    case.save_manifest()
    return ReplayRun(case, case.df("replay_results"), case.df("replay_exposure"), summary, outputs)


def _engine_not_replayable(incident: dict) -> str:
    """Why the case's engine cannot be replayed ('' when it can): the replay engine reproduces SGLang's
    prefill/decode builds (kvir.replay.policy), so a case whose evidence or spec names another engine is not
    replayed on them; an unknown engine is replayed, each build said to be assumed."""
    engine = incident.get("engine") or "unknown"
    if engine in ("sglang", "unknown"):
        return ""
    return (f"the case's engine is {engine} ({incident.get('engine_source') or 'the incident table'}), and kvir's "
            f"replay engine has no model of {engine}'s serving path")


class _Bar:
    """A rich progress bar over targets on stderr (or nothing)."""

    def __init__(self, enabled: bool, total: int):
        self.enabled, self.total, self._p, self._task = enabled, total, None, None

    def __enter__(self) -> "_Bar":
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            from kvir.core.progress import stderr

            self._p = Progress(TextColumn("[bold]replay"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                               console=stderr, transient=False)
            self._p.__enter__()
            self._task = self._p.add_task("replay", total=self.total)
        return self

    def advance(self) -> None:
        if self._p is not None:
            self._p.advance(self._task)

    def done(self, n: int) -> None:
        if self._p is not None:
            self._p.update(self._task, completed=n)

    def __exit__(self, *exc) -> None:
        if self._p is not None:
            self._p.__exit__(*exc)


__all__ = ["ReplayRun", "replay_case", "resolve_builds", "VERDICTS", "DEFAULT_BUILDS"]
