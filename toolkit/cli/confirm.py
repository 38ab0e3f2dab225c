"""`kvir confirm`: a thin Typer wrapper over kvir.confirm.run.confirm."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kvir.cli.present import MEMORY_LIMIT_HELP, echo_json, guarded

HELP = """Decide from the prompts and responses the sources hold whether each affected (or possibly affected)
response of the case carried another tenant's content, and whose: opt-in, never part of triage.

TEXT-SOURCES are files that hold text: OpenAI-style response bodies (openai-response), vLLM's own log at
DEBUG (its prompts) and with --enable-log-outputs (chat responses), LiteLLM SpendLogs and Langfuse
observations where they kept prompts, or any JSON Lines with --format generic-jsonl --map request_id=PATH
--map prompt=PATH --map response=PATH (dotted paths; * for every element of a list, e.g.
body.*.choices.0.text for a saved stream; a field given twice tries its paths in order). With --map and
--format auto, a JSON Lines file kvir does not recognise is read as generic-jsonl. Each text's request is
the case's request of that id.

No text is kept: every prompt and response becomes salted fingerprints (winnowed 24-byte windows under the
key in --key, a file apart from the case, readable by its owner only; created when missing; the manifest
names it by its SHA-256). Verdicts, in confirmations.csv and the case's confirmations table:
confirmed foreign content (the source request, its tenant, the overlap), corruption without foreign
content (replacement characters, noise, repetition, a script shift), not confirmed (nothing matched: no
proof of absence), cannot decide (no text of the response). --needle PATTERN (a literal string, repeatable)
and the probe's canaries (when the case holds kvir probe runs whose plant prompts the sources hold) are
looked for in every response; needles.csv names the responses, never the needle.
"""


def register(app: typer.Typer) -> None:
    app.command(name="confirm", help=HELP)(confirm_command)


@guarded
def confirm_command(
    sources: Annotated[list[Path], typer.Argument(metavar="TEXT-SOURCES...", help="Files holding prompts and responses.")],
    case: Annotated[Path, typer.Option("--case", "-c", help="The case folder (from `kvir triage`).")],
    key: Annotated[Path, typer.Option("--key", help="The key file salting the fingerprints (outside the case; created, mode 600, when missing).")],
    format: Annotated[str, typer.Option("--format", "-f", help="Text format of every source, or auto (sniffed per file).")] = "auto",
    map_: Annotated[Optional[list[str]], typer.Option("--map", help="FIELD=PATH for generic-jsonl: request_id, prompt, response (repeat a field: paths tried in order).")] = None,
    needle: Annotated[Optional[list[str]], typer.Option("--needle", help="A string to look for in every response (repeatable).")] = None,
    window_s: Annotated[Optional[float], typer.Option("--window-s", help="Sources at most this many seconds before a response (default: any time before: the mechanism's window is not known here yet).")] = None,
    instance: Annotated[str, typer.Option("--instance", help="node: sources on a node the response ran on (or on none named); any: every node.")] = "node",
    threshold: Annotated[Optional[float], typer.Option("--threshold", help="Weighted shared windows that confirm a source (default: the measured one, benchmarks/README.md).")] = None,
    memory_limit: Annotated[Optional[str], typer.Option("--memory-limit", help=MEMORY_LIMIT_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON on stdout.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or tables on stderr.")] = False,
) -> None:
    from dataclasses import replace

    from kvir.cli.present.confirm import print_confirm
    from kvir.confirm.run import ConfirmOptions, Thresholds
    from kvir.core.errors import InputError

    maps: dict[str, list[str]] = {}
    for m in map_ or []:
        field, sep, path = m.partition("=")
        if not sep or not field.strip() or not path.strip():
            raise InputError(f"--map wants FIELD=PATH, not {m!r}")
        maps.setdefault(field.strip(), []).append(path.strip())
    thresholds = Thresholds() if threshold is None else replace(Thresholds(), score=threshold)
    result = _confirm(case, sources, ConfirmOptions(
        key=key, format=format, maps=maps, needles=list(needle or []), window_s=window_s, instance=instance,
        thresholds=thresholds, progress=not quiet, memory_limit=memory_limit))
    if not quiet:
        print_confirm(result)
    if as_json:
        echo_json(result.summary)


def _confirm(case, sources, options):
    from kvir.confirm.run import confirm

    return confirm(case, list(sources), options)
