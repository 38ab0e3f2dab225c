"""Node history: what a decode node held when an affected response was decoded on it, rebuilt from logs.

The logs say which requests a decode node served, when each started and ended, how long prompts and
responses were and whose they were. They do not say which pages each request got. The replay therefore
*models* placement: it runs the node's logged requests in time order through an allocator that behaves
like the engine's (allocator.py), so freed pages hold the data of their last writer, and then decodes
the affected request over whatever the model placed in its pages.

    arrival (ts)       the request is admitted when its pages are free (else it waits for a release)
    release (ts_end)   its decode pages are freed (not cleared)
    restart            a node (re)start in node_configs begins a fresh, empty pool

Limits come from node_configs (the audit stage's start-up log parse: pool, context, page size per node
start) when the case has it, else from the pool and context the incident declares (one prefill pool and
context for every node; the decode pool and page size are then assumptions, stated in the results). Lengths
and limits are the logged ones, never scaled (segment.py says why).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kvir.replay.config import NodeLimits

DEFAULT_PAGE = 64                 # sglang#30233 and the reference deployment; SGLang's own default is 1


@dataclass(frozen=True)
class LoggedRequest:
    request_id: str
    account_id: str | None
    ts: int                        # ns since the epoch, UTC
    ts_end: int | None
    prompt_tokens: int
    completion_tokens: int         # -1: a target whose response length the logs do not give
    prefill_node: str | None
    decode_node: str
    is_target: bool


@dataclass
class Segment:
    """One uninterrupted run of a decode node (between restarts) and the requests replayed on it."""

    node: str
    limits: NodeLimits
    start: int | None                          # ns; None: before any known start
    requests: list[LoggedRequest] = field(default_factory=list)

    def events(self) -> list[tuple[int, int, str]]:
        """(time, order, request_id): releases (order 0) before arrivals (order 1) at the same instant.
        A request without an end is released right after its arrival (assumption, counted)."""
        ev: list[tuple[int, int, str]] = []
        for r in self.requests:
            ev.append((r.ts, 1, r.request_id))
            ev.append((r.ts_end if r.ts_end is not None and r.ts_end >= r.ts else r.ts, 2 if r.ts_end is None else 0,
                       r.request_id))
        ev.sort()
        return ev


# ------------------------------------------------------------------------------------------- limits

class LimitsSource:
    """Node limits at a time, from node_configs rows or the pool and context the incident declares (its
    spec, in the case's incident table); remembers what it assumed."""

    def __init__(self, node_configs: pd.DataFrame | None, pool_tokens: int, context_tokens: int):
        self.configs = node_configs if node_configs is not None and len(node_configs) else None
        self.pool_tokens, self.context_tokens = pool_tokens, context_tokens
        self.assumed: set[str] = set()
        self.used: set[str] = set()

    @property
    def source(self) -> str:
        return "node_configs" if self.configs is not None else "incident"

    def rows(self, node: str | None) -> pd.DataFrame | None:
        """The node's starts in node_configs, in time order (None: it has none)."""
        if self.configs is None or node is None:
            return None
        rows = self.configs[self.configs["node"] == node].sort_values("ts", kind="stable")
        return rows if len(rows) else None

    def starts(self, node: str) -> list[int]:
        rows = self.rows(node)
        return [] if rows is None else [int(pd.Timestamp(t).value) for t in rows["ts"]]

    def at(self, node: str | None, role: str, ts: int) -> NodeLimits:
        rows = self.rows(node)
        if rows is not None:
            times = np.array([pd.Timestamp(t).value for t in rows["ts"]], dtype=np.int64)
            i = int(np.searchsorted(times, ts, side="right")) - 1
            if i < 0:
                i = 0
                self.assumed.add(f"{node}: a request precedes its first logged start; the first start's limits were used")
            r = rows.iloc[i]
            page = _int(r.get("page_size"))
            if page is None:
                page = DEFAULT_PAGE
                self.assumed.add(f"page size {DEFAULT_PAGE} (node_configs has none for {node})")
            pool, ctx = _int(r.get("pool_tokens")), _int(r.get("context_len"))
            if pool is not None and ctx is not None:
                where = f"node_configs: {r.get('evidence_file')}:{r.get('evidence_line')}"
                self.used.add(f"{node} ({role}) from {where}")
                return NodeLimits(pool - pool % page or page, ctx, page, source=where)
            self.assumed.add(f"{node}: node_configs lacks pool or context; the incident table's values were used")
        pool, ctx = self.pool_tokens, self.context_tokens
        if role == "decode":
            # the incident table names one pool (the prefill side's); a decode pool must at least hold
            # the longest prompt the tokenizer lets through, so two contexts is assumed
            dpool = 2 * ctx
            self.assumed.add(f"decode pool {dpool:,} tokens (2 x context; the case has no node_configs)")
            self.assumed.add(f"page size {DEFAULT_PAGE} (the case has no node_configs)")
            return NodeLimits(dpool - dpool % DEFAULT_PAGE, ctx, DEFAULT_PAGE, source="assumed: 2 x incident context")
        self.assumed.add(f"every prefill node has the incident's pool {pool:,} and context {ctx:,} (incident table)")
        return NodeLimits(pool - pool % DEFAULT_PAGE or DEFAULT_PAGE, ctx, DEFAULT_PAGE, source="incident table")


def _int(v) -> int | None:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


# ------------------------------------------------------------------------------------------- segments

def build_segments(history: pd.DataFrame, node: str, limits: LimitsSource, targets: set[str]) -> tuple[list[Segment], dict[str, int]]:
    """Split one decode node's logged requests (ts order) into runs between restarts.

    history: request_id, account_id, ts, ts_end, prompt_tokens, completion_tokens, prefill_node, outcome,
    http_status (one row per request on the node, up to its last target). Returns the segments and the
    counts of rows left out, by reason."""
    skipped: dict[str, int] = {}
    starts = limits.starts(node)
    segs: dict[int, Segment] = {}
    h = history.sort_values(["ts", "request_id"], kind="stable")
    for r in h.itertuples(index=False):
        ts = int(pd.Timestamp(r.ts).value)
        tgt = r.request_id in targets
        pt = _int(r.prompt_tokens)
        if pt is None:
            skipped["prompt length unknown"] = skipped.get("prompt length unknown", 0) + 1
            continue
        served = (r.outcome == "served") or (r.outcome is None and (_int(r.http_status) in (None, 200)))
        if not served and not tgt:
            skipped["not served (no decode pages held)"] = skipped.get("not served (no decode pages held)", 0) + 1
            continue
        end = None if r.ts_end is None or pd.isna(r.ts_end) else int(pd.Timestamp(r.ts_end).value)
        if end is None:
            skipped["end time unknown (released at once)"] = skipped.get("end time unknown (released at once)", 0) + 1
        ct = _int(r.completion_tokens)
        if ct is None and tgt:
            ct = -1                       # unknown: the replay decodes its usual number of steps (run.py)
        elif ct is None:
            skipped["completion length unknown (taken as 1)"] = skipped.get("completion length unknown (taken as 1)", 0) + 1
            ct = 1
        k = int(np.searchsorted(np.array(starts, dtype=np.int64), ts, side="right")) - 1 if starts else -1
        seg = segs.get(k)
        if seg is None:
            seg = segs[k] = Segment(node, limits.at(node, "decode", ts), starts[k] if k >= 0 else None)
        seg.requests.append(LoggedRequest(r.request_id, None if pd.isna(r.account_id) else r.account_id, ts, end,
                                          pt, ct, None if pd.isna(r.prefill_node) else r.prefill_node,
                                          node, tgt))
    return [segs[k] for k in sorted(segs)], skipped
