"""Two more answers of the releases table (releases.toml beside it) for every node start: how strong the hash
is that names vLLM's cached blocks, and whether the engine and its LMCache connector are a release pair known to
restore the wrong KV. Each answer says what it rests on; an answer the evidence cannot give is None (unknown).

    block_hash("vllm", "0.10.1", None, None)       # builtin: the release's default, weak (CVE-2025-25183)
    block_hash("vllm", "0.32.0", "xxhash", "0")    # weak, and its seed is known (PYTHONHASHSEED set)
    connector_pair("vllm", "0.26.0", "LMCacheMPConnector", "0.5.2")   # True: the pair corrupts

Runs over node_configs rows and adds COLUMNS to them (queries/mechanisms/prefix_cache/audit/node_cache_keys.sql).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pyarrow as pa

from kvir.core.sql import QueryLog, run
from kvir.mechanisms.prefix_cache import MECHANISM
from kvir.mechanisms.prefix_cache.releases import PATH, version_key

COLUMNS = ("block_hash", "block_hash_weak", "block_hash_seed_known", "block_hash_basis", "connector_pair_corrupts",
           "connector_pair_basis")
_TYPES = {"config_id": pa.int64(), "block_hash_weak": pa.bool_(), "block_hash_seed_known": pa.bool_(),
          "connector_pair_corrupts": pa.bool_()}


@dataclass(frozen=True)
class HashAnswer:
    algo: str | None           # the algorithm in use (None: unknown)
    weak: bool | None          # not collision resistant (None: unknown)
    seed_known: bool           # PYTHONHASHSEED is set: the seed of the hash is in the environment
    basis: str                 # where each part comes from


@lru_cache(maxsize=1)
def _tables() -> dict[str, Any]:
    import tomllib

    raw = tomllib.loads(PATH.read_text())
    return {"hash": raw["block_hash"], "weak": raw["block_hash_weak"], "pairs": raw["connector_pair"]}


def _covers(row: dict[str, Any], version: str, first: str = "first", last: str = "last") -> bool:
    k = version_key(version)
    if k is None or k < version_key(row[first]):
        return False
    return row.get(last) is None or k[:4] <= version_key(row[last])[:4]


def _evidence(row: dict[str, Any]) -> str:
    return "; ".join(f"{e.get('package', 'vllm')}{' ' + e['version'] if 'version' in e else ''} {e['file']} "
                     f"({e['function']})" for e in row["evidence"])


def block_hash(engine: str | None, version: str | None, flag: str | None, hashseed: str | None) -> HashAnswer | None:
    """The block hash of a vLLM start (None for an engine whose cache keys are not hashes kvir has read)."""
    if engine != "vllm":
        return None
    seed = hashseed is not None and hashseed.strip() != ""
    row = next((r for r in _tables()["hash"] if version and _covers(r, version)), None)
    if flag:
        algo, source = flag, "set by --prefix-caching-hash-algo"
    elif row is not None:
        algo, source = row["default"], f"the default of vLLM {version} ({_evidence(row)})"
    else:
        why = f"vLLM {version}, older than every release read" if version else "no vLLM version in the evidence"
        return HashAnswer(None, None, seed, f"unknown: no --prefix-caching-hash-algo and {why}")
    weak_why = _tables()["weak"].get(algo)
    seed_text = "; PYTHONHASHSEED is set, so the hash's seed is known to whoever knows the environment" if seed else ""
    basis = f"{algo} ({source}): " + (weak_why or "collision resistant") + seed_text
    return HashAnswer(algo, weak_why is not None, seed, basis)


def connector_pair(engine: str | None, version: str | None, connector: str | None,
                   lmcache: str | None) -> tuple[bool | None, str] | None:
    """Whether this start's engine and LMCache releases are a pair the table lists (True), are not (False), or
    cannot be told apart (None: the LMCache release is not in the evidence); None when no LMCache tier is in use."""
    for pair in _tables()["pairs"]:
        if engine != pair["engine"] or connector not in pair["connectors"]:
            continue
        if not version or not _covers(pair, version, "engine_first", "engine_last"):
            continue
        where = (f"{pair['summary']} (engine: {_evidence(pair)}; LMCache: reported in "
                 f"{', '.join(pair['reports'])}, not reproduced by kvir)")
        if not lmcache:
            return None, f"unknown: vLLM {version} with {connector}, LMCache release not in the evidence; {where}"
        hit = _covers(pair, lmcache, "lmcache_first", "lmcache_last")
        return hit, (f"vLLM {version} + LMCache {lmcache}: " + (where if hit else "not a pair the table lists"))
    return None if connector is None or "LMCache" not in connector else (False, "no pair the table lists")


def infer_start(r: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"config_id": r["config_id"], **{c: None for c in COLUMNS}}
    h = block_hash(r["engine"], r["version"], r["hash_algo"], r["env_hashseed"])
    if h is not None:
        out.update(block_hash=h.algo, block_hash_weak=h.weak, block_hash_seed_known=h.seed_known,
                   block_hash_basis=h.basis)
    pair = connector_pair(r["engine"], r["version"], r["pc_connector"], r["lmcache_version"])
    if pair is not None:
        out.update(connector_pair_corrupts=pair[0], connector_pair_basis=pair[1])
    return out


def fill_cache_keys(con, log: QueryLog) -> None:
    """Answer every start's block-hash and connector-pair questions and add them to node_configs."""
    cur = con.execute("SELECT config_id, engine, version, hash_algo, env_hashseed, pc_connector, lmcache_version "
                      "FROM node_configs")
    names = [d[0] for d in cur.description]
    rows = [infer_start(dict(zip(names, t))) for t in cur.fetchall()]
    table = pa.table({c: pa.array([r[c] for r in rows], _TYPES.get(c, pa.string())) for c in ("config_id", *COLUMNS)})
    con.register("audit_cache_key_rows", table)
    try:
        run(con, "audit/node_cache_keys", inputs={"rows": "audit_cache_key_rows"}, log=log, mechanism=MECHANISM.folder)
    finally:
        con.unregister("audit_cache_key_rows")
