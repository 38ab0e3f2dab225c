"""`kvir ingest`'s summary on stderr: per input read = parsed + quarantined, and what the shard holds."""
from __future__ import annotations

from kvir.cli.present import say, stderr, table
from kvir.cli.present.triage import relative


def print_shard(result) -> None:
    cols = ("read", "parsed", "requests", "quarantined")
    rows = [[name, r["format"], *(r[c] for c in cols)]
            for name, r in zip(relative([str(r["label"]) for r in result.sources]), result.sources)]
    if len(result.sources) > 1:
        rows.append(["all inputs", "", *(sum(r[c] for r in result.sources) for c in cols)])
    stderr.print(table("Inputs: read = parsed + quarantined (per file)",
                       ["input", "format", *((c, "right") for c in cols)], rows))
    say(f"shard {result.shard}: {result.requests:,} requests (merged) written to {result.lake} "
        f"in {result.seconds:.1f} s; triage it with `kvir triage -i incident.toml {result.lake}` "
        f"(add --engine spark for Spark)")
