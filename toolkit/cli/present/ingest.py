"""`kvir ingest`'s summary on stderr: per input read = parsed + quarantined, and what the shard holds."""
from __future__ import annotations

from kvir.cli.present import say
from kvir.cli.present.triage import print_inputs


def print_shard(result) -> None:
    print_inputs(result.sources)
    say(f"shard {result.shard}: {result.requests:,} requests (merged) written to {result.lake} "
        f"in {result.seconds:.1f} s; triage it with `kvir triage -i incident.toml {result.lake}` "
        f"(add --engine spark for Spark)")
