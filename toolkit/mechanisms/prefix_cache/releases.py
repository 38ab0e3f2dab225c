"""Prefix caching and cache salts per engine release, from releases.toml beside it (read from the
wheels): is the prefix cache on, does the engine take a `cache_salt`, and does the salt reach every cache
tier's key, with the evidence for each answer.

    from kvir.mechanisms.prefix_cache.releases import prefix_cache_facts
    a = prefix_cache_facts("vllm", "0.9.1", route="completions")
    a.prefix_cache_on, a.salt_accepted, a.salt_in_key     # True, False (chat only in 0.9.x), True
    prefix_cache_facts("sglang", "0.5.18", {"enable_lmcache": True}).salt_honoured   # False: LMCache keys on tokens
    prefix_cache_facts("vllm", "0.32.0", ["--no-enable-prefix-caching"]).prefix_cache_on   # False

`flags` are the server's arguments: a mapping of names (enable_prefix_caching, disable_radix_cache,
enable_lmcache, kv_transfer_config; dashes or underscores) to values, or command-line tokens. A version
newer than the newest release read is taken to behave like the last row (`assumed` says so); an older one,
or an engine kvir has not read, gets None answers ("unknown"), never a guess.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

PATH = Path(__file__).with_name("releases.toml")
ROUTES = ("completions", "chat")
_V = re.compile(r"^\s*v?(\d+(?:\.\d+)*?)(?:\.?(post|rc|dev|a|b)(\d*))?(?:\+\S*)?\s*$", re.I)


def version_key(v: str | None) -> tuple | None:
    """Numeric parts padded to four (vLLM has 0.10.1.1), then 0 pre-release / 1 release / 2 post."""
    m = _V.match(str(v or "").split("==")[-1].removeprefix("vllm-").removeprefix("sglang-"))
    if not m:
        return None
    nums = [int(x) for x in m.group(1).split(".")][:4]
    stage = 1 if not m.group(2) else (2 if m.group(2).lower() == "post" else 0)
    return (*nums, *([0] * (4 - len(nums))), stage, int(m.group(3) or 0))


@dataclass(frozen=True)
class Row:
    kind: str                       # engine | connector
    engine: str
    first: str
    last: str | None
    values: dict[str, Any]

    def covers(self, v: str) -> bool:
        k = version_key(v)
        return (k is not None and version_key(self.first) <= k
                and (self.last is None or k[:4] <= version_key(self.last)[:4]))      # point releases of last

    @property
    def evidence(self) -> tuple[str, ...]:
        return tuple(f"{e.get('package', self.engine)} {e['file']} ({e['function']})" for e in self.values["evidence"])


@dataclass(frozen=True)
class PrefixCacheAnswer:
    engine: str
    version: str
    known: bool                          # a row read from that engine's code covers the version
    assumed: bool = False                # newer than every release read: the last row's answer, assumed
    prefix_cache_on: bool | None = None
    on_because: str = ""
    salt_routes: tuple[str, ...] = ()
    salt_accepted: bool | None = None    # on the route asked (any route when none was asked)
    salt_in_key: bool | None = None      # the engine's cache and the connector's tier together
    connector: str | None = None
    summary: str = ""
    evidence: tuple[str, ...] = ()

    @property
    def salt_honoured(self) -> bool | None:
        """A salt sent on that route keeps tenants apart in every cache tier (None: unknown)."""
        if self.salt_accepted is None or self.salt_in_key is None:
            return None
        return self.salt_accepted and self.salt_in_key


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    raw = tomllib.loads(PATH.read_text())
    rows = [Row(kind, r["engine"], r["first"], r.get("last"), r) for kind in ("engine", "connector") for r in raw[kind]]
    return {"sources": raw["sources"], "rows": rows}


def _flags(flags: Mapping[str, Any] | Iterable[str] | None) -> dict[str, Any]:
    if flags is None:
        return {}
    if isinstance(flags, Mapping):
        items = list(flags.items())
    else:
        items, toks = [], list(flags)
        for i, t in enumerate(toks):
            if t.startswith("--"):
                name, eq, val = t.partition("=")
                nxt = toks[i + 1] if not eq and i + 1 < len(toks) and not toks[i + 1].startswith("--") else None
                items.append((name, val if eq else (nxt if nxt is not None else True)))
    return {str(k).lstrip("-").replace("-", "_").lower(): v for k, v in items}


def _truthy(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() in ("1", "true", "yes", "on"))


def _on(engine: str, row: Row, f: dict[str, Any]) -> tuple[bool, str]:
    if engine == "vllm":
        if "no_enable_prefix_caching" in f and _truthy(f["no_enable_prefix_caching"]):
            return False, "--no-enable-prefix-caching"
        if "enable_prefix_caching" in f and f["enable_prefix_caching"] is not None:
            on = _truthy(f["enable_prefix_caching"])
            return on, "--enable-prefix-caching" if on else "enable_prefix_caching false"
    if engine == "sglang" and "disable_radix_cache" in f:
        off = _truthy(f["disable_radix_cache"])
        return not off, "--disable-radix-cache" if off else "disable_radix_cache false"
    return bool(row.values["default_on"]), f"default: {row.values['default_rule']}"


def _connector(engine: str, f: dict[str, Any]) -> str | None:
    if engine == "sglang" and _truthy(f.get("enable_lmcache")):
        return "lmcache"
    if engine == "vllm" and "LMCacheMPConnector" in str(f.get("kv_transfer_config") or ""):
        return "lmcache-mp"
    return None


def prefix_cache_facts(engine: str, version: str, flags: Mapping[str, Any] | Iterable[str] | None = None, *,
                       route: str | None = None) -> PrefixCacheAnswer:
    """What the code of `engine` `version` does with prefix caching and cache salts, under `flags`."""
    eng = engine.strip().lower()
    t = table()
    src = t["sources"].get(eng)
    rows = [r for r in t["rows"] if r.engine == eng]
    if src is None or version_key(version) is None:
        return PrefixCacheAnswer(eng, version, False, summary=f"unknown: kvir has not read {engine} {version}'s code")
    k = version_key(version)
    assumed = k[:4] > version_key(src["newest_read"])[:4]
    row = next((r for r in rows if r.kind == "engine" and r.covers(version)), None)
    if row is None:
        return PrefixCacheAnswer(eng, version, False, summary=f"unknown: {engine} {version} is older than every release "
                                 f"kvir read ({src['read'][0]}-{src['newest_read']})")
    f = _flags(flags)
    on, because = _on(eng, row, f)
    routes = tuple(row.values["salt_routes"])
    accepted = (route in routes) if route else bool(routes)
    in_key, evidence, summary = bool(row.values["salt_in_key"]), row.evidence, row.values["summary"]
    conn = _connector(eng, f)
    if conn:
        crow = next((r for r in rows if r.kind == "connector" and r.values["connector"] == conn and r.covers(version)), None)
        if crow is None:
            in_key, summary = None, summary + f"; the {conn} connector's keys in {engine} {version}: unknown"
        else:
            in_key = in_key and bool(crow.values["salt_in_key"])
            evidence, summary = evidence + crow.evidence, summary + f"; {conn}: {crow.values['summary']}"
    return PrefixCacheAnswer(eng, version, True, assumed, on, because, routes, accepted, in_key, conn,
                             summary + (f" (assumed: newer than {src['newest_read']}, the newest release read)"
                                        if assumed else ""), evidence)


__all__ = ["PrefixCacheAnswer", "prefix_cache_facts", "table", "version_key", "ROUTES"]
