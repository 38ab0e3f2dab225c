"""`kvir init`, `kvir triage` and `kvir formats`: the spec, the affected responses, the formats read."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kvir.cli.present import MEMORY_LIMIT_HELP, echo, echo_json, fail, guarded, say


def register(app: typer.Typer) -> None:
    app.command("init")(init)
    app.command("triage")(triage)
    app.command("formats")(formats)


@guarded
def init(path: Annotated[Path, typer.Argument(help="Where to write the template.")] = Path("incident.toml"),
         force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
         mechanism: Annotated[Optional[str], typer.Option("--mechanism", help="How KV crossed tenants: one of the mechanisms listed below (default: the first).")] = None) -> None:
    """Write a commented incident.toml template, then say the next commands: triage, audit, replay, report."""
    from kvir.spec.mechanism import mechanism as mechanism_named, names
    from kvir.spec.template import template

    if mechanism is not None and mechanism not in names():
        fail(f"--mechanism: expected one of {', '.join(names())}, got {mechanism!r}")
    m = mechanism_named(mechanism)
    if path.exists() and not force:
        fail(f"{path}: already exists (use --force to overwrite)")
    path.write_text(template(m.name))
    echo(str(path))
    from kvir.cli.present.steps import lines

    fill = f"[{m.spec.section}]" if m.spec.section else ""      # the mechanism's own table of the spec
    for line in lines(path, init=True, fill=fill):
        say(line, wrap=False)          # commands to copy: whole lines


@guarded
def triage(
    paths: Annotated[Optional[list[str]], typer.Argument(help="Log files, folders or globs (default: the [[sources]] of the spec).")] = None,
    incident: Annotated[Path, typer.Option("--incident", "-i", help="The incident spec (incident.toml).")] = Path("incident.toml"),
    out: Annotated[Path, typer.Option("--out", "-o", help="The case folder to create or overwrite.")] = Path("case"),
    format: Annotated[str, typer.Option("--format", "-f", help="auto, or a name from `kvir formats`.")] = "auto",
    source_tz: Annotated[Optional[str], typer.Option("--source-tz", help="Zone of naive timestamps: IANA name or +HH:MM.")] = None,
    served_model: Annotated[Optional[str], typer.Option("--served-model", help="Model served by engine logs that do not name it in their settings dump.")] = None,
    year: Annotated[Optional[int], typer.Option("--year", help="Year for year-less timestamps (vLLM).")] = None,
    max_bad_lines: Annotated[Optional[int], typer.Option("--max-bad-lines", help="Fail when more records than this are quarantined.")] = None,
    keep_raw: Annotated[bool, typer.Option("--keep-raw", help="Keep the raw text of quarantined lines (may hold prompts).")] = False,
    hash: Annotated[str, typer.Option("--hash", help="Input fingerprints: auto (full for text, footer for Parquet), full (SHA-256 of every byte), footer, none.")] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON on stdout.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars or tables on stderr.")] = False,
    memory_limit: Annotated[Optional[str], typer.Option("--memory-limit", help=MEMORY_LIMIT_HELP)] = None,
    startup: Annotated[Optional[list[str]], typer.Option("--startup", help="Start-up logs (repeatable): judge each request by the pool in effect on its node at that time.")] = None,
    inventory: Annotated[Optional[Path], typer.Option("--inventory", help="Inventory TOML mapping start-up log files to nodes (with --startup).")] = None,
    join_tolerance: Annotated[float, typer.Option("--join-tolerance", help="Seconds within which evidence without a shared id is joined by time.")] = 2.0,
    max_line_bytes: Annotated[Optional[int], typer.Option("--max-line-bytes", help="Quarantine records longer than this many bytes (default 16 MiB); the rest of the file is still read.")] = None,
    engine: Annotated[str, typer.Option("--engine", help="duckdb (this machine), or spark: the same queries on Spark over canonical datasets written by `kvir ingest` (local folders or URIs Spark reads).")] = "duckdb",
    spark_master: Annotated[Optional[str], typer.Option("--spark-master", help="Spark master URL, e.g. local[8], yarn, spark://host:7077 (default: the running session's, else Spark's own).")] = None,
    spark_conf: Annotated[Optional[list[str]], typer.Option("--spark-conf", help="A Spark setting KEY=VALUE (repeatable), e.g. spark.executor.memory=8g.")] = None,
    list_models: Annotated[bool, typer.Option("--list-models", help="Only list the model names the logs carry, with counts (no spec needed; the spec's window and [[sources]] when -i names one), and write no case.")] = False,
) -> None:
    """Find the affected responses, the accounts and the nodes behind them."""
    from kvir.cli.present.triage import print_carried, print_triage
    from kvir.triage.run import triage as run_triage
    from kvir.triage.summary import TriageOptions

    if list_models:
        from kvir.triage.listing import list_models as run_list

        names = run_list(paths or [], incident if incident.exists() else None, format=format, source_tz=source_tz,
                         served_model=served_model, year=year, hash="none", progress=False)
        if as_json:
            echo_json({"models": names})
        else:
            for line in _models_text(names):
                echo(line)
        return

    conf = None
    if spark_conf:
        from kvir.triage.spark import parse_conf

        conf = parse_conf(spark_conf)

    options = TriageOptions.of(format=format, source_tz=source_tz, served_model=served_model, year=year,
                               max_bad_lines=max_bad_lines, keep_raw=keep_raw, hash=hash, progress=not quiet,
                               memory_limit=memory_limit, startup=startup or None, inventory=inventory,
                               join_tolerance_s=join_tolerance, max_line_bytes=max_line_bytes, query_engine=engine,
                               spark_master=spark_master, spark_conf=conf)
    result = run_triage(incident, paths or [], out=out, options=options)
    if not quiet:
        print_triage(result)
    print_carried(result)
    if as_json:
        echo_json(result.as_json())


def _models_text(names: list[dict]) -> list[str]:
    """One line per name (a name is log text: echo shows its control characters)."""
    return [f"{'requests':>10}  model"] + [f"{x['requests']:>10,}  {x['name']}" for x in names]


@guarded
def formats(
    name: Annotated[Optional[str], typer.Argument(help="One format: the fields it reads, an example record and "
                                                       "the software its fixtures came from.")] = None,
) -> None:
    """List every log format kvir reads, with what each needs (or describe one: `kvir formats NAME`)."""
    from kvir.cli.present.formats import print_format, print_formats

    print_format(name) if name else print_formats()
