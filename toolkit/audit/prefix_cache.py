"""Prefix caching and the cache salt of every node start, from kvir.rules.prefix_cache (the wheels' facts):
is the prefix cache on, does this build take a `cache_salt`, does the salt reach the key of every cache tier
(the engine's own and a connector's, LMCache), each answer with the evidence it rests on.

The start-up log gives the setting (vLLM's resolved config `enable_prefix_caching=`, SGLang's dump
`disable_radix_cache=` / `enable_lmcache=`, vLLM's `non-default args`); the build gives the default and what
the code does with the salt. A start whose build is not exactly known (no version, or a range of SGLang
builds that disagree) gets "unknown", never a guess. Runs over node_configs rows (one per start) and writes
back through queries/audit/node_prefix_cache.sql.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from kvir.core.sql import QueryLog, run
from kvir.rules.engines import ENGINES
from kvir.rules.prefix_cache import PrefixCacheAnswer, prefix_cache_facts

COLUMNS = ["config_id", "prefix_caching", "prefix_caching_source", "cache_connector", "salt_accepted",
           "salt_in_key", "salt_honoured", "salt_basis"]
# connectors whose keys kvir.rules.prefix_cache has read (others leave the salt in their tier unknown)
KNOWN_CONNECTORS = {"lmcache": "lmcache", "LMCacheMPConnector": "lmcache-mp"}


def _label(engine: str | None) -> str:
    return ENGINES[engine].label if engine in ENGINES else (engine or "unknown engine")


def _flags(r: dict[str, Any]) -> dict[str, Any]:
    f: dict[str, Any] = {}
    if r["engine"] == "vllm":
        if r["pc_flag"] is not None:
            f["enable_prefix_caching"] = bool(r["pc_flag"])
        if r["pc_connector"]:
            f["kv_transfer_config"] = r["pc_connector"]
    elif r["engine"] == "sglang":
        if r["pc_flag"] is not None:
            f["disable_radix_cache"] = not r["pc_flag"]
        if r["pc_connector"] == "lmcache":
            f["enable_lmcache"] = True
    return f


def _exact_build(r: dict[str, Any]) -> str | None:
    """The build the table can be asked about: an exact version, or a range whose ends answer alike."""
    if r["build_lo"] and r["build_lo"] == r["build_hi"]:
        return r["build_lo"]
    if r["engine"] == "vllm" and r["version"]:
        return r["version"]
    return None


def _answer(r: dict[str, Any], src: str) -> tuple[PrefixCacheAnswer | None, str]:
    """The table's answer for this start and where its build comes from ('' when no build is known)."""
    build = _exact_build(r)
    if build is None and r["engine"] == "sglang" and r["build_lo"] and r["build_hi"] and not r["build_open"]:
        lo, hi = (prefix_cache_facts("sglang", v, _flags(r)) for v in (r["build_lo"], r["build_hi"]))
        same = (lo.known and hi.known and (lo.prefix_cache_on, lo.salt_accepted, lo.salt_in_key)
                == (hi.prefix_cache_on, hi.salt_accepted, hi.salt_in_key))
        return (lo if same else None), f"builds {r['build']} ({r['build_evidence']})"
    if build is None:
        return None, ""
    where = r["build_evidence"] or r["version_source"] or "the inventory"
    if where.startswith("log line"):
        where += f" of {src}"
    return prefix_cache_facts(r["engine"] or "", build, _flags(r)), f"{_label(r['engine'])} {build} ({where})"


def infer_start(r: dict[str, Any]) -> dict[str, Any]:
    """Prefix-cache columns of one node_configs row (see COLUMNS)."""
    out: dict[str, Any] = {c: None for c in COLUMNS}
    out["config_id"] = r["config_id"]
    src = Path(r["evidence_file"]).name if r["evidence_file"] else "the start-up log"
    conn = r["pc_connector"]
    out["cache_connector"] = conn
    a, build = _answer(r, src)
    if r["pc_flag"] is not None:
        out["prefix_caching"] = bool(r["pc_flag"])
        out["prefix_caching_source"] = f"line {r['pc_flag_line']} of {src}"
    elif a is not None and a.known:
        out["prefix_caching"] = a.prefix_cache_on
        out["prefix_caching_source"] = (f"the default of {build}: {a.on_because.removeprefix('default: ')} (the start-up "
                                        f"evidence shows no setting)")
    else:
        out["prefix_caching_source"] = ("unknown: the start-up evidence shows no setting and the build is "
                                        + (f"{build}, whose code kvir has not read" if build else "not known"))
    if a is None or not a.known:
        why = a.summary if a is not None else (f"{build}: the builds in that range differ" if build else
                                               "no version or build in the start-up evidence")
        out["salt_basis"] = f"unknown: {why}"
        return out
    in_key = a.salt_in_key
    note = ""
    if conn and conn not in KNOWN_CONNECTORS:
        in_key, note = None, f"; the {conn} connector's keys: unknown (kvir has not read its code)"
    out.update(salt_accepted=a.salt_accepted, salt_in_key=in_key,
               salt_honoured=(a.salt_accepted and in_key) if in_key is not None else None,
               salt_basis=f"{build}: {a.summary}{note}; from the code: {'; '.join(a.evidence)}")
    return out


def fill_prefix_cache(con, log: QueryLog) -> None:
    """Answer every start's prefix-cache questions and write them into node_configs."""
    cur = con.execute("SELECT config_id, engine, version, version_source, build, build_lo, build_hi, build_open, "
                      "build_evidence, pc_flag, pc_flag_line, pc_connector, evidence_file FROM node_configs")
    names = [d[0] for d in cur.description]
    rows = [infer_start(dict(zip(names, t))) for t in cur.fetchall()]
    types = {"config_id": pa.int64(), "prefix_caching": pa.bool_(), "salt_accepted": pa.bool_(),
             "salt_in_key": pa.bool_(), "salt_honoured": pa.bool_()}
    table = pa.table({c: pa.array([r[c] for r in rows], types.get(c, pa.string())) for c in COLUMNS})
    con.register("audit_prefix_rows", table)
    try:
        run(con, "audit/node_prefix_cache", inputs={"rows": "audit_prefix_rows"}, log=log)
    finally:
        con.unregister("audit_prefix_rows")
