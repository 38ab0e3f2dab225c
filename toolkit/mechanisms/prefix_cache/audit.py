"""The prefix-cache mechanism's audit part (hookspec: kvir.audit.plugin.AuditPart): per node start, prefix
caching on or off and whether its build keeps the cache salt in every cache tier's key (audit_starts, from the
releases table read from the wheels), and what the incident says isolated tenants ([prefix_cache] isolation).
"""
from __future__ import annotations

from typing import Any

from kvir.audit.rules import Rule
from kvir.core.sql import QueryLog, run
from kvir.mechanisms.prefix_cache import MECHANISM
from kvir.mechanisms.prefix_cache.audit_starts import COLUMNS, fill_prefix_cache
from kvir.mechanisms.prefix_cache.spec import PrefixCacheParams

RULES: tuple[Rule, ...] = (
    Rule("KVA013", "prefix-cache-salt-not-honoured", "Prefix cache shared: the build does not key every cache tier on the salt",
         "high",
         "Run a build whose code keys every cache tier on the salt (kvir.mechanisms.prefix_cache.releases names "
         "them: e.g. vLLM >= 0.10.0 on both routes, no LMCache tier that drops it), or turn prefix caching off "
         "(--no-enable-prefix-caching, --disable-radix-cache) until then.",
         "A prefix cache serves a prompt's leading blocks from KV computed for an earlier prompt with the same tokens; "
         "only a salt in the block key keeps tenants apart. What each release does is read from its code "
         "(toolkit/mechanisms/prefix_cache/releases.toml: vLLM takes cache_salt on chat from 0.9.0 and on completions "
         "from 0.10.0 and puts it in the first block's hash; SGLang's LMCache tier 0.5.11-0.5.20 keys stored blocks on "
         "tokens alone; vLLM's LMCache MP connector 0.12.0-0.19.0 too). Prefix caching on or off comes from the "
         "start-up log (vLLM's resolved config enable_prefix_caching=, SGLang's disable_radix_cache= / enable_lmcache=), "
         "else the build's default. Unknown when the build is not known: never assumed honoured.",
         MECHANISM.name),
    Rule("KVA014", "prefix-cache-caller-chosen-salt", "Tenants isolated by a salt the caller chooses, or by nothing",
         "high",
         "Set the cache salt at the gateway from the authenticated tenant (replacing any salt in the request body), "
         "and record that as [prefix_cache] isolation = \"gateway-salt\".",
         "The engines take cache_salt as an ordinary request field: no route derives it from the caller's identity "
         "(kvir.mechanisms.prefix_cache.releases). A salt the caller sends isolates tenants only from callers who do "
         "not know it; one tenant that sends another's salt is served that tenant's cached prefix (measured on a real "
         "vLLM-CPU server: tests/fixtures/real/vllm-*-cpu-prefix-cache, request 9). Fails when incident.toml says "
         "tenants were isolated by their own salt (isolation = \"salt\") or by nothing (\"none\", critical); unknown "
         "when it does not say; a gateway that sets the salt per tenant passes.",
         MECHANISM.name),
)


class PrefixCacheAudit:
    rules = RULES
    start_columns = COLUMNS

    def annotate(self, con, log: QueryLog) -> None:
        fill_prefix_cache(con, log)

    def findings(self, con, params: PrefixCacheParams | None, log: QueryLog) -> None:
        """KVA013-KVA014 (queries/mechanisms/prefix_cache/audit/findings.sql); without [prefix_cache] the
        isolation is "unknown" (never assumed a gateway salt)."""
        pc = params or PrefixCacheParams()
        run(con, "audit/findings", {"isolation": pc.isolation, "salt_field": pc.salt_field}, log=log,
            mechanism=MECHANISM.folder)

    def start_settings(self, start: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
        if "prefix_caching" not in start:          # node_configs from before this mechanism's audit part ran
            return ()
        return (("prefix cache", start["prefix_caching"]), ("salt in the cache key", start["salt_honoured"]))


PART = PrefixCacheAudit()
