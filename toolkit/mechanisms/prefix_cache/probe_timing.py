"""The optional prefix-cache timing check between tenants, with a paired control. Never proof on its own.

For each of n pairs a fresh prompt P (under the limit) is sent by tenant A (the cache is warmed); then,
in random order, tenant B sends P (cross), tenant A sends P again (same: the control), and tenant B sends
a fresh prompt Q of the same length (cold). All with one output token; the latency is measured.

    cross effect  d_cross = cold - cross   (> 0: B's copy of A's prompt was served faster than a fresh one)
    control       d_same  = cold - same    (> 0: the cache works and the measurement can see it)

Each is tested one-sided with the exact paired sign-flip permutation test of the mean (all 2^n sign
assignments). The three requests of a pair run in each of the six orders equally often (shuffled), so a
position effect (the first request after the warm-up being slower, say) cancels. Outcomes: the control
not significant -> no measurable cache effect; control significant, cross significant and at least half
the control's size (a shared-cache hit saves about what a same-tenant hit saves) -> a prefix cache shared
across tenants is indicated (KVIR-P005); otherwise no cross-tenant effect seen. The check's verdict
stays inconclusive either way.
"""
from __future__ import annotations

import itertools
import random
import statistics

from kvir.probe.context import Context
from kvir.probe.result import INCONCLUSIVE, CheckResult, Finding


def sign_flip_p(d: list[float]) -> float:
    """One-sided exact p-value of mean(d) > 0 under the null of symmetric differences around 0."""
    n = len(d)
    if n == 0:
        return 1.0
    obs = sum(d)
    worse = 0
    for signs in itertools.product((1, -1), repeat=n):
        if sum(s * x for s, x in zip(signs, d)) >= obs - 1e-12:
            worse += 1
    return worse / 2 ** n


async def timing_check(ctx: Context) -> CheckResult:
    o = ctx.opts
    low, _, rule = ctx.facts.limits(o.engine)
    n_tok = o.timing_tokens if low is None else min(o.timing_tokens, max(16, low // 2))
    items, samples = await collect_pairs(ctx, "timing", n_tok)
    return judge_pairs("timing", ctx, items, samples, n_tok)


async def collect_pairs(ctx: Context, check: str, n_tok: int, extra: dict | None = None
                        ) -> tuple[list[dict], list[tuple[float, float, float]]]:
    """The paired requests (warm, then cross / same / cold in a balanced random order), each with one output
    token; `extra` maps a tenant label to body fields it sends (its cache_salt). Returns the items and the
    (cross, same, cold) latencies of every complete pair."""
    o = ctx.opts
    A, B = o.tenant_a, o.tenant_b
    extra = extra or {}
    rng = random.Random(o.seed)
    samples, items = [], []
    orders = [list(p) for _ in range(-(-o.timing_pairs // 6)) for p in itertools.permutations(range(3))]
    rng.shuffle(orders)
    from kvir.probe.prompts import PromptBuilder, new_tag

    for i in range(o.timing_pairs):
        pb = PromptBuilder(ctx.builder.counter, new_tag(), like=ctx.builder)
        qb = PromptBuilder(ctx.builder.counter, new_tag(), like=ctx.builder)
        P, Q = await pb.build(n_tok), await qb.build(n_tok)
        if P.tokens is None or Q.tokens is None:
            items.append({"pair": i + 1, "outcome": "not sent", "note": ctx.builder.counter.failure})
            continue
        warm = await ctx.send(check, "warm", A, P, max_tokens=1, label=f"pair {i + 1}: warm (A)", extra=extra.get(A.label))
        if not warm.reply.ok:
            items.append({"pair": i + 1, "outcome": "warm-up failed", "http_status": warm.reply.status})
            continue
        kinds = [("cross", B, P), ("same", A, P), ("cold", B, Q)]
        order = [kinds[j] for j in orders[i]]
        got: dict[str, float | None] = {}
        for kind, tenant, prompt in order:
            s = await ctx.send(check, kind, tenant, prompt, max_tokens=1, label=f"pair {i + 1}: {kind}",
                               extra=extra.get(tenant.label))
            got[kind] = s.reply.latency_s if s.reply.ok else None
        items.append({"pair": i + 1, "order": [k for k, _, _ in order], **{f"{k}_s": v for k, v in got.items()}})
        if None not in got.values():
            samples.append((got["cross"], got["same"], got["cold"]))
    return items, samples


def judge_pairs(check: str, ctx: Context, items: list[dict], samples: list[tuple[float, float, float]],
                n_tok: int) -> CheckResult:
    """The paired test's statistics and reading (always inconclusive: timing never proves anything alone)."""
    o = ctx.opts
    A, B = o.tenant_a, o.tenant_b
    n = len(samples)
    if n < 4:
        return CheckResult(check, INCONCLUSIVE, f"only {n} complete pair(s): too few to test", items=items)
    cross, same, cold = ([s[k] for s in samples] for k in range(3))
    d_cross = [c - x for c, x in zip(cold, cross)]
    d_same = [c - x for c, x in zip(cold, same)]
    p_cross, p_same = sign_flip_p(d_cross), sign_flip_p(d_same)
    stats = {"test": "exact one-sided paired sign-flip permutation test of the mean", "pairs": n, "alpha": o.alpha,
             "p_cross": p_cross, "p_control": p_same, "median_cold_s": statistics.median(cold),
             "median_cross_s": statistics.median(cross), "median_same_s": statistics.median(same),
             "mean_d_cross_s": statistics.fmean(d_cross), "mean_d_control_s": statistics.fmean(d_same),
             "smallest_possible_p": 2 ** -n, "prompt_tokens": n_tok}
    if p_same >= o.alpha:
        return CheckResult(check, INCONCLUSIVE, f"no measurable cache effect: the same-tenant control is not "
                           f"significant (p = {p_same:.4g}, alpha {o.alpha})", items=items, stats=stats)
    ratio = statistics.fmean(d_cross) / statistics.fmean(d_same)
    stats["cross_to_control"] = ratio
    if p_cross < o.alpha and ratio >= 0.5:
        f = Finding("KVIR-P005", check, f"{B.label}'s copies of {A.label}'s prompts were served faster than fresh "
                    f"prompts (p = {p_cross:.4g}; control p = {p_same:.4g}; {n} pairs): a statistical indication, not proof",
                    [], {"p_cross": p_cross, "p_control": p_same, "pairs": n})
        return CheckResult(check, INCONCLUSIVE, "a prefix cache shared across tenants is indicated (timing only; "
                           "never proof on its own)", [f], items, stats)
    return CheckResult(check, INCONCLUSIVE, f"no cross-tenant speed-up (p = {p_cross:.4g}, {ratio:.0%} of the "
                       f"control's) while the same-tenant control shows one (p = {p_same:.4g}); timing cannot prove "
                       "isolation", items=items, stats=stats)
