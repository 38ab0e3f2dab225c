"""`kvir replay`: re-run every affected response of a case on the unpatched and the patched engine over a
model of its decode node's history, and say whose data each one read.

    run = kvir.replay(case_dir, limit=20, scale=0.01)
    run.results      # replay_results as pandas: verdict, statuses, foreign owners with token ranges and mass
    run.exposure     # replay_exposure: whose data reached whom

Writes replay_results and replay_exposure into the case (exports: replay_results.parquet,
replay_exposure.csv), the SQL that ran into the manifest, and a summary under manifest["replay"].
"""
from __future__ import annotations

import platform
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import torch

from kvir.case.store import Case
from kvir.core.errors import KvirError
from kvir.replay import queries
from kvir.replay.attribution import TargetResult, can_admit, foreign_token_runs, replay_target
from kvir.replay.config import EngineConfig, NodeLimits
from kvir.replay.engine import PDEngine
from kvir.replay.history import LimitsSource, Segment, build_segments, scale_length, scale_limits, thresholds
from kvir.replay.models import RecallModel
from kvir.replay.request import ReplayRequest

VERDICTS = ("exposed", "rejected-by-patch", "not-reproduced", "inconclusive")
MAX_DECODE_STEPS = 16        # decode steps per target run through the kernel; the rest is teacher-forced
CAUSAL_TOP = 2               # foreign owners (by attention mass) given a causal sentinel check
FREE_LIST = "sglang-pd"


@dataclass
class ReplayRun:
    case: Case
    results: pd.DataFrame
    exposure: pd.DataFrame
    summary: dict[str, Any]
    outputs: dict[str, Path] = field(default_factory=dict)


@dataclass
class _Row:
    target: pd.Series
    verdict: str = "inconclusive"
    reason: str = ""
    result: TargetResult | None = None
    engine: PDEngine | None = None
    history: int = 0
    replayed_prompt: int | None = None
    limits_source: str = ""
    notes: list[str] = field(default_factory=list)


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


def replay_case(case_or_path: Case | str | Path, limit: int | None = None, device: str = "auto", canary: bool = False,
                checksum: bool = False, scale: float | None = None, show_text: bool = False, progress: bool = False,
                *, max_decode_steps: int = MAX_DECODE_STEPS, causal_top: int = CAUSAL_TOP,
                threads: int | None = 1) -> ReplayRun:
    """Replay the case's affected responses (see module docstring). `scale` in (0, 1] shrinks every length.

    threads: torch intra-op threads on CPU while the replay runs (restored afterwards; None keeps torch's
    setting). One by default: the replay is a long chain of small memory-bound ops, and on a shared
    machine multi-threaded ops stall (measured on the 2-core development VM with other jobs running:
    the demo's 12 replays took 3.7 s with one thread and 25.9 s with two)."""
    if threads is not None and threads < 1:
        raise KvirError("threads must be at least 1")
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _replay_case(case_or_path, limit, device, canary, checksum, scale, show_text, progress,
                            max_decode_steps, causal_top)
    finally:
        torch.set_num_threads(before)


def _replay_case(case_or_path, limit, device, canary, checksum, scale, show_text, progress, max_decode_steps,
                 causal_top) -> ReplayRun:
    """Replay into an open Case as given, or into the case at a path: staged, committed only when complete."""
    if isinstance(case_or_path, Case):
        return _replay_into(case_or_path, limit, device, canary, checksum, scale, show_text, progress,
                            max_decode_steps, causal_top)
    case = Case.open(case_or_path, staged=True)
    try:
        run = _replay_into(case, limit, device, canary, checksum, scale, show_text, progress, max_decode_steps,
                           causal_top)
        case.commit()
    except BaseException:
        case.close()
        raise
    run.outputs = {k: case.path / v.name for k, v in run.outputs.items()}
    return run


def _replay_into(case: Case, limit, device, canary, checksum, scale, show_text, progress, max_decode_steps,
                 causal_top) -> ReplayRun:
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
    configs = queries.run(case, "node_configs") if case.has("node_configs") else None
    limits = LimitsSource(configs, incident)
    targets = queries.run(case, "targets", {"limit": limit if limit is not None else 2**62})
    rows = {r.request_id: _Row(r) for r in targets.itertuples(index=False)}

    for r in rows.values():
        t = r.target
        if pd.isna(t.decode_node):
            r.reason = "no decode node in the logs (gateway-only evidence): the node's history cannot be rebuilt"
        elif pd.isna(t.prompt_tokens):
            r.reason = "prompt length unknown"

    by_node: dict[str, list[str]] = {}
    for rid, r in rows.items():
        if not r.reason:
            by_node.setdefault(r.target.decode_node, []).append(rid)

    bar = _Bar(progress, len(rows))
    model = RecallModel()
    with bar:
        for node in sorted(by_node):
            tids = set(by_node[node])
            until = max(rows[t].target.ts for t in tids)
            hist = queries.run(case, "node_history", {"node": node, "until": until})
            segments, skipped = build_segments(hist, node, limits, tids)
            for seg in segments:
                if any(r.is_target for r in seg.requests):
                    _replay_segment(seg, rows, limits, model, dev, f, checksum, canary, max_decode_steps,
                                    causal_top, skipped, bar)
        bar.done(len(rows))

    device_text = describe_device(dev)
    results, exposure = _tables(rows, f, device_text, show_text, limits, max_decode_steps)
    _write(case, results, exposure)
    summary = dict(queries.run(case, "summary").iloc[0])
    summary = {k: int(v) for k, v in summary.items()}
    summary.update({"scale": f, "device": device_text, "limits_source": limits.source,
                    "seconds": round(time.perf_counter() - t0, 3), "model": model.name,
                    "max_decode_steps": max_decode_steps, "free_list": FREE_LIST})
    outputs = _export(case)
    case.manifest["replay"] = summary
    case.manifest.setdefault("timings", {})["replay_s"] = summary["seconds"]
    case.manifest.setdefault("outputs", {}).update({k: v.name for k, v in outputs.items()})
    case.save_manifest()
    return ReplayRun(case, case.df("replay_results"), case.df("replay_exposure"), summary, outputs)


# ------------------------------------------------------------------------------------------- one segment

def _replay_segment(seg: Segment, rows: dict[str, _Row], limits: LimitsSource, model: RecallModel, dev: torch.device,
                    f: float, checksum: bool, canary: bool, max_steps: int, causal_top: int,
                    skipped: dict[str, int], bar: "_Bar") -> None:
    dec_o = seg.limits
    dec = scale_limits(dec_o, f)
    reqs: dict[str, ReplayRequest] = {}
    pre_max = None
    for lr in seg.requests:
        pre_o = limits.at(lr.prefill_node, "prefill", lr.ts)
        pre = scale_limits(NodeLimits(pre_o.pool_tokens, pre_o.context_len, dec_o.page_size, source=pre_o.source), f)
        L = scale_length(lr.prompt_tokens, thresholds(pre_o, dec_o), thresholds(pre, dec), f)
        if lr.completion_tokens < 0:      # a target without a logged response length: the usual steps
            c = max_steps + 1
            if lr.request_id in rows:
                rows[lr.request_id].notes.append(f"its response length is not in the logs: {max_steps} decode steps "
                                                  f"were replayed")
        else:
            c = lr.completion_tokens if f == 1.0 or lr.completion_tokens == 0 else max(1, int(round(lr.completion_tokens * f)))
        if lr.is_target and lr.completion_tokens >= 0:   # scaling shrinks the KV footprint, not the steps
            c = max(c, min(lr.completion_tokens, max_steps + 1))
        reqs[lr.request_id] = ReplayRequest(lr.request_id, L, c, lr.account_id,
                                            decode_steps=max_steps if lr.is_target else 0, prefill_limits=pre)
        if pre_max is None or pre.pool_tokens > pre_max.pool_tokens:
            pre_max = pre
        if lr.is_target and lr.request_id in rows:
            rows[lr.request_id].replayed_prompt = L
            rows[lr.request_id].limits_source = f"decode {dec_o.source or 'assumed'}; prefill {pre_o.source or 'assumed'}"
    assert pre_max is not None
    # the prefill pool only ever holds one request (it is freed after each transfer): context-sized storage
    ctx_pages = -(-max(r.prefill_limits.context_len for r in reqs.values()) // dec.page_size)
    storage = NodeLimits(max(dec.page_size, min(pre_max.pool_tokens, ctx_pages * dec.page_size)), pre_max.context_len, dec.page_size)
    engine = PDEngine(EngineConfig(prefill=storage, decode=dec, free_list=FREE_LIST), model, device=dev,
                      checksum="log" if checksum else "off", canary="log" if canary else "off")
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
                engine.start(req)                      # it still occupies pages for later targets
            else:
                row.result = replay_target(engine, req, causal_top=causal_top)
            bar.advance()
        else:
            out = engine.start(req)
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


# ------------------------------------------------------------------------------------------- verdicts, tables

def _verdict(r: _Row) -> tuple[str, str]:
    if r.result is None:
        return "inconclusive", r.reason or "not replayed"
    u, p = r.result.unpatched, r.result.patched
    if u.served and len(u.tokens) <= 1 and p.http_status != 200:
        return "rejected-by-patch", ("unpatched: HTTP 200, but its only token came from the prefill side: decode "
                                     f"never attended the pre-allocated slots; patched: HTTP {p.http_status} at {p.stage}")
    if u.served and u.owners:
        n = sum(o.tokens for o in u.owners)
        return "exposed", (f"unpatched: HTTP 200 after prefill computed {u.prefill_tokens} token(s) and decode attended "
                           f"{n:,} slot(s) written by {len(u.owners)} other request(s); patched: HTTP {p.http_status} "
                           f"at {p.stage}")
    if u.served and p.http_status != 200:
        return "rejected-by-patch", (f"unpatched: HTTP 200 over {u.uninitialised_tokens:,} slot(s) no replayed request had "
                                     f"written (no foreign data found); patched: HTTP {p.http_status} at {p.stage}")
    if u.served:
        return "not-reproduced", "the prompt fits: both engines served it from its own KV"
    return "not-reproduced", f"the unpatched engine refused it too: HTTP {u.http_status} at {u.stage}"


ASSUMPTIONS = (
    "Page placement is modelled, not recovered: the logs do not record which KV pages a request got. The replay "
    "runs the decode node's logged requests in arrival order through an allocator modelled on SGLang's "
    "PagedTokenToKVPoolAllocator for PD nodes ({free_list}: freed pages are not cleared; an allocation takes the "
    "head of the free list and merges and sorts released pages when it runs short), each holding its pages from "
    "its logged start to its logged end; a node start in node_configs begins an empty pool. Token contents are "
    "synthetic, derived from each request id (the logs hold lengths, not text). Model: the hand-built recall "
    "model (output token t = the token held in the request's logical KV slot t), {steps} decode step(s) per "
    "affected response through the paged kernel; the rest of every logged response is teacher-forced. Limits: "
    "{limits}.{scale}{extra}"
)


def _assumptions(r: _Row, f: float, limits: LimitsSource, steps: int) -> str:
    lim = "; ".join(sorted(limits.used) + sorted(limits.assumed)) or "none found"
    scale = "" if f == 1.0 else (f" Every length (prompts, responses, pools, contexts) was scaled by {f:g}, keeping "
                                 f"each admission decision; the page size was not scaled.")
    extra = "" if not r.notes else " " + " ".join(n.rstrip(".") + "." for n in r.notes)
    return ASSUMPTIONS.format(free_list=FREE_LIST, steps=steps, limits=lim, scale=scale, extra=extra)


def _tables(rows: dict[str, _Row], f: float, device: str, show_text: bool, limits: LimitsSource,
            steps: int) -> tuple[pa.Table, pa.Table]:
    res, exp = [], []
    for rid in sorted(rows):
        r = rows[rid]
        t = r.target
        verdict, reason = _verdict(r)
        u = r.result.unpatched if r.result else None
        p = r.result.patched if r.result else None
        eng = r.engine
        owners = []
        causal = []
        recalled = None
        if u is not None and eng is not None:
            reg = eng.registry
            owners = [{"request_id": reg.rid(o.uid), "account_id": reg.account(o.uid), "tokens": o.tokens,
                       "first_token": o.first_token, "last_token": o.last_token, "attention_mass": float(o.attention_mass)}
                      for o in u.owners]
            causal = [{"request_id": reg.rid(c.owner), "slots": c.slots, "changed_tokens": c.changed_tokens,
                       "first_changed": c.first_changed} for c in r.result.causal]
            recalled = sum(len(v) for v in foreign_token_runs(u, eng).values())
            for o in owners:
                exp.append({"source_account_id": o["account_id"], "source_request_id": o["request_id"],
                            "reader_request_id": rid, "reader_account_id": _s(t.account_id),
                            "tokens": o["tokens"], "attention_mass": o["attention_mass"]})
        res.append({
            "request_id": rid, "account_id": _s(t.account_id), "prefill_node": _s(t.prefill_node),
            "decode_node": _s(t.decode_node), "prompt_tokens": _i(t.prompt_tokens), "verdict": verdict,
            "unpatched_status": u.http_status if u else None, "patched_status": p.http_status if p else None,
            "foreign_owners": owners, "uninitialised_mass": u.uninitialised_mass if u else None,
            "leaked_tokens": sum(o["tokens"] for o in owners) if u else None, "scale": f,
            "assumptions": _assumptions(r, f, limits, steps), "device": device, "seed": 0, "reason": reason,
            "unpatched_stage": u.stage if u else None, "patched_stage": p.stage if p else None,
            "prefill_tokens": u.prefill_tokens if u else None, "replayed_prompt_tokens": r.replayed_prompt,
            "completion_tokens": _i(t.completion_tokens), "decode_steps": len(u.tokens) - 1 if u and u.tokens else None,
            "uninitialised_tokens": u.uninitialised_tokens if u else None, "recalled_tokens": recalled,
            "causal": causal, "history_requests": r.history, "limits_source": r.limits_source or None,
            "checksum": u.checksum if u else None, "canary": u.canary if u else None, "model": "recall",
            "response_tokens": list(u.tokens) if (u and show_text) else None,
        })
    owner_t = pa.list_(pa.struct([("request_id", pa.string()), ("account_id", pa.string()), ("tokens", pa.int64()),
                                  ("first_token", pa.int64()), ("last_token", pa.int64()), ("attention_mass", pa.float64())]))
    causal_t = pa.list_(pa.struct([("request_id", pa.string()), ("slots", pa.int64()), ("changed_tokens", pa.int64()),
                                   ("first_changed", pa.int64())]))
    schema = pa.schema([
        ("request_id", pa.string()), ("account_id", pa.string()), ("prefill_node", pa.string()), ("decode_node", pa.string()),
        ("prompt_tokens", pa.int64()), ("verdict", pa.string()), ("unpatched_status", pa.int32()),
        ("patched_status", pa.int32()), ("foreign_owners", owner_t), ("uninitialised_mass", pa.float64()),
        ("leaked_tokens", pa.int64()), ("scale", pa.float64()), ("assumptions", pa.string()), ("device", pa.string()),
        ("seed", pa.int64()), ("reason", pa.string()), ("unpatched_stage", pa.string()), ("patched_stage", pa.string()),
        ("prefill_tokens", pa.int64()), ("replayed_prompt_tokens", pa.int64()), ("completion_tokens", pa.int64()),
        ("decode_steps", pa.int64()), ("uninitialised_tokens", pa.int64()), ("recalled_tokens", pa.int64()),
        ("causal", causal_t), ("history_requests", pa.int64()), ("limits_source", pa.string()), ("checksum", pa.string()),
        ("canary", pa.string()), ("model", pa.string()), ("response_tokens", pa.list_(pa.int64())),
    ])
    exp_schema = pa.schema([("source_account_id", pa.string()), ("source_request_id", pa.string()),
                            ("reader_request_id", pa.string()), ("reader_account_id", pa.string()),
                            ("tokens", pa.int64()), ("attention_mass", pa.float64())])
    return pa.Table.from_pylist(res, schema=schema), pa.Table.from_pylist(exp, schema=exp_schema)


def _s(v) -> str | None:
    return None if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v)


def _i(v) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


def _write(case: Case, results: pa.Table, exposure: pa.Table) -> None:
    case.con.register("kvir_replay_rows", results)
    case.con.register("kvir_replay_exposure_rows", exposure)
    try:
        queries.run(case, "write_results", inputs={"rows": "kvir_replay_rows"})
        queries.run(case, "write_exposure", inputs={"rows": "kvir_replay_exposure_rows"})
    finally:
        case.con.unregister("kvir_replay_rows")
        case.con.unregister("kvir_replay_exposure_rows")


def _export(case: Case) -> dict[str, Path]:
    from kvir.case.export import write_csv, write_parquet

    p = case.path
    return {
        "replay_results.parquet": write_parquet(case.con, "SELECT * FROM replay_results", p / "replay_results.parquet"),
        "replay_results.csv": write_csv(case.con, "replay_results", p / "replay_results.csv",
                                        columns=[c for c in case.df("replay_results").columns
                                                 if c not in ("response_tokens", "assumptions")]),
        "replay_exposure.csv": write_csv(case.con, "replay_exposure", p / "replay_exposure.csv"),
    }


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


__all__ = ["ReplayRun", "replay_case", "VERDICTS"]
