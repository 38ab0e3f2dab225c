"""The prefix-cache mechanism's spec section: [prefix_cache], what the responders know of the shared cache.

    [incident]
    mechanism = "prefix-cache"

    [prefix_cache]
    instances = ["vllm-0", "vllm-1"]    # the instances (nodes) that had prefix caching on; absent: unknown
    isolation = "salt"                  # what was meant to isolate tenants: "salt" (the caller's cache_salt),
                                        # "gateway-salt" (a gateway set it per tenant), "none", or "unknown"
    salt_field = "cache_salt"           # the request field that carries the salt
    lifetime_s = 3600                   # the longest a block can stay cached, if known (a bound, not a guess)
    block_tokens = 16                   # the cache's block size, if known (hits are whole blocks)
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kvir.spec.mechanism import SpecContext

ISOLATIONS = ("salt", "gateway-salt", "none", "unknown")
KEYS = {"instances", "isolation", "salt_field", "lifetime_s", "block_tokens"}

TEMPLATE = '''\
mechanism = "prefix-cache"                 # a prefix cache served one tenant's cached blocks to another
# engine = "vllm"                          # sglang, vllm or unknown; unset: taken from the logs

[prefix_cache]                             # what you know of the shared cache; leave out what you do not
instances = ["vllm-0"]                     # the instances (node names in your logs) with prefix caching on;
                                           # unset: every instance the logs name
isolation = "salt"                         # what was meant to keep tenants apart: "salt" (the caller's
                                           # cache_salt), "gateway-salt" (a gateway set it per tenant),
                                           # "none", or "unknown"
salt_field = "cache_salt"                  # the request field that carries the salt
# lifetime_s = 3600                        # the longest a cached block can live, if you can bound it: a
                                           # tenant's own request older than this cannot explain a hit;
                                           # unset: unbounded (any earlier request could)
# block_tokens = 16                        # the cache's block size in tokens (hits are whole blocks)

# Triage needs each response's cached prompt tokens (usage.prompt_tokens_details.cached_tokens of the
# bodies, vLLM with --enable-prompt-tokens-details; SGLang's cached_tokens; a gateway's cached-token field)
# and its tenant (account). Requests whose logs carry no count are counted "cannot decide", never clean.

'''

SOURCES_EXAMPLE = '''\
#
# [[sources]]                       # response bodies saved by a client or gateway, with the tenant beside them
# path = "responses.jsonl"
# format = "generic-jsonl"
# node = "vllm-0"                   # the instance that served them, when the file does not say
# [sources.columns]
# request_id = "body.id"
# ts = "body.created"
# account_id = "tenant"
# model = "body.model"
# prompt_tokens = "body.usage.prompt_tokens"
# cached_tokens = "body.usage.prompt_tokens_details.cached_tokens"
'''


@dataclass(frozen=True)
class PrefixCacheParams:
    """[prefix_cache]: what the responders know of the shared cache. None / () / "unknown" is not knowing."""

    instances: tuple[str, ...] = ()
    isolation: str = "unknown"
    salt_field: str = "cache_salt"
    lifetime_s: int | None = None
    block_tokens: int | None = None

    @property
    def instances_known(self) -> bool:
        return bool(self.instances)


class PrefixCacheSpec:
    section = "prefix_cache"
    template = TEMPLATE
    title_example = "The cache salt does not reach the prefix cache's block keys"
    sources_example = SOURCES_EXAMPLE

    def parse(self, table: dict[str, Any] | None, ctx: SpecContext) -> PrefixCacheParams:
        """[prefix_cache], every key checked."""
        err = ctx.err
        if table is None:
            return PrefixCacheParams()
        if not isinstance(table, dict):
            raise err("prefix_cache", "expected a table")
        for k in table:
            if k not in KEYS:
                raise err("prefix_cache." + k, f"unknown key; expected one of {', '.join(sorted(KEYS))}")
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
        return PrefixCacheParams(tuple(i.strip() for i in inst), iso, salt.strip(),
                                 _opt_positive(table, "lifetime_s", "seconds", err),
                                 _opt_positive(table, "block_tokens", "tokens", err))

    def engine(self, params: PrefixCacheParams) -> str | None:
        return None

    def record(self, params: PrefixCacheParams) -> dict[str, Any]:
        return {**asdict(params), "instances": list(params.instances)}

    def restore(self, record: dict[str, Any]) -> PrefixCacheParams:
        return PrefixCacheParams(tuple(record.get("instances") or ()), record.get("isolation", "unknown"),
                                 record.get("salt_field", "cache_salt"), record.get("lifetime_s"),
                                 record.get("block_tokens"))


def _opt_positive(table: dict, key: str, unit: str, err) -> int | None:
    v = table.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise err("prefix_cache." + key, f"expected a positive whole number of {unit}, got {v!r}")
    return v


PART = PrefixCacheSpec()
