"""The prefix-cache mechanism's triage part (hookspec: kvir.triage.plugin.TriagePart): which responses were
served from cached blocks another tenant's request may have written (queries/mechanisms/prefix_cache/
triage/; the rule is stated in its hits.sql).

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
Its queries are DuckDB's only (an ASOF join, temporary tables): no Spark twins yet.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvir.triage.plugin import Shown, Table

_QUERIES = ("triage/hits", "triage/listed", "triage/affected", "triage/excluded", "triage/accounts",
            "triage/nodes", "triage/counts")
_COUNTS = ("instance", "tenant", "requests", "cache_hits", "affected", "possibly_affected", "clean",
           "cannot_decide", "not_served", "sources_without_cached_tokens")


@dataclass(frozen=True)
class PrefixCacheRule:
    """The rule's wording and parameters (kvir.triage.plugin.TriageRule)."""

    lifetime_s: int | None
    instances: tuple[str, ...]

    def describe(self) -> str:
        life = f"within {self.lifetime_s:,} s" if self.lifetime_s else "at any earlier time (cache lifetime unknown)"
        return ("prefix cache: served with cached prompt tokens that no earlier request of the same tenant on the "
                f"same instance could have written {life}")

    def other(self) -> None:
        return None          # one rule: nothing is counted beside it

    def query_params(self) -> dict[str, Any]:
        return {"lifetime_s": self.lifetime_s, "instances": list(self.instances)}


@dataclass(frozen=True)
class InstanceTenant:
    """One row of prefix_cache_counts: the verdicts of one tenant's requests on one instance."""

    instance: str
    tenant: str | None
    requests: int
    cache_hits: int
    affected: int
    possibly_affected: int
    clean: int
    cannot_decide: int
    not_served: int
    sources_without_cached_tokens: list[str]


@dataclass(frozen=True)
class PrefixCacheSummary:
    """summary.json's "prefix_cache": the verdicts per instance and tenant, and the formats that carried no
    cached_tokens (their requests cannot be decided)."""

    by_instance_tenant: list[InstanceTenant]
    formats_without_cached_tokens: list[str]


class PrefixCacheTriage:
    spark = False
    listed = ("affected", "possibly-affected")
    summary_queries = ("triage/summary_verdicts",)
    exports = ("prefix_cache_counts",)

    def queries(self, pool_in_effect: bool) -> tuple[str, ...]:
        return _QUERIES      # start-up logs say which starts had prefix caching on: kvir audit reads them

    def rule(self, spec, engine) -> PrefixCacheRule:
        return PrefixCacheRule(spec.params.lifetime_s, spec.params.instances)

    def summary(self, case, rule: PrefixCacheRule, pool_in_effect: bool) -> PrefixCacheSummary:
        rows = case.con.execute(f"SELECT {', '.join(_COUNTS)} FROM prefix_cache_counts").fetchall()
        per = [InstanceTenant(*r[:-1], list(r[-1] or [])) for r in rows]
        without = sorted({f for r in per for f in r.sources_without_cached_tokens})
        return PrefixCacheSummary(per, without)

    def present(self, s: dict[str, Any], own: PrefixCacheSummary) -> Shown:
        rows: list[tuple[str, Any]] = [
            ("served with cached prompt tokens", s.get("cache_hits", 0)),
            ("affected (no same-tenant request could have written them)", s["affected"]),
            ("possibly affected (the same tenant could, and so could another)", s["possibly_affected"]),
            ("cannot decide (no cached_tokens, no account, or outcome unknown)", s["cannot_decide"]),
            ("accounts affected or possibly affected (known ids)", s["affected_accounts"]),
            ("excluded accounts' responses", s["excluded"]),
        ]
        if own.formats_without_cached_tokens:
            rows.append(("formats that carry no cached_tokens (cannot decide)",
                         ", ".join(own.formats_without_cached_tokens)))
        per = [r for r in own.by_instance_tenant if r.cache_hits or r.cannot_decide]
        tables = [Table("Prefix cache per instance and tenant (prefix_cache_counts)",
                        ("instance", "tenant", ("hits", "right"), ("affected", "right"), ("possibly", "right"),
                         ("cannot decide", "right")),
                        [[r.instance, r.tenant or "-", r.cache_hits, r.affected, r.possibly_affected, r.cannot_decide]
                         for r in per], rest="prefix_cache_counts.csv")] if per else []
        return Shown(rows, tables)


PART = PrefixCacheTriage()
