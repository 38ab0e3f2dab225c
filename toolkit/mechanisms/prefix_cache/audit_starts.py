"""Prefix caching and the cache salt of every node start, from kvir.mechanisms.prefix_cache.releases (the
wheels' facts): is the prefix cache on, does this build take a `cache_salt`, does the salt reach the key of
every cache tier (the engine's own and a connector's, LMCache), each answer with the evidence it rests on.

The start-up log gives the setting (node_configs.pc_flag: vLLM's resolved config `enable_prefix_caching=`,
SGLang's dump `disable_radix_cache=` / `enable_lmcache=`, vLLM's `non-default args`; pc_connector: the cache
connector); the build gives the default and what the code does with the salt. A start whose build is not
exactly known (no version, or a range of SGLang builds that disagree) gets "unknown", never a guess. Runs
over node_configs rows (one per start, not per log line) and adds COLUMNS to node_configs through
queries/mechanisms/prefix_cache/audit/node_prefix_cache.sql.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from kvir.core.sql import QueryLog, run
from kvir.mechanisms.prefix_cache import MECHANISM
from kvir.mechanisms.prefix_cache.releases import PrefixCacheAnswer, prefix_cache_facts
from kvir.rules.engines import ENGINES

# the node_configs columns this adds, after config_id (the start they belong to)
COLUMNS = ("prefix_caching", "prefix_caching_source", "cache_connector", "salt_accepted", "salt_in_key",
           "salt_honoured", "salt_basis")
_TYPES = {"config_id": pa.int64(), "prefix_caching": pa.bool_(), "salt_accepted": pa.bool_(),
          "salt_in_key": pa.bool_(), "salt_honoured": pa.bool_()}
# connectors whose keys kvir.mechanisms.prefix_cache.releases has read (others leave the salt in their tier unknown)
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


def _caching(r: dict[str, Any], a: PrefixCacheAnswer | None, build: str, src: str) -> tuple[bool | None, str]:
    """Prefix caching on or off for this start, and from what: its own setting, else the build's default."""
    if r["pc_flag"] is not None:
        return bool(r["pc_flag"]), f"line {r['pc_flag_line']} of {src}"
    if a is not None and a.known:
        return a.prefix_cache_on, (f"the default of {build}: {a.on_because.removeprefix('default: ')} (the start-up "
                                   f"evidence shows no setting)")
    return None, ("unknown: the start-up evidence shows no setting and the build is "
                  + (f"{build}, whose code kvir has not read" if build else "not known"))


def _salt(conn: str | None, a: PrefixCacheAnswer | None, build: str) -> dict[str, Any]:
    """What the build (and its cache connector) does with the salt: salt_* columns."""
    if a is None or not a.known:
        why = a.summary if a is not None else (f"{build}: the builds in that range differ" if build else
                                               "no version or build in the start-up evidence")
        return {"salt_basis": f"unknown: {why}"}
    in_key = a.salt_in_key
    note = ""
    if conn and conn not in KNOWN_CONNECTORS:
        in_key, note = None, f"; the {conn} connector's keys: unknown (kvir has not read its code)"
    return {"salt_accepted": a.salt_accepted, "salt_in_key": in_key,
            "salt_honoured": (a.salt_accepted and in_key) if in_key is not None else None,
            "salt_basis": f"{build}: {a.summary}{note}; from the code: {'; '.join(a.evidence)}"}


def infer_start(r: dict[str, Any]) -> dict[str, Any]:
    """The prefix-cache columns (COLUMNS, with config_id) of one node_configs row."""
    src = Path(r["evidence_file"]).name if r["evidence_file"] else "the start-up log"
    a, build = _answer(r, src)
    on, source = _caching(r, a, build, src)
    out: dict[str, Any] = {"config_id": r["config_id"], **{c: None for c in COLUMNS}}
    out.update(prefix_caching=on, prefix_caching_source=source, cache_connector=r["pc_connector"])
    out.update(_salt(r["pc_connector"], a, build))
    return out


def fill_prefix_cache(con, log: QueryLog) -> None:
    """Answer every start's prefix-cache questions and add them to node_configs."""
    cur = con.execute("SELECT config_id, engine, version, version_source, build, build_lo, build_hi, build_open, "
                      "build_evidence, pc_flag, pc_flag_line, pc_connector, evidence_file FROM node_configs")
    names = [d[0] for d in cur.description]
    rows = [infer_start(dict(zip(names, t))) for t in cur.fetchall()]
    table = pa.table({c: pa.array([r[c] for r in rows], _TYPES.get(c, pa.string())) for c in ("config_id", *COLUMNS)})
    con.register("audit_prefix_rows", table)
    try:
        run(con, "audit/node_prefix_cache", inputs={"rows": "audit_prefix_rows"}, log=log, mechanism=MECHANISM.folder)
    finally:
        con.unregister("audit_prefix_rows")
