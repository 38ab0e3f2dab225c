"""`kvir replay`: re-run every affected response of a case the way its exposure mechanism works, and say whose
data each one read.

    run = kvir.replay.replay_case(case_dir, limit=20, scale=1 / 64, builds=["incident", "0.5.20", "kvir-proposal"])
    run.results      # replay_results as pandas: one row per response and build (verdict, status, owners)
    run.exposure     # replay_exposure: whose data reached whom (under each response's incident build)

The case's mechanism (kvir.case.spec_tables.case_mechanism) does the replay: its replay part
(kvir.replay.plugin.ReplayPart) re-runs the responses, and its options (`builds`, `scale`, `device`, ...) are
the part's to use (kvir.mechanisms.<m>.replay says which it has). This stage writes replay_results and
replay_exposure into the case (exports: replay_results.parquet, replay_exposure.csv), the SQL that ran into
the manifest, and a summary under manifest["replay"]: the verdict counts every replay shares, then the
part's own keys.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from kvir.case.spec_tables import case_mechanism
from kvir.case.store import Case
from kvir.core.errors import KvirError
from kvir.replay.plugin import ReplayOptions, replay_part
from kvir.replay.results import VERDICTS, export, write
from kvir.spec.mechanism import Mechanism

MAX_DECODE_STEPS = 16        # decode steps per target run through the kernel; the rest is teacher-forced
CAUSAL_TOP = 2               # foreign owners (by attention mass) given a causal sentinel check


@dataclass
class ReplayRun:
    case: Case
    results: pd.DataFrame
    exposure: pd.DataFrame
    summary: dict[str, Any]
    mechanism: Mechanism                 # whose replay ran (its replay part says what the results mean)
    outputs: dict[str, Path] = field(default_factory=dict)


def replay_case(case_or_path: Case | str | Path, limit: int | None = None, device: str = "auto", canary: bool = False,
                checksum: bool = False, scale: float | None = None, show_text: bool = False, progress: bool = False,
                *, builds: Sequence[str] | None = None, max_decode_steps: int = MAX_DECODE_STEPS,
                causal_top: int = CAUSAL_TOP, threads: int | None = 1) -> ReplayRun:
    """Replay the case's affected responses (see module docstring). `scale` in (0, 1] shrinks the decode
    attention of a paged-KV replay (kvir.replay.sample); whose data a response read is always worked out at full size.
    threads: torch intra-op threads on CPU while a paged-KV replay runs (None keeps torch's setting)."""
    options = _options(limit, device, canary, checksum, scale, show_text, progress, builds, max_decode_steps,
                       causal_top, threads)
    if isinstance(case_or_path, Case):
        return _replay_into(case_or_path, options)
    case = Case.open(case_or_path, staged=True)    # staged: committed only when complete
    try:
        run = _replay_into(case, options)
        case.commit()
    except BaseException:
        case.close()
        raise
    run.outputs = {k: case.path / v.name for k, v in run.outputs.items()}
    return run


def _options(limit, device, canary, checksum, scale, show_text, progress, builds, max_decode_steps, causal_top,
             threads) -> ReplayOptions:
    if threads is not None and threads < 1:
        raise KvirError("threads must be at least 1")
    f = 1.0 if scale is None else float(scale)
    if not 0 < f <= 1:
        raise KvirError(f"--scale must be in (0, 1], got {scale}")
    if limit is not None and limit < 0:
        raise KvirError("--limit must not be negative")
    return ReplayOptions(limit=limit, scale=f, device=device, threads=threads, canary=canary, checksum=checksum,
                         builds=tuple(builds) if builds is not None else None, max_decode_steps=max_decode_steps,
                         causal_top=causal_top, show_text=show_text, progress=progress)


def _replay_into(case: Case, options: ReplayOptions) -> ReplayRun:
    t0 = time.perf_counter()
    for table in ("affected", "requests", "incident"):
        if not case.has(table):
            raise KvirError(f"the case has no {table} table", path=str(case.path), hint="run `kvir triage` first")
    mech, params = case_mechanism(case)
    out = replay_part(mech.name).replay(case, params, options)
    write(case, out.results, out.exposure)
    summary = {**_shared_summary(case), "mechanism": mech.name, **out.summary,
               "seconds": round(time.perf_counter() - t0, 3)}
    outputs = export(case)
    case.manifest["replay"] = summary
    case.manifest.setdefault("timings", {})["replay_s"] = summary["seconds"]
    case.manifest.setdefault("outputs", {}).update({k: v.name for k, v in outputs.items()})
    case.save_manifest()
    return ReplayRun(case, case.df("replay_results"), case.df("replay_exposure"), summary, mech, outputs)


def _shared_summary(case: Case) -> dict[str, Any]:
    """The verdict counts under each response's incident build, and per build replayed."""
    counts: dict[str, Any] = {k: int(v) for k, v in dict(case.run("replay/summary", fetch="df").iloc[0]).items()}
    per_build = case.run("replay/summary_by_build", fetch="df")
    counts["builds"] = {b: {v: int(n) for v, n in g[["verdict", "n"]].itertuples(index=False)}
                        for b, g in per_build.groupby("build", sort=True)}
    return counts


__all__ = ["ReplayRun", "replay_case", "VERDICTS", "MAX_DECODE_STEPS", "CAUSAL_TOP"]
