"""The plan and its request budget, shown before anything is sent (and all `--dry-run` does).

Before discovery the lengths are known only when --context (and --pool) are given; the counts are the
same either way (the boundary set has at most seven lengths). Each check says what it will send
(kvir.probe.plugin.ProbeCheck.plan). Every HTTP attempt counts against --max-requests, discovery,
/tokenize and retries included; past the budget or the deadline nothing more is sent and what was not
sent is undecided (inconclusive), never passed.
"""
from __future__ import annotations

from kvir.probe.config import ProbeOptions
from kvir.probe.learn import ServerFacts, boundary_lengths
from kvir.probe.rules import checks

DISCOVERY = 4         # /get_server_info, /server_info, /v1/models, /version (at most)


def make_plan(opts: ProbeOptions, facts: ServerFacts | None) -> dict:
    known = facts is not None
    if facts is None:
        facts = ServerFacts()
        from kvir.probe.learn import apply_options

        apply_options(facts, opts)
    lengths, left_out = boundary_lengths(facts, opts.engine)
    low, hard, rule = facts.limits(opts.engine)
    local = bool(opts.tokenizer)
    phases = [{"phase": "discovery", "requests": 0 if known else DISCOVERY,
               "what": "GET /get_server_info (/server_info), /v1/models, /version"}]
    tok = 0 if local else 2 + (len(lengths) if lengths else 7) + 2    # calibration, one count per length, slack
    for check in checks():                    # each mechanism's checks, in the order the run takes them
        if check.name in opts.checks:
            phase = check.plan(opts, facts)
            tok += 0 if local else phase.tokenize
            phases.append({"phase": check.name, "requests": phase.requests, "what": phase.what})
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
