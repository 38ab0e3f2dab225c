"""The prefix-cache replay: re-run the instance's requests, in triage's order, through a block cache keyed as
vLLM keys its blocks (kvir.replay.block_cache) and say, per affected response, whose blocks it hit.

Each affected response is replayed under both keyings: `salted` (the salt in the first block's key: vLLM's
cache_salt) and `unsalted` (tokens alone: the connector defect). The one whose cached-token counts equal the
logged ones (usage.prompt_tokens_details.cached_tokens) is the keying the deployment ran (build_role
'incident', build_basis 'ran'); without a logged count to compare it is assumed (salted), and says so.

A response is `exposed` when cached blocks another tenant's request wrote cover more of its prompt than its
own tenant's earlier requests (under the same keying) could explain: the tokens beyond that are another
tenant's, and foreign_owners names whose. Reading another tenant's blocks of a prefix the tenant had sent
itself discloses nothing new (`not-reproduced`, its reason names the writer). The evidence must hold the
prompt's token ids (a client's or gateway's capture; vLLM's request log up to 0.11.0): where a response's
does not, it is `inconclusive: no prompt tokens in the evidence`, never a guess from its length. Earlier
requests without token ids are missing from the replayed cache: each result says how many.

Its queries are its own (queries/mechanisms/prefix_cache/replay/: targets with the instance and the cached
tokens, the history, the evidence lines, the token ids in them).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa

from kvir.case.store import Case
from kvir.mechanisms.prefix_cache import MECHANISM
from kvir.mechanisms.prefix_cache.spec import PrefixCacheParams
from kvir.replay.block_cache import CacheRequest, PrefixHit, run_through_cache
from kvir.replay.plugin import ReplayOptions, ReplayOutput
from kvir.replay.results import EXPOSURE_SCHEMA, SCHEMA

KEYINGS = {"salted": "the cache salt in the first block's key (vLLM's cache_salt)",
           "unsalted": "token blocks alone: the salt never reaches the key (the connector defect)"}
NO_TOKENS = "inconclusive: no prompt tokens in the evidence (the logs hold lengths only)"
ASSUMPTIONS = ("Replayed through kvir's prefix cache keyed as vLLM keys its blocks (chained block hashes, full blocks "
               "only, the last prompt token never cached), block size {block} tokens ([prefix_cache] block_tokens), "
               "on the instance's logged requests in triage's order; the cache is unbounded (nothing evicted): the "
               "most a cache of any size could have shared{lifetime}. Token ids and salts are read from the evidence "
               "lines, never stored in the case.{missing}")


@dataclass
class _Req:
    rid: str
    tenant: str
    tokens: list[int] | None
    salt: str | None


def replay(case: Case, params: PrefixCacheParams, options: ReplayOptions) -> ReplayOutput:
    """replay_results and replay_exposure rows for the affected responses of a prefix-cache case (of the
    options, only `limit` applies: there is no device, scale or build to choose)."""
    facts = dict(case.run("replay/incident_facts", fetch="df").itertuples(index=False, name=None))
    targets = case.run("replay/targets", {"limit": options.limit if options.limit is not None else 2**62},
                       fetch="df", mechanism=MECHANISM.folder)
    block = params.block_tokens or 0
    ran = {"scale": 1.0, "device": "cpu", "model": "prefix-cache"}
    if targets.empty:
        return ReplayOutput(pa.Table.from_pylist([], schema=SCHEMA), pa.Table.from_pylist([], schema=EXPOSURE_SCHEMA),
                            {"compared": [], **ran})
    hist = case.run("replay/history", {"models": json.loads(facts.get("model_names") or "[]"),
                                       "until": targets["ts"].max()}, fetch="df", mechanism=MECHANISM.folder)
    reqs = _evidence(case, hist, params.salt_field or "cache_salt")
    runs = {}
    if block:
        for inst, g in hist.groupby("instance", sort=True):
            seq = [reqs[r] for r in g["request_id"] if reqs[r].tokens]
            runs[inst] = {k: _run(seq, block, k) for k in KEYINGS}
    incident, basis = _incident_keying(runs, dict(zip(hist["request_id"], hist["cached_tokens"])))
    res, exp = _rows(targets, hist, reqs, runs, incident, basis, block, params)
    summary = {"block_tokens": block or None, "incident_keying": incident, "keying_basis": basis,
               "compared": sorted({r["build"] for r in res}), **ran}
    return ReplayOutput(pa.Table.from_pylist(res, schema=SCHEMA), pa.Table.from_pylist(exp, schema=EXPOSURE_SCHEMA),
                        summary)


def _rows(targets: pd.DataFrame, hist: pd.DataFrame, reqs: dict[str, _Req], runs: dict, incident: str, basis: str,
          block: int, params: PrefixCacheParams) -> tuple[list[dict], list[dict]]:
    """Per affected response one row per keying (the incident keying's first-class: build_role incident), and
    the exposure under the incident keying."""
    res, exp = [], []
    for t in targets.itertuples(index=False):
        g = hist[hist["instance"] == t.instance]
        before = g[g["ts"] <= t.ts]["request_id"]
        missing = sum(1 for r in before if r != t.request_id and not reqs[r].tokens)
        for keying in KEYINGS:
            row, owners = _result(t, keying, runs.get(t.instance, {}).get(keying), reqs[t.request_id], block,
                                  missing, params)
            row.update(build_role="incident" if keying == incident else "compared",
                       build_basis=basis.split(":")[0] if keying == incident else None,   # ran | assumed
                       build_source=basis if keying == incident else None)
            res.append(row)
            if keying == incident:
                exp += [{"source_account_id": o["account_id"], "source_request_id": o["request_id"],
                         "reader_request_id": t.request_id, "reader_account_id": t.account_id, "build": row["build"],
                         "tokens": o["tokens"], "attention_mass": None} for o in owners]
    return res, exp


def _evidence(case: Case, hist: pd.DataFrame, salt_field: str) -> dict[str, _Req]:
    """Token ids and salt per request, read from its evidence lines: each text file that holds one of them is
    read once, batch by batch (kvir.ingest.lines numbers lines as ingest did), and DuckDB picks the wanted
    lines out of each batch; nothing of it is stored in the case."""
    from kvir.ingest.lines import iter_line_batches

    ev = case.run("replay/evidence", {"request_ids": list(hist["request_id"])}, fetch="df",
                  mechanism=MECHANISM.folder)
    found: dict[str, tuple] = {}
    salt_path = '$."' + salt_field.replace('"', '\\"') + '"'
    for (sid, path, fmt), wanted in ev.groupby(["source_id", "source_file", "format"], sort=True):
        if str(fmt).endswith("parquet"):
            continue                 # columnar rows: no line holds a prompt
        case.con.register("kvir_prefix_wanted", wanted[["request_id", "source_id", "source_line"]])
        try:
            for batch in iter_line_batches(path, text=True):
                lines = pa.Table.from_batches([batch]).append_column(
                    "source_id", pa.array([int(sid)] * batch.num_rows, pa.int32()))
                case.con.register("kvir_prefix_lines", lines)
                got = case.run("replay/token_ids", {"salt_path": salt_path}, fetch="df", mechanism=MECHANISM.folder,
                               inputs={"lines": "kvir_prefix_lines", "wanted": "kvir_prefix_wanted"})
                for rid, ids, salt in got[["request_id", "token_ids", "salt"]].itertuples(index=False):
                    old = found.get(rid, (None, None))
                    ids = [int(x) for x in ids] if hasattr(ids, "__len__") and not isinstance(ids, str) else None
                    found[rid] = (old[0] or ids, old[1] or (salt if isinstance(salt, str) else None))
        except OSError:
            pass                     # the evidence moved: its requests replay as having no tokens
        finally:
            case.con.unregister("kvir_prefix_lines")
            case.con.unregister("kvir_prefix_wanted")
    return {r: _Req(r, a if isinstance(a, str) else "(no account)", *found.get(r, (None, None)))
            for r, a in zip(hist["request_id"], hist["account_id"])}


def _run(seq: list[_Req], block: int, keying: str) -> tuple[dict[str, PrefixHit], dict[str, PrefixHit]]:
    """Per request: its hit under the keying, and under the same keying with only its own tenant's requests
    (each tenant its own cache: what its own earlier prompts explain)."""
    shared = run_through_cache([CacheRequest(r.rid, r.tenant, r.tokens, r.salt) for r in seq], block_size=block,
                                 keying=keying)
    own = run_through_cache([CacheRequest(r.rid, r.tenant, r.tokens, r.tenant + "\0" + (
        (r.salt or "") if keying == "salted" else "")) for r in seq], block_size=block, keying="salted")
    return {h.rid: h for h in shared}, {h.rid: h for h in own}


def _incident_keying(runs: dict, logged: dict) -> tuple[str, str]:
    """The keying whose cached tokens equal the logged counts (most matches; salted on a tie or with none)."""
    score = {k: [0, 0] for k in KEYINGS}
    for by_key in runs.values():
        for k, (shared, _) in by_key.items():
            for rid, h in shared.items():
                n = logged.get(rid)
                if n is not None and not pd.isna(n):
                    score[k][1] += 1
                    score[k][0] += int(h.cached_tokens == int(n))
    best = max(KEYINGS, key=lambda k: (score[k][0], k == "salted"))
    ok, n = score[best]
    if not n:
        return best, "assumed: no replayed request had a logged cached_tokens count to compare"
    return best, (f"ran: the replay's cached tokens equal the logged ones for {ok} of {n} request(s)" if ok == n
                  else f"assumed: the closest keying, the logged cached tokens matched for {ok} of {n} request(s)")


def _result(t, keying: str, run, req: _Req, block: int, missing: int,
            params: PrefixCacheParams) -> tuple[dict, list[dict]]:
    life = params.lifetime_s
    note = (f" {missing} earlier request(s) on the instance have no prompt tokens in the evidence and are not in "
            "the replayed cache." if missing else "")
    row = {"request_id": t.request_id, "build": f"prefix-cache-{keying}", "builds": KEYINGS[keying],
           "first_fixed": False, "account_id": t.account_id, "prefill_node": _s(t.prefill_node),
           "decode_node": _s(t.decode_node), "prompt_tokens": _i(t.prompt_tokens), "foreign_owners": [], "scale": 1.0,
           "assumptions": ASSUMPTIONS.format(block=block or "unknown", missing=note, lifetime=(
               f"; the spec's lifetime bound ({life} s) is triage's, not modelled here" if life else "")),
           "device": "cpu", "seed": 0, "completion_tokens": _i(t.completion_tokens), "model": "prefix-cache",
           "evidence": KEYINGS[keying], "stage": "prefix-cache", "history_requests": None}
    if not block:
        return {**row, "verdict": "inconclusive", "reason": "inconclusive: the cache's block size is not known "
                "(set [prefix_cache] block_tokens in the spec)"}, []
    if not req.tokens or run is None:
        return {**row, "verdict": "inconclusive", "reason": NO_TOKENS}, []
    shared, own = run
    hit, mine = shared[t.request_id], own[t.request_id]
    logged = _i(t.cached_tokens)
    vs = f"replayed {hit.cached_tokens:,} cached token(s); the log says {logged:,}" if logged is not None else ""
    foreign = hit.blocks[len(mine.blocks):]          # blocks beyond what the tenant's own prompts explain
    owners: dict[str, dict] = {}
    for i, w in enumerate(foreign, start=len(mine.blocks)):
        if w.tenant == req.tenant:
            continue
        o = owners.setdefault(w.rid, {"request_id": w.rid, "account_id": w.tenant, "tokens": 0,
                                      "first_token": i * block, "last_token": i * block, "attention_mass": None})
        o["tokens"] += block
        o["last_token"] = (i + 1) * block - 1
    writers = sorted({w.tenant for w in hit.blocks if w.tenant != req.tenant})
    if owners:
        n = sum(o["tokens"] for o in owners.values())
        verdict, why = "exposed", (f"{n:,} cached token(s) from blocks {', '.join(sorted({o['account_id'] for o in owners.values()}))} "
                                   f"wrote, beyond the {mine.cached_tokens:,} its own earlier prompts explain ({vs})")
    elif writers:
        verdict, why = "not-reproduced", (f"read blocks {', '.join(writers)} wrote, of a prefix its own tenant had sent "
                                          f"earlier: nothing it had not sent ({vs})")
    else:
        verdict, why = "not-reproduced", f"served from its own tenant's blocks ({vs})" if hit.cached_tokens else \
            f"no cached blocks under this keying ({vs})"
    row.update(verdict=verdict, reason=why, http_status=200, foreign_owners=list(owners.values()),
               leaked_tokens=sum(o["tokens"] for o in owners.values()), replayed_prompt_tokens=len(req.tokens),
               cached_tokens=hit.cached_tokens)
    return row, list(owners.values())


def _s(v) -> str | None:
    return None if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v)


def _i(v) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


__all__ = ["replay", "KEYINGS", "NO_TOKENS"]
