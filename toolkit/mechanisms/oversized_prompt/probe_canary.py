"""The canary check across tenants. Each round tenant A plants fresh canaries (normal prompts well under
the limit, one canary repeated), then tenant B sends the over-limit prompts of the boundary set (every
other one streamed). Every output of tenant B in the run, streamed or not, is scanned for any fragment
of any canary (canary.CanaryIndex: n-grams, not exact matches).

Verdict:
    exposed        a fragment of a canary came back to tenant B (KVIR-P004, with both sides' request ids)
    not exposed    canaries were planted, and every over-limit prompt of B was refused: nothing came back
    inconclusive   otherwise: nothing planted, an over-limit prompt without a definite answer, or one that was
                   served without showing a canary (what it returned is unaccounted for: absence of a canary
                   is not absence of exposure)
"""
from __future__ import annotations

import asyncio

from kvir.probe.canary import Planted, digest, new_canary, plant_text
from kvir.probe.context import Context
from kvir.probe.learn import boundary_lengths
from kvir.probe.prompts import Prompt
from kvir.probe.result import EXPOSED, INCONCLUSIVE, NOT_EXPOSED, CheckResult, Finding

CANARY_CHARS = 33          # a canary and its separator


async def _plant_prompt(ctx: Context, low: int) -> tuple[str, Prompt] | None:
    """A fresh canary and its plant prompt, counted, under the limit."""
    canary = new_canary()
    repeats = max(2, ctx.opts.plant_tokens // CANARY_CHARS)
    for _ in range(4):
        text = plant_text(canary, repeats)
        n = await ctx.builder.counter.count(text)
        if n is None:
            return None
        if n < low - 1:
            return canary, Prompt(text, n)
        repeats = max(1, repeats * (low - 2) // (2 * n))
        if repeats == 1 and n >= low - 1:
            break
    return None


async def canary_check(ctx: Context) -> CheckResult:
    low, hard, rule = ctx.facts.limits(ctx.opts.engine)
    if low is None or hard is None:
        return CheckResult("canary", INCONCLUSIVE, f"the engine's limit is unknown: {rule}")
    over = [(label, n) for label, n in boundary_lengths(ctx.facts, ctx.opts.engine)[0] if n >= low]
    if not over:
        return CheckResult("canary", INCONCLUSIVE, "no over-limit length to send")
    o = ctx.opts
    A, B = o.tenant_a, o.tenant_b
    planted, probes, items = 0, [], []
    for r in range(1, o.canary_rounds + 1):
        for j in range(1, o.canaries_per_round + 1):
            made = await _plant_prompt(ctx, low)
            if made is None:
                items.append({"round": r, "purpose": "plant", "outcome": "not planted",
                              "note": ctx.builder.counter.failure or "no plant prompt under the limit"})
                continue
            canary, p = made
            s = await ctx.send("canary", "plant", A, p, max_tokens=1, label=f"round {r} canary {j}")
            if s.reply.ok:
                planted += 1
                ctx.index.add(canary, Planted(digest(canary), A.label, A.key_fingerprint, tuple(s.ids)))
            items.append({"round": r, "purpose": "plant", "canary_sha256": digest(canary), "sent_tokens": p.tokens,
                          "http_status": s.reply.status, "outcome": "planted" if s.reply.ok else "not planted",
                          "request_id": s.record["request_id"], "response_id": s.record["response_id"]})
            del canary
        prompts = [await ctx.builder.build(n) for _, n in over]
        sends = await asyncio.gather(*(
            ctx.send("canary", "over-limit", B, p, max_tokens=o.canary_max_tokens, stream=bool(k % 2),
                     label=f"round {r}: {label}")
            for k, ((label, _), p) in enumerate(zip(over, prompts)) if p.tokens is not None))
        probes += sends
        if len(sends) < len(over):
            items.append({"round": r, "purpose": "over-limit", "outcome": INCONCLUSIVE,
                          "note": f"{len(over) - len(sends)} prompt(s) could not be counted: not sent"})
    findings: list[Finding] = []
    scanned = 0
    for s in ctx.outputs:
        if s.tenant is not B or not s.reply.ok:
            continue
        scanned += 1
        for h in ctx.index.scan(s.text):
            findings.append(Finding(
                "KVIR-P004", "canary",
                f"{h.chars}-character fragment of canary {h.canary_sha} planted by {h.planted.tenant} found in "
                f"{B.label}'s response {s.ids[0]} ({s.prompt.tokens:,}-token prompt, HTTP {s.reply.status})",
                s.ids, {"canary_sha256": h.canary_sha, "planted_by": h.planted.tenant,
                        "planted_by_key": h.planted.tenant_key, "planting_request_ids": list(h.planted.request_ids),
                        "received_by": B.label, "received_by_key": B.key_fingerprint, "fragment_chars": h.chars,
                        "fragment_sha256": h.fragment_sha, "offset": h.offset, "normalised": h.normalised,
                        "streamed": s.record["stream"], "sent_tokens": s.prompt.tokens, "purpose": s.record["purpose"]}))
    for s in probes:
        hit = [f for f in findings if s.record["request_id"] in f.request_ids]
        items.append({"purpose": "over-limit", "label": s.record["label"], "sent_tokens": s.prompt.tokens,
                      "stream": s.record["stream"], "http_status": s.reply.status,
                      "outcome": EXPOSED if hit else ("refused" if s.reply.answered and not s.reply.ok else
                                                      "served, no canary" if s.reply.ok else INCONCLUSIVE),
                      "canaries_found": len(hit), "request_id": s.record["request_id"],
                      "response_id": s.record["response_id"]})
    stats = {"planted": planted, "over_limit_sent": len(probes), "outputs_scanned": scanned,
             "fragment_chars": ctx.index.k, "rounds": o.canary_rounds}
    if findings:
        tenants = sorted({f.evidence["planted_by"] for f in findings})
        return CheckResult("canary", EXPOSED, f"{len(findings)} canary fragment(s) planted by {', '.join(tenants)} "
                           f"came back to {B.label}", findings, items, stats)
    if planted == 0:
        return CheckResult("canary", INCONCLUSIVE, "no canary could be planted", findings, items, stats)
    undecided = [s for s in probes if not s.reply.answered]
    if undecided or len(probes) < len(over) * o.canary_rounds:
        return CheckResult("canary", INCONCLUSIVE, f"{len(over) * o.canary_rounds - len(probes) + len(undecided)} "
                           "over-limit prompt(s) without a definite answer", findings, items, stats)
    served = [s for s in probes if s.reply.ok]
    if served:
        why = f"{len(served)} over-limit prompt(s) were served and showed no canary: what they returned is unaccounted for"
        if all((s.prompt.tokens or 0) < hard for s in served):
            why += (f" (all under {hard:,}, where only SGLang's rule refuses; the engine is {ctx.facts.engine}: "
                    "--engine tells the probe whose rule applies)")
        return CheckResult("canary", INCONCLUSIVE, why, findings, items, stats)
    return CheckResult("canary", NOT_EXPOSED, f"{planted} canaries planted; all {len(probes)} over-limit prompts of "
                       f"{B.label} refused, and no output of {B.label} holds a canary fragment", findings, items, stats)
