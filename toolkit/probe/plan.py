"""The plan and its request budget, shown before anything is sent (and all `--dry-run` does).

Before discovery the lengths are known only when --context (and --pool) are given; the counts are the
same either way (the boundary set has at most seven lengths). Every HTTP attempt counts against
--max-requests, discovery, /tokenize and retries included; past the budget or the deadline nothing more
is sent and what was not sent is undecided (inconclusive), never passed.
"""
from __future__ import annotations

from kvir.probe.config import ProbeOptions
from kvir.probe.learn import ServerFacts
from kvir.probe.length import boundary_lengths

DISCOVERY = 4         # /get_server_info, /server_info, /v1/models, /version (at most)


def make_plan(opts: ProbeOptions, facts: ServerFacts | None) -> dict:
    known = facts is not None
    if facts is None:
        facts = ServerFacts()
        from kvir.probe.learn import apply_options

        apply_options(facts, opts)
    lengths, left_out = boundary_lengths(facts, opts.engine)
    low, hard, rule = facts.limits(opts.engine)
    n_len = len(lengths) if lengths else 7
    n_over = len([n for _, n in lengths if low is not None and n >= low]) if lengths else 4
    local = bool(opts.tokenizer)
    phases = [{"phase": "discovery", "requests": 0 if known else DISCOVERY,
               "what": "GET /get_server_info (/server_info), /v1/models, /version"}]
    tok = 0 if local else 2 + n_len + 2                     # calibration, about one count per length, slack
    if "length" in opts.checks:
        phases.append({"phase": "length", "requests": n_len, "what": f"{n_len} boundary prompts by {opts.tenant_b.label}, "
                       f"{opts.max_tokens} output tokens each"})
    if "canary" in opts.checks:
        plants = opts.canary_rounds * opts.canaries_per_round
        tok += 0 if local else plants
        phases.append({"phase": "canary", "requests": plants + opts.canary_rounds * n_over,
                       "what": f"{opts.canary_rounds} round(s): {opts.canaries_per_round} canary plant(s) by "
                               f"{opts.tenant_a.label}, then {n_over} over-limit prompt(s) by {opts.tenant_b.label} "
                               f"({opts.canary_max_tokens} output tokens, every other one streamed)"})
    if "timing" in opts.checks:
        tok += 0 if local else 2 * opts.timing_pairs
        phases.append({"phase": "timing", "requests": 4 * opts.timing_pairs,
                       "what": f"{opts.timing_pairs} pairs: warm (A), then cross (B), same (A), cold (B) in random order"})
    if "prefix-isolation" in opts.checks:
        tok += 0 if local else 2 * opts.prefix_rounds
        salt = "its own cache_salt" if opts.cache_salt == "per-tenant" else "no cache_salt"
        phases.append({"phase": "prefix-isolation", "requests": 4 * opts.prefix_rounds,
                       "what": f"{opts.prefix_rounds} round(s): a fresh prompt (B), prime and repeat (A), A's prompt (B); "
                               f"each tenant with {salt}; timing pairs if the server reports no cached tokens"})
    phases.insert(1, {"phase": "tokenize", "requests": tok,
                      "what": "local tokenizer: none" if local else "POST /tokenize (about one count per prompt)"})
    planned = sum(p["requests"] for p in phases)
    warn = None
    if planned > opts.max_requests:
        warn = (f"the plan needs about {planned} requests but --max-requests is {opts.max_requests}: "
                "what does not fit is left undecided (inconclusive)")
    return {"phases": phases, "planned_requests": planned, "max_with_retries": planned * (1 + opts.retries),
            "max_requests": opts.max_requests, "deadline_s": opts.deadline_s, "timeout_s": opts.timeout_s,
            "retries": opts.retries, "concurrency": opts.concurrency,
            "lengths": [{"label": a, "tokens": n} for a, n in lengths] or "after discovery (or give --context/--pool)",
            "left_out": left_out, "rule": rule, "accept_below": low, "reject_from": hard, "warning": warn,
            "facts_known": known}
