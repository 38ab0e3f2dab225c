"""replay_results rows of a paged-KV prefill/decode replay (segment.py): one per affected response and build,
the verdict of each build's Outcome (kvir.replay.results.VERDICTS), whose slots it attended, the causal check,
and what the replay assumed."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa

from kvir.replay.attribution import exposure_rows, foreign_token_runs
from kvir.replay.policy import Policy
from kvir.replay.request import Outcome
from kvir.replay.results import EXPOSURE_SCHEMA, SCHEMA
from kvir.replay.sample import every_for
from kvir.replay.segment import FREE_LIST, Row, Settings

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
    scale = (" Every request ran at its logged lengths on its nodes' own pools: placement and attribution are "
             "never scaled.")
    if f != 1.0:
        scale += (f" The decode attention (--scale {f:g}) ran over 1 in {every_for(f)} pages of each response's prompt "
                  f"range after the pages its decode steps read, so attention masses, and the owners the causal check "
                  f"takes by them, are those of that sample.")
    extra = "" if not r.notes else " " + " ".join(n.rstrip(".") + "." for n in r.notes)
    build = f"{r.production.name}, {r.build_source}" if r.production else "not determined"
    return ASSUMPTIONS.format(free_list=FREE_LIST, steps=steps, limits=lim, scale=scale, extra=extra, build=build)


def tables(rows: dict[str, Row], cfg: Settings, device: str, show_text: bool, limits) -> tuple[pa.Table, pa.Table]:
    """replay_results and replay_exposure of the replayed rows: each response under its production build
    first (build_role incident), then the builds compared."""
    res, exp = [], []
    for rid in sorted(rows):
        r = rows[rid]
        prod = r.production or cfg.assumed
        for p in [prod] + [p for p in cfg.compared if p.name != prod.name]:
            o = r.result.outcomes.get(p.name) if r.result else None
            owners, causal, recalled = _attributed(r, p, o, p.name == prod.name)
            if p.name == prod.name:
                exp += [{"source_account_id": w["account_id"], "source_request_id": w["request_id"],
                         "reader_request_id": rid, "reader_account_id": _s(r.target.account_id), "build": p.name,
                         "tokens": w["tokens"], "attention_mass": w["attention_mass"]} for w in owners]
            res.append(_row(r, p, o, prod, cfg, owners, causal, recalled, device, show_text, limits))
    return pa.Table.from_pylist(res, schema=SCHEMA), pa.Table.from_pylist(exp, schema=EXPOSURE_SCHEMA)


def _attributed(r: Row, p: Policy, o: Outcome | None, production: bool) -> tuple[list[dict], list[dict], int | None]:
    """The foreign owners a build's outcome attended, the causal checks (production build only) and how many
    of the response's tokens were recalled from foreign slots."""
    if o is None or r.registry is None:
        return [], [], None
    reg = r.registry
    owners = exposure_rows(o, reg)
    recalled = sum(len(t) for t in foreign_token_runs(o, reg).values())
    causal = [{"request_id": reg.rid(c.owner), "slots": c.slots, "changed_tokens": c.changed_tokens,
               "first_changed": c.first_changed} for c in r.result.causal] if production and r.result else []
    return owners, causal, recalled


def _row(r: Row, p: Policy, o: Outcome | None, prod: Policy, cfg: Settings, owners: list[dict], causal: list[dict],
         recalled: int | None, device: str, show_text: bool, limits) -> dict:
    v, why = verdict(o, r.reason)
    t, f = r.target, cfg.scale
    return {
        "request_id": r.target.request_id, "build": p.name, "builds": p.builds,
        "build_role": "incident" if p.name == prod.name else ("proposal" if not p.is_build else "compared"),
        "first_fixed": p.name == cfg.first_fixed, "account_id": _s(t.account_id), "prefill_node": _s(t.prefill_node),
        "decode_node": _s(t.decode_node), "prompt_tokens": _i(t.prompt_tokens), "verdict": v,
        "http_status": o.http_status if o else None, "stage": o.stage if o else None, "foreign_owners": owners,
        "uninitialised_mass": o.uninitialised_mass if o else None,
        "leaked_tokens": sum(w["tokens"] for w in owners) if o else None,
        "carried_tokens": o.carried_foreign if o else None, "scale": f, "attribution_scale": 1.0,
        "assumptions": _assumptions(r, f, limits, cfg.max_steps), "device": device, "seed": 0, "reason": why,
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
    }


def _s(v) -> str | None:
    return None if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v)


def _i(v) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


__all__ = ["ASSUMPTIONS", "verdict", "tables"]
