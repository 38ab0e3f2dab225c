"""Which engine served the incident and which model names the logs carry, for triage.

The engine comes from incident.toml ([trigger] engine) or else from the evidence: the formats of the
inputs that are an engine's own logs, and the start-up logs when triage reads them
(kvir.rules.engines.resolve_engine). It is recorded in the case's incident table (engine, engine_source)
and every later stage reads it from there.

The model inventory (queries/triage/models.sql: every name the window's requests carry, with counts; 0.16 s
beside 0.5 s for triage/hits on 10^7 Parquet rows read in place, measured on the 2-core machine) answers a
spec whose models match nothing, or a small share of a source while near-spellings match many: triage
says so on stderr, in summary.json and in the report's index, closest names first (difflib on the few
distinct names, never on rows).
"""
from __future__ import annotations

import difflib
from typing import Any

from kvir.case.store import Case
from kvir.rules.engines import EngineChoice, resolve_engine
from kvir.spec.model import IncidentSpec

# a source's records the spec's names match, as a share of its records, below which near-spellings are named
SMALL_SHARE = 0.2


def engine_of_format(name: str | None) -> str | None:
    """The engine whose own log a format is (sglang-json -> sglang, vllm -> vllm); None for gateways."""
    from kvir.ingest.formats import FORMATS

    f = FORMATS.get(name or "")
    if f is None or not f.engine:
        return None
    return (name or "").split("-")[0]


def engine_of_case(case: Case, spec: IncidentSpec) -> EngineChoice:
    """The engine: declared in the spec, else named by the evidence in the case (engine-log sources, start-up
    logs in node_configs)."""
    evidence: list[tuple[str, str]] = []
    if case.has("sources"):
        for fmt, label in case.con.execute("SELECT format, label FROM sources ORDER BY source_id").fetchall():
            e = engine_of_format(fmt)
            if e:
                evidence.append((e, f"{fmt} log {_name(label)}"))
    if case.has("metric_samples"):      # sglang:prompt_tokens_histogram, vllm:request_prompt_tokens
        for (prefix,) in case.con.execute("SELECT DISTINCT split_part(metric, ':', 1) FROM metric_samples "
                                          "WHERE metric LIKE '%:%' ORDER BY 1").fetchall():
            if prefix in ("sglang", "vllm"):
                evidence.append((prefix, f"{prefix}: metrics"))
    if case.has("node_configs"):
        for e, f, line in case.con.execute("SELECT engine, evidence_file, evidence_line FROM node_configs "
                                           "WHERE engine IS NOT NULL ORDER BY config_id").fetchall():
            evidence.append((e, f"start-up log {_name(f)}:{line}"))
    return resolve_engine(spec.engine, evidence)


def record_engine(case: Case, choice: EngineChoice) -> None:
    for k, v in (("engine", choice.name), ("engine_source", choice.source)):
        case.con.execute("DELETE FROM incident WHERE key = $k", {"k": k})
        case.con.execute("INSERT INTO incident VALUES ($k, $v)", {"k": k, "v": v})


def _name(path: Any) -> str:
    return str(path or "?").rsplit("/", 1)[-1]


def model_inventory(case: Case, spec: IncidentSpec, summary: dict[str, Any]) -> dict[str, Any]:
    """The names the logs carry (with counts), and a note when the spec's models match none of the requests,
    or a small share of a source's while near-spellings match many."""
    if not case.has("requests"):           # a lake only Spark reaches: no requests in the case to list
        return {"names": [], "matched_requests": None, "note": ""}
    case.run("triage/models", {"window_start": spec.window_start, "window_end": spec.window_end})
    rows = case.con.execute("SELECT name, source_format, requests, in_window FROM model_inventory").fetchall()
    return inventory_note(spec.model_names, rows, int(summary.get("in_scope") or 0))


def inventory_note(models: tuple[str, ...], rows: list[tuple], in_scope: int) -> dict[str, Any]:
    names: dict[str, dict[str, int]] = {}
    per_format: dict[str, int] = {}
    matched_per_format: dict[str, int] = {}
    for name, fmt, n, in_window in rows:
        d = names.setdefault(name, {"requests": 0, "in_window": 0})
        d["requests"] += int(n)
        d["in_window"] += int(in_window)
        per_format[fmt] = per_format.get(fmt, 0) + int(n)
        if name in models:
            matched_per_format[fmt] = matched_per_format.get(fmt, 0) + int(n)
    aliases = set(models)
    others = [n for n in names if n not in aliases]
    near = sorted(others, key=lambda n: (-max(_similarity(n, a) for a in models), -names[n]["requests"], n))
    listed = [{"name": n, **names[n], "similarity": round(max(_similarity(n, a) for a in models), 3)} for n in near]
    matched = sum(names[n]["requests"] for n in names if n in aliases)
    close = [x for x in listed if x["similarity"] >= 0.6]
    note = ""
    if names and matched == 0:
        note = (f"the incident's models ({', '.join(models)}) match none of the {sum(per_format.values()):,} "
                f"requests in the window; the logs carry: " + _names_text(listed[:8]))
    elif close and any(matched_per_format.get(f, 0) < SMALL_SHARE * n for f, n in per_format.items()) and \
            sum(x["requests"] for x in close) > matched:
        note = (f"the incident's models match {matched:,} requests, while near-spellings match "
                f"{sum(x['requests'] for x in close):,}: " + _names_text(close[:8])
                + " (add them to [incident] models if they are the same model)")
    return {"names": listed[:50] + [{"name": n, **names[n], "matched": True} for n in sorted(aliases & set(names))],
            "matched_requests": matched, "note": note}


def _similarity(a: str, b: str) -> float:
    if a.lower() == b.lower():
        return 0.99          # a case variant: the closest there is, still not the same name
    return difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio()


def _names_text(items: list[dict[str, Any]]) -> str:
    return ", ".join(f"{x['name']} ({x['requests']:,} requests)" for x in items)
