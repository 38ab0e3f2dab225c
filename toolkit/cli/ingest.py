"""`kvir ingest`: normalise this machine's logs into one shard of a canonical dataset (Parquet)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kvir.cli.present import MEMORY_LIMIT_HELP, echo_json, guarded


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest)


@guarded
def ingest(
    paths: Annotated[Optional[list[str]], typer.Argument(help="Log files, folders or globs (default: the [[sources]] of the spec).")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="The canonical dataset (a folder; created if new). Each machine writes its own shard into it.")] = Path("lake"),
    shard: Annotated[Optional[str], typer.Option("--shard", help="This shard's name (default: the host name): letters, digits, . _ -.")] = None,
    incident: Annotated[Optional[Path], typer.Option("--incident", "-i", help="The incident spec: [[sources]] settings, the window that year-less and local times are placed by, the model engine logs serve.")] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="auto, or a name from `kvir formats`.")] = "auto",
    source_tz: Annotated[Optional[str], typer.Option("--source-tz", help="Zone of naive timestamps: IANA name or +HH:MM.")] = None,
    served_model: Annotated[Optional[str], typer.Option("--served-model", help="Model served by engine logs that do not name it in their settings dump.")] = None,
    year: Annotated[Optional[int], typer.Option("--year", help="Year for year-less timestamps (vLLM).")] = None,
    keep_raw: Annotated[bool, typer.Option("--keep-raw", help="Keep the raw text of quarantined lines (may hold prompts).")] = False,
    hash: Annotated[str, typer.Option("--hash", help="Input fingerprints: auto (full for text, footer for Parquet), full, footer, none.")] = "auto",
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a shard of the same name.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print what was written as JSON on stdout.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars or tables on stderr.")] = False,
    memory_limit: Annotated[Optional[str], typer.Option("--memory-limit", help=MEMORY_LIMIT_HELP)] = None,
    join_tolerance: Annotated[float, typer.Option("--join-tolerance", help="Seconds within which evidence without a shared id is joined by time.")] = 2.0,
) -> None:
    """Normalise logs into canonical requests Parquet (one shard of a dataset `kvir triage` reads, also with --engine spark)."""
    from kvir.cli.present.ingest import print_shard
    from kvir.ingest.export import ingest_shard

    result = ingest_shard(paths or [], out, shard=shard, incident=incident, format=format, source_tz=source_tz,
                          served_model=served_model, year=year, keep_raw=keep_raw, hash=hash, overwrite=overwrite,
                          progress=not quiet, memory_limit=memory_limit, join_tolerance_s=join_tolerance)
    if not quiet:
        print_shard(result)
    if as_json:
        echo_json(result.as_json())
