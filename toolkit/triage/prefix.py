"""Triage for the prefix-cache mechanism: which responses were served from cached blocks another tenant's
request may have written (queries/triage/prefix_cache_*.sql; the rule is stated in prefix_cache_hits.sql).

The evidence is each request's cached prompt-token count, its tenant (account), its instance and its time.
Which log formats carry the count (each read from the producer's code or its real output):

    openai_response   usage.prompt_tokens_details.cached_tokens of the bodies (vLLM with
                      --enable-prompt-tokens-details; OpenAI's own API)
    sglang_json       meta_info.cached_tokens of SGLang's request log
    generic, parquet_typed   a mapped cached_tokens column
    helicone, langfuse, otel_genai, litellm   the gateway's or instrumentation's cached-token field
    vllm              no: vLLM's server log (RequestLogger) prints neither usage nor cached tokens; its
                      "Prefix cache hit rate" stats are an aggregate per interval, never a request's
    nginx, envoy, cloudflare, sglang_text, prometheus ...   no per-request cached count

A request whose evidence carries no count is counted "cannot decide" (per instance and tenant), never clean.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvir.spec.model import IncidentSpec

# the queries of a prefix-cache triage, in order (excluded, accounts and nodes are the common ones)
PREFIX_QUERIES = ("triage/prefix_cache_hits", "triage/prefix_cache_affected", "triage/prefix_cache_excluded",
                  "triage/accounts", "triage/nodes", "triage/prefix_cache_counts")


@dataclass(frozen=True)
class PrefixCacheRule:
    """The rule's wording and parameters, as kvir.rules.trigger.Trigger gives the oversized-prompt one."""

    lifetime_s: int | None
    instances: tuple[str, ...]
    rule: str = "prefix-cache"

    @classmethod
    def of(cls, spec: IncidentSpec) -> "PrefixCacheRule":
        pc = spec.params
        return cls(pc.lifetime_s if pc else None, pc.instances if pc else ())

    def describe(self) -> str:
        life = f"within {self.lifetime_s:,} s" if self.lifetime_s else "at any earlier time (cache lifetime unknown)"
        return ("prefix cache: served with cached prompt tokens that no earlier request of the same tenant on the "
                f"same instance could have written {life}")

    def condition(self) -> str:
        return "cached_tokens > 0 and no same-tenant source"

    def query_params(self) -> dict[str, Any]:
        # no length threshold: triage/aggregate_bounds (prompt histograms) then finds nothing to bound
        return {"lifetime_s": self.lifetime_s, "instances": list(self.instances),
                "rule": "public", "engine": None, "pool_tokens": None, "context_tokens": None}


def prefix_summary(case) -> dict[str, Any]:
    """The summary's mechanism part: counts per instance and tenant (prefix_cache_counts), the formats that
    carried no cached_tokens."""
    con = case.con
    rows = con.execute("SELECT instance, tenant, requests, cache_hits, affected, possibly_affected, clean, "
                       "cannot_decide, not_served, sources_without_cached_tokens FROM prefix_cache_counts").fetchall()
    cols = [d[0] for d in con.description]
    per = [dict(zip(cols, r)) for r in rows]
    without = sorted({f for r in per for f in (r["sources_without_cached_tokens"] or [])})
    return {"mechanism": "prefix-cache", "by_instance_tenant": per, "formats_without_cached_tokens": without}
