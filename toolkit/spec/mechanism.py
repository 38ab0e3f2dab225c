"""The exposure mechanism an incident names, and its parameters.

A response carries another tenant's KV in more than one way; the spec says which, and every stage (triage,
audit, replay, the documents) takes its questions and its wording from that choice:

    oversized-prompt   a prompt longer than the engine can hold is served instead of refused, and decode
                       reads KV pages nobody wrote for it. Parameters: [trigger] (pool, context, rule).
    prefix-cache       a prefix cache shared across tenants serves one tenant's cached blocks to another
                       (a cache salt that was never set, or never reached the cache key). Parameters:
                       [prefix_cache] below.

    [incident]
    mechanism = "prefix-cache"          # default "oversized-prompt"

    [prefix_cache]
    instances = ["vllm-0", "vllm-1"]    # the instances (nodes) that had prefix caching on; absent: unknown
    isolation = "salt"                  # what was meant to isolate tenants: "salt" (the caller's cache_salt),
                                        # "gateway-salt" (a gateway set it per tenant), "none", or "unknown"
    salt_field = "cache_salt"           # the request field that carries the salt
    lifetime_s = 3600                   # the longest a block can stay cached, if known (a bound, not a guess)
    block_tokens = 16                   # the cache's block size, if known (hits are whole blocks)
"""
from __future__ import annotations

from dataclasses import dataclass

OVERSIZED_PROMPT = "oversized-prompt"
PREFIX_CACHE = "prefix-cache"
MECHANISMS = (OVERSIZED_PROMPT, PREFIX_CACHE)
ISOLATIONS = ("salt", "gateway-salt", "none", "unknown")
PREFIX_CACHE_KEYS = {"instances", "isolation", "salt_field", "lifetime_s", "block_tokens"}


@dataclass(frozen=True)
class PrefixCacheSpec:
    """[prefix_cache]: what the responders know of the shared cache. None / () / "unknown" is not knowing."""

    instances: tuple[str, ...] = ()
    isolation: str = "unknown"
    salt_field: str = "cache_salt"
    lifetime_s: int | None = None
    block_tokens: int | None = None

    @property
    def instances_known(self) -> bool:
        return bool(self.instances)


def parse_mechanism(value, err) -> str:
    if value is None:
        return OVERSIZED_PROMPT
    if value not in MECHANISMS:
        raise err("incident.mechanism", f"expected one of {', '.join(repr(m) for m in MECHANISMS)}, got {value!r}")
    return value


def parse_prefix_cache(table, err) -> PrefixCacheSpec:
    """[prefix_cache], every key checked (err(key, message) builds the SpecError)."""
    if table is None:
        return PrefixCacheSpec()
    if not isinstance(table, dict):
        raise err("prefix_cache", "expected a table")
    for k in table:
        if k not in PREFIX_CACHE_KEYS:
            raise err("prefix_cache." + k, f"unknown key; expected one of {', '.join(sorted(PREFIX_CACHE_KEYS))}")
    inst = table.get("instances", [])
    if isinstance(inst, str):
        inst = [inst]
    if not isinstance(inst, list) or not all(isinstance(i, str) and i.strip() for i in inst):
        raise err("prefix_cache.instances", 'expected a list of instance (node) names, e.g. ["vllm-0"]')
    iso = table.get("isolation", "unknown")
    if iso not in ISOLATIONS:
        raise err("prefix_cache.isolation", f"expected one of {', '.join(repr(i) for i in ISOLATIONS)}, got {iso!r}")
    salt = table.get("salt_field", "cache_salt")
    if not isinstance(salt, str) or not salt.strip():
        raise err("prefix_cache.salt_field", "expected a non-empty field name, e.g. \"cache_salt\"")
    return PrefixCacheSpec(tuple(i.strip() for i in inst), iso, salt.strip(),
                           _opt_positive(table, "lifetime_s", "seconds", err),
                           _opt_positive(table, "block_tokens", "tokens", err))


def _opt_positive(table: dict, key: str, unit: str, err) -> int | None:
    v = table.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise err("prefix_cache." + key, f"expected a positive whole number of {unit}, got {v!r}")
    return v
