"""`kvir probe`: a thin Typer wrapper over kvir.probe.run.probe. The plan and the request budget go to stderr
before anything is sent, then a progress bar, then the verdicts; JSON on stdout (--json) or in files."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from kvir.cli.parts import PartsCommand
from kvir.cli.present import echo_json, guarded, say

HELP = """Is a live deployment exposed? One command against its OpenAI-compatible API:

    kvir probe --endpoint https://llm.example.com/v1 --model MODEL \\
      --api-key-env KEY_A --tenant-b-key-env KEY_B

(KEY_A and KEY_B: environment variables holding two tenants' API keys.)

The probe reads what the server says about itself (SGLang /get_server_info,
vLLM /v1/models and /version; --pool and --context fill the gaps), builds
prompts of exact token counts with the server's /tokenize, and runs the
checks --checks names (default: the mechanisms' default checks):

{parts}

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


class ProbeCommand(PartsCommand):
    @staticmethod
    def part_help() -> str:
        """Each registered mechanism's checks, one paragraph each (kvir.probe.plugin.ProbeCheck.help)."""
        from kvir.probe.rules import checks

        return "\n\n".join(c.help for c in checks())


def register(app: typer.Typer) -> None:
    app.command(name="probe", help=HELP, cls=ProbeCommand)(probe_command)


@guarded
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
    checks: Annotated[Optional[str], typer.Option("--checks", help="Comma-separated check names (see above; default: the default checks).")] = None,
    timing: Annotated[bool, typer.Option("--timing", help="Add the timing check (as --checks ...,timing).")] = False,
    cache_salt: Annotated[str, typer.Option("--cache-salt", help="prefix-isolation: none, or per-tenant (a fresh cache_salt for each tenant).")] = "none",
    prefix_tokens: Annotated[int, typer.Option("--prefix-tokens", help="prefix-isolation: prompt tokens (at most half the limit).")] = 512,
    prefix_rounds: Annotated[int, typer.Option("--prefix-rounds", help="prefix-isolation: rounds of fresh prompts.")] = 2,
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
    metrics: Annotated[Optional[Path], typer.Option("--metrics", help="Write the verdicts as Prometheus metrics (textfile collector format, atomically) to this file.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No plan, progress or tables on stderr.")] = False,
) -> None:
    from kvir.cli.present.probe import ProgressBar, print_result
    from kvir.probe.rules import default_checks
    from kvir.probe.run import probe

    names = default_checks() if checks is None else tuple(c.strip() for c in checks.split(",") if c.strip())
    names += ("timing",) if timing and "timing" not in names else ()
    with ProgressBar(enabled=not quiet and not dry_run) as bar:
        result = probe(endpoint, model, pool=pool, context=context, engine=engine, api=api,
                       headers=tuple(header or ()), header_env=tuple(header_env or ()), api_key_env=api_key_env,
                       tenant_b_key_env=tenant_b_key_env, checks=names, cache_salt=cache_salt,
                       prefix_tokens=prefix_tokens, prefix_rounds=prefix_rounds,
                       tokenizer=str(tokenizer) if tokenizer else None, max_requests=max_requests,
                       concurrency=concurrency, timeout_s=timeout, retries=retries, deadline_s=deadline,
                       max_tokens=max_tokens, canary_max_tokens=canary_max_tokens, canary_rounds=canary_rounds,
                       dry_run=dry_run, progress=not quiet, case=case,
                       on_plan=None if quiet else bar.plan, on_progress=bar.update)
    doc = result.as_json()
    if output is not None:
        output.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    if sarif is not None:
        sarif.write_text(json.dumps(result.to_sarif(), indent=2, default=str) + "\n")
    if metrics is not None and not dry_run:
        from kvir.probe.metrics import write_metrics

        write_metrics(result, metrics)
    if not quiet and not dry_run:
        print_result(result)
        for what, p in (("JSON", output), ("SARIF", sarif), ("metrics", metrics), ("case", case)):
            if p is not None:
                say(f"{what}:", str(p))
    if as_json:
        echo_json(doc)
    raise typer.Exit(code=0 if dry_run else result.exit_code)
