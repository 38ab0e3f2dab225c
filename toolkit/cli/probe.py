"""`kvir probe`: a thin Typer wrapper over kvir.probe.run.probe. The plan and the request budget go to stderr
before anything is sent, then a progress bar, then the verdicts; JSON on stdout (--json) or in files."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from kvir.core.errors import KvirError

HELP = """Is a live deployment exposed? One command against its OpenAI-compatible API:

    kvir probe --endpoint https://llm.example.com/v1 --model MODEL \\
      --api-key-env KEY_A --tenant-b-key-env KEY_B

(KEY_A and KEY_B: environment variables holding two tenants' API keys.)

The probe reads what the server says about itself (SGLang /get_server_info,
vLLM /v1/models and /version; --pool and --context fill the gaps), builds
prompts of exact token counts with the server's /tokenize, and checks:

length: tenant B sends max_req_input_len - 1, itself and + 1, the pool,
context - 1, context and context + 1 tokens. HTTP 400 is expected at and above
the engine's limit; HTTP 200 there, usage.prompt_tokens of 1, or a count that
disagrees with what was sent is a finding.

canary: tenant A plants unique canaries, then tenant B sends over-limit
prompts; every output of B (streamed too) is scanned for any fragment of any
canary. A fragment found is exposure, reported with the request ids.

timing (--timing): a paired prefix-cache timing test between the tenants,
reported with its statistics; never proof on its own.

Keys come only from environment variables (--api-key-env, --tenant-b-key-env,
--header-env), never from the command line, and never appear in the output.
With one key the tenants differ only by the `user` field. Prompt, canary and
response text are never printed or stored: SHA-256 prefixes only.

The plan and the request budget are shown before anything is sent (--dry-run
stops there). Every HTTP attempt, retries included, counts against
--max-requests; nothing starts after --deadline. What could not be decided is
inconclusive, never "not exposed".

Exit status: 0 not exposed, 1 exposed, 3 inconclusive, 2 an option or input
cannot be used.
"""


def register(app: typer.Typer) -> None:
    app.command(name="probe", help=HELP)(probe_command)


def probe_command(
    endpoint: Annotated[str, typer.Option("--endpoint", "-e", help="The OpenAI-compatible base URL (with or without /v1).")],
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="The model name to send (default: the first of /v1/models).")] = None,
    pool: Annotated[Optional[int], typer.Option("--pool", help="KV pool tokens (when the server does not say).")] = None,
    context: Annotated[Optional[int], typer.Option("--context", help="Context length (when the server does not say).")] = None,
    engine: Annotated[str, typer.Option("--engine", help="Whose length rule applies: auto, sglang, vllm, other.")] = "auto",
    api: Annotated[str, typer.Option("--api", help="completions or chat.")] = "completions",
    header: Annotated[Optional[list[str]], typer.Option("--header", "-H", help="Gateway header 'Name: value' (repeatable; values never printed).")] = None,
    header_env: Annotated[Optional[list[str]], typer.Option("--header-env", help="Header from an environment variable: 'Name=VAR' (repeatable).")] = None,
    api_key_env: Annotated[Optional[str], typer.Option("--api-key-env", help="Variable holding tenant A's API key (also B's without --tenant-b-key-env).")] = None,
    tenant_b_key_env: Annotated[Optional[str], typer.Option("--tenant-b-key-env", help="Variable holding tenant B's API key.")] = None,
    checks: Annotated[str, typer.Option("--checks", help="Comma-separated: length, canary, timing.")] = "length,canary",
    timing: Annotated[bool, typer.Option("--timing", help="Add the prefix-cache timing check.")] = False,
    tokenizer: Annotated[Optional[Path], typer.Option("--tokenizer", help="A local tokenizer.json instead of the server's /tokenize.")] = None,
    max_requests: Annotated[int, typer.Option("--max-requests", help="At most this many HTTP attempts, retries included.")] = 200,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Requests in flight at once.")] = 4,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per attempt.")] = 120.0,
    retries: Annotated[int, typer.Option("--retries", help="Retries after a 5xx, 429, timeout or transport error.")] = 2,
    deadline: Annotated[float, typer.Option("--deadline", help="Seconds for the whole run.")] = 900.0,
    max_tokens: Annotated[int, typer.Option("--max-tokens", help="Output tokens of each boundary prompt.")] = 8,
    canary_max_tokens: Annotated[int, typer.Option("--canary-max-tokens", help="Output tokens of tenant B's over-limit prompts.")] = 48,
    canary_rounds: Annotated[int, typer.Option("--canary-rounds", help="Plant-then-probe rounds.")] = 2,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan and the request budget; send nothing.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="The result as JSON on stdout.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the result as JSON to this file.")] = None,
    sarif: Annotated[Optional[Path], typer.Option("--sarif", help="Write the findings as SARIF 2.1.0 to this file.")] = None,
    case: Annotated[Optional[Path], typer.Option("--case", help="Record the run, its requests and findings in this case folder.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No plan, progress or tables on stderr.")] = False,
) -> None:
    from kvir.cli.present import fail
    from kvir.core.progress import stderr
    from kvir.probe.run import probe

    names = tuple(c.strip() for c in checks.split(",") if c.strip()) + (("timing",) if timing and "timing" not in checks else ())
    bar = _Bar(enabled=not quiet and not dry_run)
    try:
        with bar:
            result = probe(endpoint, model, pool=pool, context=context, engine=engine, api=api,
                           headers=tuple(header or ()), header_env=tuple(header_env or ()), api_key_env=api_key_env,
                           tenant_b_key_env=tenant_b_key_env, checks=names,
                           tokenizer=str(tokenizer) if tokenizer else None, max_requests=max_requests,
                           concurrency=concurrency, timeout_s=timeout, retries=retries, deadline_s=deadline,
                           max_tokens=max_tokens, canary_max_tokens=canary_max_tokens, canary_rounds=canary_rounds,
                           dry_run=dry_run, progress=not quiet, case=case,
                           on_plan=None if quiet else bar.plan, on_progress=bar.update)
    except KvirError as e:
        fail(e)
        return
    doc = result.as_json()
    if output is not None:
        output.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    if sarif is not None:
        sarif.write_text(json.dumps(result.to_sarif(), indent=2, default=str) + "\n")
    if not quiet and not dry_run:
        print_result(result)
        for what, p in (("JSON", output), ("SARIF", sarif), ("case", case)):
            if p is not None:
                stderr.print(f"{what}: {p}", highlight=False)
    if as_json:
        typer.echo(json.dumps(doc, indent=2, default=str))
    raise typer.Exit(code=0 if dry_run else result.exit_code)


class _Bar:
    """The plan table when it is known, then one progress bar over the planned requests."""

    def __init__(self, enabled: bool):
        self.enabled, self.progress, self.task = enabled, None, None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()

    def plan(self, plan: dict) -> None:
        print_plan(plan)
        if self.enabled and self.progress is None:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            from kvir.core.progress import stderr

            self.progress = Progress(TextColumn("[bold]probe requests"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), console=stderr, transient=False)
            self.progress.start()
            self.task = self.progress.add_task("probe", total=plan["planned_requests"])
        elif self.progress is not None:
            self.progress.update(self.task, total=plan["planned_requests"])

    def update(self, sent: int, planned: int) -> None:
        if self.progress is not None:
            self.progress.update(self.task, completed=sent, total=max(planned, sent))


def print_plan(plan: dict) -> None:
    from rich.markup import escape
    from rich.table import Table

    from kvir.core.progress import stderr

    t = Table(title="Probe plan" + ("" if plan["facts_known"] else " (before anything is sent)"), title_justify="left")
    for c in ("phase", "requests", "what"):
        t.add_column(c, justify="right" if c == "requests" else "left", overflow="fold")
    for p in plan["phases"]:
        t.add_row(p["phase"], str(p["requests"]), escape(p["what"]))
    t.add_row("[bold]budget[/]", f"{plan['planned_requests']}",
              f"planned; at most {plan['max_with_retries']} with {plan['retries']} retries each; "
              f"--max-requests {plan['max_requests']}, --deadline {plan['deadline_s']:g} s, "
              f"--timeout {plan['timeout_s']:g} s, --concurrency {plan['concurrency']}")
    lengths = plan["lengths"]
    t.add_row("lengths", "", escape(lengths if isinstance(lengths, str) else
                                    ", ".join(f"{x['tokens']:,} ({x['label']})" for x in lengths)))
    t.add_row("rule", "", escape(plan["rule"]))
    stderr.print(t)
    if plan.get("warning"):
        stderr.print(f"[yellow]warning:[/] {escape(plan['warning'])}", highlight=False)


def print_result(result) -> None:
    from rich.markup import escape
    from rich.table import Table

    from kvir.core.progress import stderr

    colour = {"exposed": "bold red", "not exposed": "bold green", "inconclusive": "bold yellow"}
    f = result.facts or {}
    stderr.print(f"server: engine {f.get('engine')} {f.get('version') or ''}, context {f.get('context')}, pool "
                 f"{f.get('pool')}, max_req_input_len {f.get('max_req_input_len')}, PD mode {f.get('pd_mode')}",
                 highlight=False, markup=False)
    t = Table(title="Checks", title_justify="left")
    for c in ("check", "verdict", "why"):
        t.add_column(c, overflow="fold")
    for c in result.checks:
        t.add_row(c.name, f"[{colour[c.verdict]}]{c.verdict}[/]", escape(c.reason))
    stderr.print(t)
    if result.findings:
        ft = Table(title="Findings (ids, lengths and hashes only)", title_justify="left")
        for c in ("rule", "severity", "finding"):
            ft.add_column(c, overflow="fold")
        for x in result.findings[:40]:
            ft.add_row(x.rule_id, x.severity, escape(x.message))
        if len(result.findings) > 40:
            ft.add_row("…", "", f"{len(result.findings) - 40} more in --json / --output")
        stderr.print(ft)
    for n in result.notes:
        stderr.print(f"note: {escape(n)}", highlight=False)
    stderr.print(f"[{colour[result.verdict]}]verdict: {result.verdict}[/] ({escape(result.reason)}); "
                 f"{result.sent} requests in {result.wall_s:.1f} s", highlight=False)
