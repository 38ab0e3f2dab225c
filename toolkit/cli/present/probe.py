"""`kvir probe` on stderr: the plan and request budget (before anything is sent), one progress bar over the
planned requests, then the server's facts, the checks' verdicts and the findings (ids, lengths, hashes)."""
from __future__ import annotations

from rich.text import Text

from kvir.cli.present import Col, cell, say, stderr, table
from kvir.cli.present.layout import Para
from kvir.core.text import visible

STYLE = {"exposed": "bold red", "not exposed": "bold green", "inconclusive": "bold yellow"}


def print_plan(plan: dict) -> None:
    rows = [[p["phase"], p["requests"], p["what"]] for p in plan["phases"]]
    rows.append(["budget", plan["planned_requests"],
                 f"planned; at most {plan['max_with_retries']} with {plan['retries']} retries each; "
                 f"--max-requests {plan['max_requests']}, --deadline {plan['deadline_s']:g} s, "
                 f"--timeout {plan['timeout_s']:g} s, --concurrency {plan['concurrency']}"])
    lengths = plan["lengths"]
    rows.append(["lengths", "", lengths if isinstance(lengths, str) else
                 ", ".join(f"{x['tokens']:,} ({x['label']})" for x in lengths)])
    rows.append(["rule", "", plan["rule"]])
    title = "Probe plan" + ("" if plan["facts_known"] else " (before anything is sent)")
    stderr.print(table(title, ("phase", ("requests", "right"), Col("what", wrap=True)), rows))
    if plan.get("warning"):
        say("warning:", plan["warning"], style="yellow")


class ProgressBar:
    """The plan table when it is known, then one bar over the planned requests (`enabled` False: tables only)."""

    def __init__(self, enabled: bool):
        self.enabled, self.progress, self.task = enabled, None, None

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()

    def plan(self, plan: dict) -> None:
        print_plan(plan)
        if not self.enabled:
            return
        if self.progress is None:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(TextColumn("[bold]probe requests"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), console=stderr, transient=False)
            self.progress.start()
            self.task = self.progress.add_task("probe", total=plan["planned_requests"])
        else:
            self.progress.update(self.task, total=plan["planned_requests"])

    def update(self, sent: int, planned: int) -> None:
        if self.progress is not None:
            self.progress.update(self.task, completed=sent, total=max(planned, sent))


def lines(label: str, text: str, style: str = "") -> None:
    """'label text' on stderr, wrapped at spaces to the terminal's width (a path or a URL stays whole)."""
    stderr.print(Para(Text.assemble((label, style or "bold"), " ", visible(text))), highlight=False)


def print_result(result) -> None:
    """What failed first (no HTTP answer, or no request served), what the server said, the checks, the
    findings, then the verdict."""
    f = result.facts or {}
    if result.failed_first:
        lines(f"endpoint {visible(result.options.get('endpoint'))}:", result.failed_first, "bold yellow")
    if not f.get("unreachable"):
        lines("discovery:", answers(f))
        lines("server:", server_line(f))
    stderr.print(table("Checks", ("check", "verdict", Col("why", under=True)),
                       [[c.name, cell(c.verdict, STYLE[c.verdict]), c.reason] for c in result.checks]))
    if result.findings:
        rows = [[x.rule_id, x.severity, x.message] for x in result.findings[:40]]
        if len(result.findings) > 40:
            rows.append(["...", "", f"{len(result.findings) - 40} more in --json / --output"])
        stderr.print(table("Findings (ids, lengths and hashes only)", ("rule", "severity", Col("finding", under=True)),
                           rows))
    for n in result.notes:
        lines("note:", n)
    reason = result.reason
    if result.failed_first and reason.startswith(result.failed_first):     # said first, above
        reason = reason[len(result.failed_first):].lstrip("; ") or "see above"
    lines(f"verdict: {result.verdict}", f"({reason}); {result.sent} request{'' if result.sent == 1 else 's'} in "
          f"{result.wall_s:.1f} s", STYLE[result.verdict])


def answers(facts: dict) -> str:
    """Each discovery route and what came back: its HTTP status, or why there was none ('/v1/models: 401')."""
    fails = facts.get("failures") or {}
    return ", ".join(f"{path}: {st if st is not None else fails.get(path, 'no answer')}"
                     for path, st in (facts.get("answered") or {}).items())


def server_line(facts: dict) -> str:
    """What the server said about itself (unknown where it did not say)."""
    def num(key: str) -> str:
        return f"{facts[key]:,}" if isinstance(facts.get(key), int) else "unknown"

    engine = " ".join(str(x) for x in (facts.get("engine") or "unknown", facts.get("version")) if x)
    return (f"engine {engine}, context {num('context')}, pool {num('pool')}, max_req_input_len "
            f"{num('max_req_input_len')}, PD mode {facts.get('pd_mode') or 'unknown'}")
