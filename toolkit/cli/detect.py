"""`kvir detect`: a thin Typer wrapper over kvir.detect (see toolkit/detect/__init__.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kvir.cli.present import Col, fail, guarded, say, stderr, table

HELP = """Write detection rules for an incident's mechanism from the engines' real signals, or hunt with them.

From -i incident.toml (its mechanism, and its engine when it names one) or --mechanism M (every registered
mechanism without either), with the shared KV transfer signals: Sigma rules over the engines' own lines
(scheduler rejections beside a served response, KV checksum mismatches, canary violations, transfer failures,
aborts followed by admissions on the same node), converted by pySigma's Loki backend (LogQL, Loki ruler alerts)
and DuckDB backend, the rules for Timesketch's Sigma analyzer with its field mapping, and Prometheus alerting
rules over the engines' counters and kvir probe's verdict metrics. Writes DIR (-o).

--hunt LOGS... runs the same rules backwards over logs (DuckDB) and lists what each found; --timesketch FILE
also writes the logs' events as Timesketch JSONL. Needs the kvir[detect] extra (pySigma and its backends).
"""


def register(app: typer.Typer) -> None:
    app.command(name="detect", help=HELP)(detect_command)


@guarded
def detect_command(
    incident: Annotated[Optional[Path], typer.Option("--incident", "-i", help="incident.toml: its mechanism's signals.")] = None,
    mechanism: Annotated[Optional[str], typer.Option("--mechanism", help="A registered mechanism (without -i).")] = None,
    out: Annotated[Optional[Path], typer.Option("--output", "-o", help="Folder to write the rules into.")] = None,
    hunt: Annotated[Optional[list[str]], typer.Option("--hunt", help="Logs to run the rules over (repeatable).")] = None,
    source_tz: Annotated[Optional[str], typer.Option("--source-tz", help="Zone of the hunted logs' host-local times.")] = None,
    year: Annotated[Optional[int], typer.Option("--year", help="Year of vLLM's year-less times.")] = None,
    timesketch: Annotated[Optional[Path], typer.Option("--timesketch", help="With --hunt: write the events as Timesketch JSONL.")] = None,
    loki_selector: Annotated[Optional[str], typer.Option("--loki-selector", help='LogQL stream selector, e.g. {namespace="llm"} (default: every stream).')] = None,
) -> None:
    if incident is not None and mechanism is not None:
        fail("give -i incident.toml or --mechanism, not both")
    if out is None and not hunt:
        fail("nothing to do: give -o DIR (write the rules) and/or --hunt LOGS")
    try:
        import sigma  # noqa: F401  (pySigma)
    except ImportError:
        fail("kvir detect needs pySigma: pip install 'kvir[detect]'")
    from kvir.detect import content, hunt as run_hunt, write

    spec = None
    if incident is not None:
        from kvir.spec.model import load_spec

        spec = load_spec(incident)
    c = content(spec, mechanism)
    if out is not None:
        written = write(c, out, loki_selector=loki_selector)
        say(f"{len(written)} file(s) written to {out} ({len(c.lines())} line rules, {len(c.correlations())} "
            f"correlation rules, Prometheus alerts: {sum(len(v) for v in c.counters().values())})")
    if hunt:
        hits = run_hunt(c, hunt, source_tz=source_tz, year=year, events_jsonl=timesketch)
        stderr.print(table("Hunt: each rule over the logs' events", ("rule", "level", Col("hits", right=True),
                                                                      Col("first hit", below=True)),
                           [[h.rule, h.level, h.count, _where(h.first)] for h in hits]))


def _where(first) -> str:
    if not first:
        return "-"
    if "file" in first:
        return f"{first['file']}:{first['line_no']}"
    return ", ".join(f"{k}={v}" for k, v in first.items() if k not in ("first_event", "last_event"))
