"""Joining evidence: candidates (sources without prompt lengths) and gateway identities to requests with counts.

After requests_merged has merged whatever shares a request id or a bootstrap_room, each joinable source
gets a pass of queries/case/evidence_join.sql (identity passes first, so that a gateway record already
merged into an engine request does not make a later candidate ambiguous):

    identity   a source naming customers (a gateway log with counts) -> engine-log requests naming none:
               same prompt length, start times within the tolerance
    candidate  a source without prompt lengths (router, vLLM INFO, Logpush, nginx, Envoy) -> requests of
               other sources with counts: start times within the tolerance (and the same node when
               both sides name one)

Every joined request gets a row in `evidence_joins` (matched / missed / ambiguous, by which keys, the
delta); the summary counts them. The tolerance is stated in each row.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from kvir.case.store import Case
    from kvir.ingest.sources import Source

def plan_passes(sources: list["Source"]) -> list[tuple[list["Source"], str]]:
    """(sources, pass) in the order they run, the files of one format together (a folder of gateway pages
    is one pass, not one per page: each pass rewrites `requests`); none when nothing could be joined."""
    counts = [s for s in sources if s.format.evidence == "counts"]
    if not counts:
        return []
    engine_counts = any(s.format.engine for s in counts)
    groups: dict[tuple[str, str], list[Source]] = {}
    if engine_counts:
        for s in sources:
            if s.format.names_customers and not s.format.engine:
                groups.setdefault(("identity", s.format.name), []).append(s)
    for s in sources:
        if s.format.evidence == "candidates":
            groups.setdefault(("candidate", s.format.name), []).append(s)
    return [(group, kind) for (kind, _), group in groups.items()]


def join_evidence(case: "Case", sources: list["Source"], tolerance_s: float) -> int:
    """Run the passes; returns how many ran. `requests` must be a table (requests_merged)."""
    passes = plan_passes(sources)
    for group, kind in passes:
        case.con.execute("CREATE OR REPLACE TEMP TABLE ej_settings AS SELECT $sids::INTEGER[] AS source_ids, "
                         "$pass::VARCHAR AS pass, $tol::DOUBLE AS tolerance_s",
                         {"sids": [s.source_id for s in group], "pass": kind, "tol": float(tolerance_s)})
        case.run("case/evidence_join", inputs={"join": "ej_settings"})
    return len(passes)
