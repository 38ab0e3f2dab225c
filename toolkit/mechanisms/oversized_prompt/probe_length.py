"""The length check: tenant B sends the boundary set around the engine's limit, each prompt of an exact
token count, and every answer is compared with what the engine's rule says it must be. The set is the
engine's own (kvir.probe.learn.boundary_lengths, from kvir.rules.engines):
    sglang   max_req_input_len - 1, itself, + 1, the pool, context - 1, context, context + 1
    vllm     context - 2, context - 1 (served with one output token), context, context + 1 (refused):
             vLLM refuses a prompt of max_model_len tokens, and will not start on a pool below it
    unknown  pool - 1, pool, pool + 1, context - 1, context, context + 1

Per prompt of n tokens (n counted by the server's tokenizer), with the limits of learn.ServerFacts.limits:
    n < accept_below    must be served, with usage.prompt_tokens == n
    n >= reject_from    must be refused (4xx). HTTP 2xx is KVIR-P001 (exposed); a count of 1 is also
                        KVIR-P002 (the placeholder); a count between 1 and n is a truncation (KVIR-P003,
                        inconclusive: it did not fit, and was not refused)
    in between          either (engine unknown)
An attempt that got no definite answer (5xx, timeout, 429 to the end, budget or deadline) leaves its
prompt undecided, and the check inconclusive unless another prompt already shows exposure.
"""
from __future__ import annotations

import asyncio

from kvir.probe.context import Context, Sent
from kvir.probe.learn import boundary_lengths
from kvir.probe.result import EXPOSED, INCONCLUSIVE, NOT_EXPOSED, CheckResult, Finding


def classify(s: Sent, low: int, hard: int) -> tuple[str, list[Finding], str]:
    """(outcome, findings, note) of one boundary prompt. Outcomes: ok, exposed, inconclusive."""
    rec, rep = s.record, s.reply
    n = s.prompt.tokens
    assert n is not None
    expected = "accept" if n < low else "reject" if n >= hard else "either"
    rec["expected"] = expected
    ids = s.ids
    if rep.status is None or not rep.answered:
        return INCONCLUSIVE, [], f"no definite answer ({rep.error or f'HTTP {rep.status}'})"
    if rep.status in (401, 403, 404, 407):
        return INCONCLUSIVE, [], f"refused with HTTP {rep.status} (key, gateway or model): the engine was not reached"
    if rep.status >= 400:
        if expected == "accept":
            return "ok", [Finding("KVIR-P007", "length", f"{n:,}-token prompt refused (HTTP {rep.status}) below the limit {low:,}",
                                  ids, {"sent_tokens": n, "http_status": rep.status, "limit": low})], "refused below the limit"
        return "ok", [], f"refused (HTTP {rep.status})"
    pt = rec["prompt_tokens"]
    if expected == "reject":
        fs = []
        if pt == 1 and n > 1:
            fs.append(Finding("KVIR-P002", "length", f"{n:,}-token prompt answered with usage.prompt_tokens 1",
                              ids, {"sent_tokens": n, "prompt_tokens": 1}))
        elif pt is not None and 1 < pt < n:
            return INCONCLUSIVE, [Finding("KVIR-P003", "length", f"{n:,}-token prompt served truncated to {pt:,} tokens "
                                          f"(HTTP {rep.status}) instead of refused", ids,
                                          {"sent_tokens": n, "prompt_tokens": pt, "http_status": rep.status})], "served truncated"
        fs.insert(0, Finding("KVIR-P001", "length", f"{n:,}-token prompt served with HTTP {rep.status}; refused from {hard:,}",
                             ids, {"sent_tokens": n, "prompt_tokens": pt, "http_status": rep.status, "limit": hard}))
        return EXPOSED, fs, "served at or over the limit"
    if pt == 1 and n > 1:
        return EXPOSED, [Finding("KVIR-P002", "length", f"{n:,}-token prompt answered with usage.prompt_tokens 1",
                                 ids, {"sent_tokens": n, "prompt_tokens": 1})], "placeholder count"
    if pt is not None and pt != n:
        return INCONCLUSIVE, [Finding("KVIR-P003", "length", f"{n:,}-token prompt counted as {pt:,} by the server",
                                      ids, {"sent_tokens": n, "prompt_tokens": pt})], "count disagrees"
    return "ok", [], "served" + ("" if pt is not None else " (no usage.prompt_tokens to compare)")


async def length_check(ctx: Context) -> CheckResult:
    low, hard, rule = ctx.facts.limits(ctx.opts.engine)
    lengths, notes = boundary_lengths(ctx.facts, ctx.opts.engine)
    if low is None or hard is None or not lengths:
        return CheckResult("length", INCONCLUSIVE, f"the engine's limit is unknown: {rule}", stats={"rule": rule})
    prompts = [await ctx.builder.build(lengths[0][1])]
    prompts += await asyncio.gather(*(ctx.builder.build(n) for _, n in lengths[1:]))
    B = ctx.opts.tenant_b

    async def one(label: str, p):
        if p.tokens is None:
            return None
        return await ctx.send("length", "boundary", B, p, max_tokens=ctx.opts.max_tokens, label=label)

    sends = await asyncio.gather(*(one(label, p) for (label, _), p in zip(lengths, prompts)))
    items, findings, outcomes = [], [], []
    for (label, target), p, s in zip(lengths, prompts, sends):
        if s is None:
            outcomes.append(INCONCLUSIVE)
            items.append({"label": label, "target_tokens": target, "outcome": INCONCLUSIVE,
                          "note": f"prompt could not be counted ({ctx.builder.counter.failure or 'no count'}): not sent"})
            continue
        outcome, fs, note = classify(s, low, hard)
        if not p.exact:
            note += f"; built {p.tokens:,} tokens for the target {target:,}"
        outcomes.append(outcome)
        findings += fs
        items.append({"label": label, "target_tokens": target, "sent_tokens": p.tokens, "exact": p.exact,
                      "expected": s.record.get("expected"), "http_status": s.reply.status,
                      "prompt_tokens": s.record["prompt_tokens"], "outcome": outcome, "note": note,
                      "request_id": s.record["request_id"], "response_id": s.record["response_id"]})
    stats = {"rule": rule, "accept_below": low, "reject_from": hard, "left_out": notes}
    if EXPOSED in outcomes:
        served = [i for i in items if i["outcome"] == EXPOSED]
        return CheckResult("length", EXPOSED, f"{len(served)} prompt(s) at or over the limit {hard:,} were served "
                           f"({rule})", findings, items, stats)
    if INCONCLUSIVE in outcomes:
        n = outcomes.count(INCONCLUSIVE)
        return CheckResult("length", INCONCLUSIVE, f"{n} of {len(outcomes)} boundary prompt(s) undecided "
                           "(no definite answer, a count that disagrees, or not sent)", findings, items, stats)
    return CheckResult("length", NOT_EXPOSED, f"every prompt of {hard:,} tokens or more refused, every shorter one "
                       f"served with its own count ({rule})", findings, items, stats)
