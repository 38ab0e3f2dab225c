"""replay_results and replay_exposure: one row per affected response and build replayed, and whose data
reached whom (under the production build).

Verdicts (per row):
    exposed           HTTP 200 and decode attended slots other requests wrote (their ids, accounts, ranges)
    served-unwritten  HTTP 200 over slots no replayed request had written (no foreign data found)
    not-reproduced    served from its own KV (the prompt fits), or its only token came from the prefill side
    rejected          HTTP 4xx (stage and reason say where: the door, after the forward, the tokenizer)
    failed            HTTP 5xx (the build's checksum or canary stopped it)
    inconclusive      not replayed (reason)
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa

import kvir.replay.queries as queries
from kvir.replay.attribution import foreign_token_runs
from kvir.replay.policy import ALIASES, POLICIES, Policy
from kvir.replay.request import Outcome
from kvir.replay.segment import FREE_LIST, Row

VERDICTS = ("exposed", "served-unwritten", "not-reproduced", "rejected", "failed", "inconclusive")

ASSUMPTIONS = (
    "Page placement is modelled, not recovered: the logs do not record which KV pages a request got. The replay "
    "runs the decode node's logged requests in arrival order through an allocator modelled on SGLang's "
    "PagedTokenToKVPoolAllocator for PD nodes ({free_list}: freed pages are not cleared; an allocation takes the "
    "head of the free list and merges and sorts released pages when it runs short; tested against the wheels' "
    "own class), each holding its pages from its logged start to its logged end; a node start in node_configs "
    "begins an empty pool. The prefill pool is modelled from the same requests (this decode node's), not from "
    "the prefill node's own history. Transfers move whole pages, as Mooncake does. Each request runs under the "
    "build its prefill node ran ({build}); the other builds are counterfactuals on the same pages. Token "
    "contents are synthetic, derived from each request id (the logs hold lengths, not text). Model: the "
    "hand-built recall model (output token t = the token held in the request's logical KV slot t), {steps} "
    "decode step(s) per affected response through the paged kernel; the rest of every logged response is "
    "teacher-forced. Limits: {limits}.{scale}{extra}"
)


def verdict(o: Outcome | None, why: str) -> tuple[str, str]:
    if o is None or o.http_status is None:
        return "inconclusive", why or "not replayed"
    if o.http_status >= 500:
        return "failed", f"HTTP {o.http_status} at {o.stage}: {o.reason}"
    if o.http_status >= 400:
        return "rejected", f"HTTP {o.http_status} at {o.stage}: {o.reason}"
    if len(o.tokens) <= 1 and (o.prefill_tokens or 0) < (o.decode_seq_len or 1) - 1:
        return "not-reproduced", ("HTTP 200, but its only token came from the prefill side: decode never attended "
                                  "the pre-allocated slots")
    if o.owners:
        n = sum(x.tokens for x in o.owners)
        carried = f", {o.carried_foreign:,} of them carried from the prefill node in the stub's page" if o.carried_foreign else ""
        return "exposed", (f"HTTP 200 after prefill computed {o.prefill_tokens} token(s) and decode attended {n:,} "
                           f"slot(s) written by {len(o.owners)} other request(s){carried}")
    if o.uninitialised_tokens:
        return "served-unwritten", (f"HTTP 200 over {o.uninitialised_tokens:,} slot(s) no replayed request had written "
                                    f"(no foreign data found)")
    return "not-reproduced", "the prompt fits: served from its own KV"


def _assumptions(r: Row, f: float, limits, steps: int) -> str:
    lim = "; ".join(sorted(limits.used) + sorted(limits.assumed)) or "none found"
    scale = "" if f == 1.0 else (f" Every length (prompts, responses, pools, contexts) was scaled by {f:g}, keeping "
                                 f"each admission decision; the page size was not scaled.")
    extra = "" if not r.notes else " " + " ".join(n.rstrip(".") + "." for n in r.notes)
    build = f"{r.production.name}, {r.build_source}" if r.production else "not determined"
    return ASSUMPTIONS.format(free_list=FREE_LIST, steps=steps, limits=lim, scale=scale, extra=extra, build=build)


OWNER_T = pa.list_(pa.struct([("request_id", pa.string()), ("account_id", pa.string()), ("tokens", pa.int64()),
                              ("first_token", pa.int64()), ("last_token", pa.int64()), ("attention_mass", pa.float64())]))
CAUSAL_T = pa.list_(pa.struct([("request_id", pa.string()), ("slots", pa.int64()), ("changed_tokens", pa.int64()),
                               ("first_changed", pa.int64())]))
SCHEMA = pa.schema([
    ("request_id", pa.string()), ("build", pa.string()), ("builds", pa.string()), ("build_role", pa.string()),
    ("first_fixed", pa.bool_()), ("account_id", pa.string()), ("prefill_node", pa.string()), ("decode_node", pa.string()),
    ("prompt_tokens", pa.int64()), ("verdict", pa.string()), ("http_status", pa.int32()), ("stage", pa.string()),
    ("foreign_owners", OWNER_T), ("uninitialised_mass", pa.float64()), ("leaked_tokens", pa.int64()),
    ("carried_tokens", pa.int64()), ("scale", pa.float64()), ("assumptions", pa.string()), ("device", pa.string()),
    ("seed", pa.int64()), ("reason", pa.string()), ("prefill_tokens", pa.int64()), ("transferred_pages", pa.int64()),
    ("replayed_prompt_tokens", pa.int64()), ("completion_tokens", pa.int64()), ("decode_steps", pa.int64()),
    ("uninitialised_tokens", pa.int64()), ("recalled_tokens", pa.int64()), ("causal", CAUSAL_T),
    ("history_requests", pa.int64()), ("limits_source", pa.string()), ("build_source", pa.string()),
    ("build_basis", pa.string()),
    ("evidence", pa.string()), ("checksum", pa.string()), ("canary", pa.string()), ("model", pa.string()),
    ("response_tokens", pa.list_(pa.int64())),
    ("cached_tokens", pa.int64()),          # prefix-cache replays (kvir.replay.prefix_run): the cached tokens it got
])
EXPOSURE_SCHEMA = pa.schema([("source_account_id", pa.string()), ("source_request_id", pa.string()),
                             ("reader_request_id", pa.string()), ("reader_account_id", pa.string()),
                             ("build", pa.string()), ("tokens", pa.int64()), ("attention_mass", pa.float64())])


def tables(rows: dict[str, Row], compared: list[Policy], f: float, device: str, show_text: bool, limits,
           steps: int) -> tuple[pa.Table, pa.Table]:
    res, exp = [], []
    first_fixed = ALIASES["fixed"]
    for rid in sorted(rows):
        r = rows[rid]
        prod = r.production or POLICIES[ALIASES["leaking"]]
        order = [prod] + [p for p in compared if p.name != prod.name]
        for p in order:
            o = r.result.outcomes.get(p.name) if r.result else None
            v, why = verdict(o, r.reason)
            owners, causal, recalled = [], [], None
            eng = r.engine
            if o is not None and eng is not None:
                reg = eng.registry
                owners = [{"request_id": reg.rid(x.uid), "account_id": reg.account(x.uid), "tokens": x.tokens,
                           "first_token": x.first_token, "last_token": x.last_token,
                           "attention_mass": float(x.attention_mass)} for x in o.owners]
                recalled = sum(len(t) for t in foreign_token_runs(o, eng).values())
                if p.name == prod.name:
                    causal = [{"request_id": reg.rid(c.owner), "slots": c.slots, "changed_tokens": c.changed_tokens,
                               "first_changed": c.first_changed} for c in r.result.causal]
                    exp += [{"source_account_id": w["account_id"], "source_request_id": w["request_id"],
                             "reader_request_id": rid, "reader_account_id": _s(r.target.account_id), "build": p.name,
                             "tokens": w["tokens"], "attention_mass": w["attention_mass"]} for w in owners]
            t = r.target
            res.append({
                "request_id": rid, "build": p.name, "builds": p.builds,
                "build_role": "incident" if p.name == prod.name else ("proposal" if not p.is_build else "compared"),
                "first_fixed": p.name == first_fixed, "account_id": _s(t.account_id), "prefill_node": _s(t.prefill_node),
                "decode_node": _s(t.decode_node), "prompt_tokens": _i(t.prompt_tokens), "verdict": v,
                "http_status": o.http_status if o else None, "stage": o.stage if o else None, "foreign_owners": owners,
                "uninitialised_mass": o.uninitialised_mass if o else None,
                "leaked_tokens": sum(w["tokens"] for w in owners) if o else None,
                "carried_tokens": o.carried_foreign if o else None, "scale": f,
                "assumptions": _assumptions(r, f, limits, steps), "device": device, "seed": 0, "reason": why,
                "prefill_tokens": o.prefill_tokens if o else None, "transferred_pages": o.transferred_pages if o else None,
                "replayed_prompt_tokens": r.replayed_prompt, "completion_tokens": _i(t.completion_tokens),
                "decode_steps": len(o.tokens) - 1 if o and o.tokens else None,
                "uninitialised_tokens": o.uninitialised_tokens if o else None, "recalled_tokens": recalled,
                "causal": causal, "history_requests": r.history, "limits_source": r.limits_source or None,
                "build_source": (r.build_source or (f"not replayed: {r.reason}" if r.reason else None)),
                "build_basis": ("ran" if r.production is not None and not r.build_assumed else "assumed")
                if p.name == prod.name else None,
                "evidence": p.evidence, "checksum": o.checksum if o else None,
                "canary": o.canary if o else None, "model": "recall",
                "response_tokens": list(o.tokens) if (o and show_text) else None,
            })
    return pa.Table.from_pylist(res, schema=SCHEMA), pa.Table.from_pylist(exp, schema=EXPOSURE_SCHEMA)


def _s(v) -> str | None:
    return None if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v)


def _i(v) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


def write(case, results: pa.Table, exposure: pa.Table) -> None:
    case.con.register("kvir_replay_rows", results)
    case.con.register("kvir_replay_exposure_rows", exposure)
    try:
        queries.run(case, "write_results", inputs={"rows": "kvir_replay_rows"})
        queries.run(case, "write_exposure", inputs={"rows": "kvir_replay_exposure_rows"})
    finally:
        case.con.unregister("kvir_replay_rows")
        case.con.unregister("kvir_replay_exposure_rows")


def export(case) -> dict[str, Path]:
    from kvir.case.export import write_csv, write_parquet

    p = case.path
    guard = case.manifest.setdefault("csv", {})          # each CSV's guard and where its exact values are
    return {
        "replay_results.parquet": write_parquet(case.con, "SELECT * FROM replay_results", p / "replay_results.parquet"),
        "replay_results.csv": write_csv(case.con, "replay_results", p / "replay_results.csv",
                                        columns=[c for c in case.df("replay_results").columns
                                                 if c not in ("response_tokens", "assumptions")],
                                        guard=guard, exact="replay_results.parquet"),
        "replay_exposure.parquet": write_parquet(case.con, "SELECT * FROM replay_exposure", p / "replay_exposure.parquet"),
        "replay_exposure.csv": write_csv(case.con, "replay_exposure", p / "replay_exposure.csv", guard=guard,
                                         exact="replay_exposure.parquet"),
    }


__all__ = ["VERDICTS", "verdict", "tables", "write", "export", "SCHEMA"]
