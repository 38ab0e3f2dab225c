"""`kvir probe` on stderr: the plan and request budget (before anything is sent), one progress bar over the
planned requests, then the server's facts, the checks' verdicts and the findings (ids, lengths, hashes)."""
from __future__ import annotations

from rich.text import Text

from kvir.cli.present import cell, say, stderr, table

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
    stderr.print(table(title, ("phase", ("requests", "right"), "what"), rows))
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


def print_result(result) -> None:
    f = result.facts or {}
    say(f"server: engine {f.get('engine')} {f.get('version') or ''}, context {f.get('context')}, pool {f.get('pool')}, "
        f"max_req_input_len {f.get('max_req_input_len')}, PD mode {f.get('pd_mode')}")
    stderr.print(table("Checks", ("check", "verdict", "why"),
                       [[c.name, cell(c.verdict, STYLE[c.verdict]), c.reason] for c in result.checks]))
    if result.findings:
        rows = [[x.rule_id, x.severity, x.message] for x in result.findings[:40]]
        if len(result.findings) > 40:
            rows.append(["...", "", f"{len(result.findings) - 40} more in --json / --output"])
        stderr.print(table("Findings (ids, lengths and hashes only)", ("rule", "severity", "finding"), rows))
    for n in result.notes:
        say("note:", n)
    line = Text(f"verdict: {result.verdict}", style=STYLE[result.verdict])
    line.append(Text(f" ({result.reason}); {result.sent} requests in {result.wall_s:.1f} s"))
    stderr.print(cell(line), highlight=False)
