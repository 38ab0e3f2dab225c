"""The prefix-isolation check: does a prefix cache serve one tenant's prompt from KV another tenant computed?

Each round uses three fresh prompts of the same length (random tags: no earlier request shares them):

    1. B sends Q          the baseline: what any fresh prompt gets from the cache (a shared chat template)
    2. A sends P          primes P's blocks
    3. A sends P again    the control: the same tenant's repeat must hit, or the test cannot see anything
    4. B sends P          the cross test: it must get no more than the baseline

judged from usage.prompt_tokens_details.cached_tokens where the server reports it (vLLM with
--enable-prompt-tokens-details, SGLang with --enable-cache-report):

    exposed        B got more cached tokens on A's prompt than on a fresh one (KVIR-P008, with both sides'
                   request ids): blocks A's request wrote were served to B
    not exposed    in every round A's repeat hit and B's copy got no more than the baseline
    inconclusive   a round whose control did not hit (prefix caching off, or too short a prompt for the
                   engine's block size), or a request without an answer

Salts (--cache-salt): `none` sends none, testing the deployment as its callers use it (a gateway that
injects per-tenant salts passes); `per-tenant` sends a fresh random `cache_salt` per tenant, testing the
engine's own salt isolation (what such a gateway would do). Where no reply reports cached tokens, the check
falls back to the paired timing test (probe_timing) with the same salts: statistics reported, and the
verdict stays inconclusive (timing alone never proves exposure or isolation).
"""
from __future__ import annotations

import secrets

from kvir.probe.context import Context, Sent
from kvir.probe.result import EXPOSED, INCONCLUSIVE, NOT_EXPOSED, CheckResult, Finding

CHECK = "prefix-isolation"


def prefix_tokens(ctx: Context) -> int:
    """The prompt length: --prefix-tokens, at most half the engine's limit (always served)."""
    low, _, _ = ctx.facts.limits(ctx.opts.engine)
    n = ctx.opts.prefix_tokens
    return n if low is None else max(16, min(n, low // 2))


def salts(ctx: Context) -> dict[str, dict]:
    """Body fields per tenant label: a fresh cache_salt each (per-tenant), or nothing."""
    o = ctx.opts
    if o.cache_salt != "per-tenant":
        return {}
    return {t.label: {"cache_salt": f"kvir-probe-{t.label}-{secrets.token_hex(8)}"} for t in (o.tenant_a, o.tenant_b)}


async def prefix_isolation_check(ctx: Context) -> CheckResult:
    from kvir.probe.prompts import PromptBuilder, new_tag

    o = ctx.opts
    A, B = o.tenant_a, o.tenant_b
    n_tok = prefix_tokens(ctx)
    extra = salts(ctx)
    rounds: list[dict] = []
    findings: list[Finding] = []
    sends: list[Sent] = []
    for r in range(1, o.prefix_rounds + 1):
        P = await PromptBuilder(ctx.builder.counter, new_tag(), like=ctx.builder).build(n_tok)
        Q = await PromptBuilder(ctx.builder.counter, new_tag(), like=ctx.builder).build(n_tok)
        if P.tokens is None or Q.tokens is None:
            rounds.append({"round": r, "outcome": "not sent", "note": ctx.builder.counter.failure})
            continue
        steps = (("baseline", B, Q), ("prime", A, P), ("control", A, P), ("cross", B, P))
        got: dict[str, Sent] = {}
        for purpose, tenant, prompt in steps:
            got[purpose] = await ctx.send(CHECK, purpose, tenant, prompt, max_tokens=1, label=f"round {r}: {purpose}",
                                          extra=extra.get(tenant.label))
        sends += got.values()
        rounds.append(_judge_round(r, got, findings, A.label, B.label))
    stats = {"rounds": len(rounds), "prompt_tokens": n_tok, "cache_salt": o.cache_salt,
             "cached_tokens_reported": any(s.record["cached_tokens"] is not None for s in sends)}
    if sends and not stats["cached_tokens_reported"]:
        return await _timing_fallback(ctx, n_tok, extra, rounds, stats)
    salted = " with their own cache_salt" if extra else " (no cache_salt sent)"
    if findings:
        return CheckResult(CHECK, EXPOSED, f"{B.label}{salted} was served cached tokens of {A.label}'s prompt in "
                           f"{len(findings)} of {len(rounds)} round(s)", findings, rounds, stats)
    if rounds and all(x["outcome"] == "isolated" for x in rounds) and len(rounds) == o.prefix_rounds:
        return CheckResult(CHECK, NOT_EXPOSED, f"in every round {A.label}'s repeat hit the cache and {B.label}'s "
                           f"copy{salted} did not", [], rounds, stats)
    why = sorted({x["outcome"] for x in rounds if x["outcome"] != "isolated"}) or ["no round ran"]
    return CheckResult(CHECK, INCONCLUSIVE, "; ".join(why), [], rounds, stats)


def _judge_round(r: int, got: dict[str, Sent], findings: list[Finding], a: str, b: str) -> dict:
    c = {k: s.record["cached_tokens"] for k, s in got.items()}
    item = {"round": r, **{f"{k}_cached_tokens": v for k, v in c.items()},
            **{f"{k}_request_id": s.record["request_id"] for k, s in got.items()},
            "sent_tokens": got["prime"].prompt.tokens}
    if not all(s.reply.ok for s in got.values()):
        bad = [k for k, s in got.items() if not s.reply.ok]
        return {**item, "outcome": f"a request without a served answer ({', '.join(bad)})"}
    if any(v is None for v in c.values()):
        return {**item, "outcome": "a reply without usage.prompt_tokens_details.cached_tokens"}
    base = max(c["baseline"], c["prime"])
    if c["cross"] > c["baseline"]:
        ids = [x for k in ("cross", "prime") for x in got[k].ids]
        findings.append(Finding(
            "KVIR-P008", CHECK, f"{b}'s request {got['cross'].ids[0]} ({got['cross'].prompt.tokens:,}-token prompt) "
            f"was served {c['cross']:,} cached tokens of the prompt {a} sent in {got['prime'].ids[0]} (a fresh "
            f"prompt got {c['baseline']:,})", ids,
            {"round": r, "cached_tokens": c["cross"], "baseline_cached_tokens": c["baseline"],
             "control_cached_tokens": c["control"], "primed_by": a, "received_by": b,
             "priming_request_ids": got["prime"].ids, "salted": bool(got["cross"].record["extra_fields"])}))
        return {**item, "outcome": EXPOSED}
    if c["control"] <= base:
        return {**item, "outcome": "the same tenant's repeat did not hit the cache (prefix caching off, or blocks "
                                   "longer than the prompt): nothing can be seen"}
    return {**item, "outcome": "isolated"}


async def _timing_fallback(ctx: Context, n_tok: int, extra: dict, rounds: list[dict], stats: dict) -> CheckResult:
    from kvir.mechanisms.prefix_cache.probe_timing import collect_pairs, judge_pairs

    items, samples = await collect_pairs(ctx, CHECK, n_tok, extra)
    res = judge_pairs(CHECK, ctx, items, samples, n_tok)
    res.items = rounds + items
    res.stats = {**stats, **res.stats, "judged_by": "paired timing (the server reports no cached tokens)"}
    res.reason = f"the server reports no cached tokens; paired timing: {res.reason}"
    return res
