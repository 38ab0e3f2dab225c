"""Joining evidence: candidates (sources without prompt lengths) and gateway identities to the requests other
sources hold.

After requests_merged has merged whatever shares a request id or a bootstrap_room, each joinable source
gets a pass of queries/case/evidence_join.sql (plan_passes says in which order):

    identity   a source naming customers (a gateway log with counts) -> engine-log requests naming none:
               same prompt length, start times within the tolerance
    candidate  a source without prompt lengths (router, vLLM INFO, Logpush, nginx, Envoy) -> requests of
               other sources with counts and, for a client-facing source, every engine-log request: by
               the engine's id for the gateway's (vLLM's chatcmpl-<X-Request-Id>), else start times within
               the tolerance widened by each side's time resolution (and the same node when both name one)

Every joined record gets a row in `evidence_joins` (matched / ambiguous / unmatched, by which keys, the
delta, its candidates, and whether it stays a request of its own); the summary counts them. A record
that another source holds under another id never becomes a request of its own.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from kvir.case.store import Case
    from kvir.ingest.sources import Source

ENGINE_ROLES = ("prefill", "decode", "mixed")


@dataclass(frozen=True)
class JoinPass:
    """One run of queries/case/evidence_join.sql: a group of sources (the files of one format) and the
    sources whose requests may be its partners without prompt lengths (engine logs, for a gateway group)."""
    sources: list["Source"]
    kind: str                       # identity | candidate
    engine_ids: list[int]
    keys: tuple[str, ...] = ("id", "time")   # how records may be joined (a declared gateway's [[sources]] join)


def _is_engine(s: "Source") -> bool:
    return s.format.engine or (s.role or "") in ENGINE_ROLES


def _declared_gateway(s: "Source") -> bool:
    """A generic source declared client-facing ([[sources]] role = "gateway"): joined like a gateway's log."""
    return s.format.name.startswith("generic") and s.role == "gateway"


def _evidence(s: "Source") -> str:
    if _declared_gateway(s):     # a mapping without prompt lengths holds candidates
        return "counts" if "prompt_tokens" in s.columns else "candidates"
    return s.format.evidence


def _group(s: "Source") -> str:
    """The pass a source joins: the files of one format together, each declared gateway (its own mapping) apart."""
    if _declared_gateway(s):
        return f"{s.format.name}:{s.source_id}"
    return s.format.name + (":" + ",".join(s.join) if s.join else "")    # a source's own join keys: its own pass


def plan_passes(sources: list["Source"]) -> list[JoinPass]:
    """The passes in the order they run, the files of one format together (a folder of gateway pages is one
    pass, not one per page: each pass rewrites `requests`); none when nothing could be joined.

    Order: identities first (a gateway record merged into an engine request by its customer does not make a
    later candidate ambiguous), then engine-side candidates (a vLLM log joins requests with counts), then
    client-facing candidates (nginx, a router, Logpush), whose partners are requests with counts and every
    request an engine log holds, counts or not: an engine log alone names every request it served."""
    counts = [s for s in sources if _evidence(s) == "counts"]
    engines = [s for s in sources if _is_engine(s)]
    groups: dict[tuple[int, str, str], list[Source]] = {}
    if any(s.format.engine for s in counts):
        for s in sources:
            if (s.format.names_customers or _declared_gateway(s)) and not s.format.engine:
                groups.setdefault((0, "identity", _group(s)), []).append(s)
    for s in sources:
        # a declared gateway's records without a prompt length are candidates, whatever else it maps
        if _evidence(s) != "candidates" and not _declared_gateway(s):
            continue
        if _is_engine(s):
            if counts:
                groups.setdefault((1, "candidate", _group(s)), []).append(s)
        elif counts or engines:
            groups.setdefault((2, "candidate", _group(s)), []).append(s)
    out = []
    for (order, kind, _), group in sorted(groups.items(), key=lambda kv: kv[0][0]):
        ids = {s.source_id for s in group}
        engine_ids = [s.source_id for s in engines if s.source_id not in ids] if order == 2 else []
        out.append(JoinPass(group, kind, engine_ids, group[0].join or ("id", "time")))
    return out


def join_evidence(case: "Case", sources: list["Source"], tolerance_s: float) -> int:
    """Run the passes; returns how many ran. `requests` must be a table (requests_merged)."""
    passes = plan_passes(sources)
    for p in passes:
        case.con.execute("CREATE OR REPLACE TEMP TABLE ej_settings AS SELECT $sids::INTEGER[] AS source_ids, "
                         "$pass::VARCHAR AS pass, $tol::DOUBLE AS tolerance_s, $eids::INTEGER[] AS engine_ids, "
                         "$keys::VARCHAR[] AS keys",
                         {"sids": [s.source_id for s in p.sources], "pass": p.kind, "tol": float(tolerance_s),
                          "eids": p.engine_ids, "keys": list(p.keys)})
        case.run("case/evidence_join", inputs={"join": "ej_settings"})
    return len(passes)
