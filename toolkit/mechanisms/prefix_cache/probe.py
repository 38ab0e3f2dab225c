"""The prefix-cache mechanism's probe part (hookspec: kvir.probe.plugin.ProbePart): is one tenant's prompt
served from cache blocks another tenant's request wrote (the prefix-isolation check), and, as a statistical
hint only, do the tenants' timings show one cache (the timing check).

The timing check is this mechanism's because what it measures is a prefix-cache hit (a repeated prompt
served faster); prefix-isolation falls back on the same paired test where the server reports no cached
tokens. It never decides a run's verdict on its own.
"""
from __future__ import annotations

from kvir.mechanisms.prefix_cache.probe_isolation import prefix_isolation_check
from kvir.mechanisms.prefix_cache.probe_timing import timing_check
from kvir.probe.config import ProbeOptions
from kvir.probe.learn import ServerFacts
from kvir.probe.plugin import PlanPhase, ProbeCheck
from kvir.probe.rules import Rule

RULES = (
    Rule("KVIR-P005", "shared-prefix-cache-timing", "medium", "Timing suggests a prefix cache shared across tenants",
         "A paired timing test found another tenant's prompt served faster than a fresh one. A statistical "
         "indication, never proof on its own; isolate the prefix cache per tenant (cache salt) if unintended."),
    Rule("KVIR-P008", "cross-tenant-prefix-cache-hit", "high", "Another tenant's prompt was served from the cache",
         "A prompt one tenant sent was served to another tenant from the prefix cache (cached_tokens above what a "
         "fresh prompt gets): the tenants share KV blocks, and each can learn what the other sent. Key the "
         "cache per tenant: a cache salt the gateway injects (never one the caller chooses), and check that the "
         "salt reaches every cache tier's key (the engine's and its connectors')."),
)


def _timing_plan(opts: ProbeOptions, facts: ServerFacts) -> PlanPhase:
    return PlanPhase(4 * opts.timing_pairs, f"{opts.timing_pairs} pairs: warm (A), then cross (B), same (A), cold (B) "
                     "in random order", tokenize=2 * opts.timing_pairs)


def _isolation_plan(opts: ProbeOptions, facts: ServerFacts) -> PlanPhase:
    salt = "its own cache_salt" if opts.cache_salt == "per-tenant" else "no cache_salt"
    return PlanPhase(4 * opts.prefix_rounds,
                     f"{opts.prefix_rounds} round(s): a fresh prompt (B), prime and repeat (A), A's prompt (B); "
                     f"each tenant with {salt}; timing pairs if the server reports no cached tokens",
                     tokenize=2 * opts.prefix_rounds)


TIMING = ProbeCheck(
    "timing", "KVIR-P102", "No prefix-cache timing signal between tenants",
    "timing (--timing): a paired prefix-cache timing test between the tenants, reported with its statistics; "
    "never proof on its own.",
    timing_check, _timing_plan, decides=False,
    indication="the timing check suggests a prefix cache shared across tenants")
PREFIX_ISOLATION = ProbeCheck(
    "prefix-isolation", "KVIR-P103", "No tenant's prompt is served from blocks another tenant's request wrote",
    "prefix-isolation (--checks prefix-isolation): tenant A primes a fresh prompt and repeats it (the repeat must "
    "hit the cache, else inconclusive); tenant B sends the same prompt and must get no more cached tokens than a "
    "fresh prompt (usage.prompt_tokens_details.cached_tokens; paired timing where the server does not report it, "
    "never proof). --cache-salt per-tenant sends each tenant its own cache_salt (the engine's salt isolation); "
    "none (default) sends none (the deployment as its callers use it).",
    prefix_isolation_check, _isolation_plan)


class PrefixCacheProbe:
    checks = (TIMING, PREFIX_ISOLATION)
    rules = RULES


PART = PrefixCacheProbe()
