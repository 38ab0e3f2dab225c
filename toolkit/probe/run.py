"""`probe(...)`: the live check of one deployment, as a plain function (the CLI is a thin wrapper).

    plan (shown before anything is sent) -> discovery -> the checks asked for, in the registered
    mechanisms' order (kvir.probe.rules.checks) -> verdicts -> JSON / SARIF / case events

Works from a notebook too (an event loop already running there: the probe runs on its own thread).
"""
from __future__ import annotations

import asyncio
import datetime as dt
import secrets
import threading
import time
from pathlib import Path
from typing import Any, Callable

from kvir.core.errors import KvirError
from kvir.core.secrets import Redactor
from kvir.probe.canary import CanaryIndex
from kvir.probe.config import ProbeOptions
from kvir.probe.context import Context
from kvir.probe.http import Budget, Client, failed_first
from kvir.probe.learn import discover
from kvir.probe.plan import make_plan
from kvir.probe.prompts import Counter, PromptBuilder, new_tag
from kvir.probe.result import EXPOSED, INCONCLUSIVE, CheckResult, Finding, ProbeResult, overall
from kvir.probe.rules import checks


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def probe(endpoint: str, model: str | None = None, *, on_plan: Callable[[dict], None] | None = None,
          on_progress: Callable[[int, int], None] | None = None, **options: Any) -> ProbeResult:
    """Probe an OpenAI-compatible endpoint (see ProbeOptions for every option). `on_plan(plan)` is called
    before anything is sent and again once the server's facts are known; `on_progress(sent, planned)`
    after every HTTP attempt. Raises KvirError for options that cannot be used."""
    opts = ProbeOptions(endpoint=endpoint, model=model, **options)
    opts.validate()
    return run_sync(run_probe(opts, on_plan, on_progress))


def run_sync(coro):
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["r"] = asyncio.run(coro)
        except BaseException as e:  # re-raised in the caller's thread
            box["e"] = e

    th = threading.Thread(target=target, name="kvir-probe")
    th.start()
    th.join()
    if "e" in box:
        raise box["e"]
    return box["r"]


async def run_probe(opts: ProbeOptions, on_plan=None, on_progress=None) -> ProbeResult:
    """The run; everything it returns or records is scrubbed of the run's credentials (ProbeResult.scrub),
    and so is an error it raises, whatever the server echoed where."""
    redactor = Redactor(opts.secret_values())
    try:
        return await _run_probe(opts, on_plan, on_progress, redactor)
    except KvirError as e:
        e.message = redactor.text(e.message)
        e.args = (str(e),)
        raise


async def _run_probe(opts: ProbeOptions, on_plan, on_progress, redactor: Redactor) -> ProbeResult:
    plan = make_plan(opts, None)
    result = ProbeResult(options=opts.describe(), plan=plan, run_id=secrets.token_hex(4), dry_run=opts.dry_run,
                         redactor=redactor)
    if on_plan:
        on_plan(plan)
    if opts.dry_run:
        result.reason = "dry run: nothing was sent"
        return result
    t0 = time.monotonic()
    result.started_at = _now()
    budget = Budget(opts.max_requests, opts.deadline_s)
    planned = [plan["planned_requests"]]
    client = Client(opts, budget, (lambda: on_progress(budget.sent, planned[0])) if on_progress else None,
                    run_id=result.run_id)
    try:
        facts = await discover(client, opts)
        model = opts.model or (facts.models[0] if facts.models else None)
        result.options["model"] = model
        plan = make_plan(opts, facts)
        plan["planned_requests"] += budget.sent          # discovery is already spent
        planned[0] = plan["planned_requests"]
        result.plan, result.facts = plan, facts.as_json()
        if on_plan and not facts.unreachable:
            on_plan(redactor.obj(plan))              # the plan now holds what the server said (a model id)
        counter = Counter(opts, None if opts.tokenizer else client, model)
        ctx = Context(opts, client, facts, PromptBuilder(counter, new_tag()), model, CanaryIndex(opts.fragment_chars))
        for check in checks():
            if check.name in opts.checks:
                result.checks.append(await check.run(ctx) if not facts.unreachable else
                                     CheckResult(check.name, INCONCLUSIVE, "not run: the endpoint gave no HTTP answer"))
            elif check.skipped_note:
                result.notes.append(check.skipped_note)
        result.requests = ctx.log
        result.notes += facts.notes
        for k in facts.secrets_exposed:
            result.extra_findings.append(Finding("KVIR-P006", "discovery", f"the server's info route shows a non-empty "
                                                 f"`{k}` field (its value was not kept)", [], {"field": k}))
    finally:
        await client.close()
    result.sent = budget.sent
    result.http = [{"path": p, "answer": a, "attempts": n} for (p, a), n in client.outcomes.items()]
    result.verdict, result.reason = overall(result.checks)
    # what failed first comes before any check's verdict: no HTTP answer at all, or no request served
    if result.facts and result.facts.get("unreachable"):
        result.failed_first = f"no HTTP answer: {result.facts['unreachable']}"
        result.reason = f"{result.failed_first}; nothing was checked"
    else:
        result.failed_first = failed_first(client.outcomes)
        if result.failed_first:
            result.reason = f"{result.failed_first}; {result.reason}"
    if budget.sent >= opts.max_requests and result.verdict != EXPOSED:
        result.notes.append(f"the request budget ({opts.max_requests}) was spent")
    if budget.remaining_s() <= 0 and result.verdict != EXPOSED:
        result.notes.append(f"the deadline ({opts.deadline_s:g} s) passed")
    if result.verdict == INCONCLUSIVE and (budget.sent >= opts.max_requests or budget.remaining_s() <= 0):
        result.reason += " (budget or deadline reached)"
    result.wall_s = time.monotonic() - t0
    result.ended_at = _now()
    echoed = result.scrub()
    if echoed:
        result.notes.append(f"the server sent back a credential of this run ({echoed} times: an API key or a header "
                            "value, in its answers); every copy is shown as [redacted]")
    if opts.case is not None:
        record_in_case(opts.case, result)
    return result


def record_in_case(path: Path, result: ProbeResult) -> None:
    """The run, its requests and its findings into the case's probe tables (created by the case layer)."""
    from kvir.case.probe_tables import record_probe
    from kvir.case.store import CASE_DB, Case

    p = Path(path)
    case = Case.open(p, staged=True) if (p / CASE_DB).exists() else Case.create(p)   # committed only when whole
    try:
        run = {"run_id": result.run_id, "started_at": result.started_at, "ended_at": result.ended_at,
               "endpoint": result.options["endpoint"], "model": result.options.get("model"),
               "engine": (result.facts or {}).get("engine"), "version": (result.facts or {}).get("version"),
               "verdict": result.verdict, "reason": result.reason, "requests_sent": result.sent,
               "checks": {c.name: c.verdict for c in result.checks}}
        findings = [{"check": f.check, "rule_id": f.rule_id, "severity": f.severity, "message": f.message,
                     "request_ids": f.request_ids, "evidence": f.evidence} for f in result.findings]
        record_probe(case, run, result.requests, findings)
        case.save_manifest()
        case.commit()
    finally:
        case.close()
