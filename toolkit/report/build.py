"""Building the incident model from the case alone: the tables written by triage, audit and replay, and
the spec facts that triage recorded. Each question is one query in queries/report/ over all accounts (run
once through Case.run, logged in the manifest); the rows are split by account in memory.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from kvir.audit.rules import RULES_BY_ID
from kvir.case.spec_tables import incident_mechanism, read_disclosure
from kvir.case.store import Case
from kvir.core.errors import KvirError
from kvir.core.files import sha256_file
from kvir.report.defect import defect_for
from kvir.report.disclosure import parse_disclosure
from kvir.report.model import Counts, Facts, IncidentModel
from kvir.report.mechanisms import PrefixFacts, make_story
from kvir.report.story import Evidence
from kvir.spec.mechanism import OVERSIZED_PROMPT
from kvir.rules.engines import ENGINES, EngineChoice
from kvir.report.plotting import bin_edges, limit_values
from kvir.report.read import EvidenceNames, grouped, home, rows
from kvir.report.records import (AccountExposure, AffectedResponse, CandidateSource, Finding, HistogramBin,
                                 Indicator, NodeExposure, NodeFix, ReplaySummary, ReplayVerdict, SourceExposure,
                                 SourceRequest, Stage, TrafficGap)
from kvir.report.times import iso, utc

NEEDED_TABLES = ("affected", "accounts", "nodes", "triage_hits", "excluded", "requests", "account_rules")
BINS_PER_DECADE = 10


def _facts(case: Case) -> Facts:
    if not case.has("incident"):
        raise KvirError("the case has no `incident` table: run `kvir triage` first", path=str(home(case)))
    kv = dict(case.con.execute("SELECT key, value FROM incident").fetchall())
    mechanism, prefix_cache = incident_mechanism(case)
    need = ("id", "title", "models", "window_start", "window_end") + (
        ("pool_tokens", "context_tokens", "rule") if mechanism == OVERSIZED_PROMPT else ())
    missing = [k for k in need if k not in kv]
    if missing:
        raise KvirError(f"the case's incident table lacks {', '.join(missing)}", path=str(home(case)))
    engine = kv.get("engine") if kv.get("engine") in ENGINES else "unknown"
    pool, context = (int(kv["pool_tokens"]), int(kv["context_tokens"])) if mechanism == OVERSIZED_PROMPT else (None, None)
    return Facts(
        id=kv["id"], title=kv["title"], models=tuple(json.loads(kv["models"])),
        window_start=utc(kv["window_start"]), window_end=utc(kv["window_end"]),
        pool_tokens=pool, context_tokens=context, rule=kv.get("rule") or "", mechanism=mechanism,
        prefix_cache=prefix_cache,
        engine=engine, engine_source=kv.get("engine_source") or "not recorded by triage (triage again)",
        model_names=tuple(json.loads(kv.get("model_names") or kv["models"])),
        spec_path=EvidenceNames.of(case).path(kv.get("spec_path", "")),
        awareness_time=utc(kv["awareness_time"]) if kv.get("awareness_time") else None,
    )


def _counts(case: Case, warns: list[str], mechanism: str) -> Counts:
    """The triage's headline counts (table triage_summary), exactly as `kvir triage` printed them. A
    prefix-cache case's affected table holds the possibly affected responses beside the affected ones."""
    if not case.has("triage_summary"):
        raise KvirError("the case has no `triage_summary` table (triaged by an older kvir): run `kvir triage` "
                        "again", path=str(home(case)))
    h = rows(case, "headline")[0]
    possibly = 0
    if mechanism != OVERSIZED_PROMPT and "possibly_affected" in case.columns("triage_summary"):
        possibly = int(rows(case, "prefix_facts")[0]["possibly_affected"] or 0)
    if int(h["affected_now"]) != int(h["affected"]) + possibly:
        warns.append(f"the triage summary says {h['affected']} affected responses, the case's affected table now "
                     f"holds {h['affected_now']}: run `kvir triage` again before publishing")
    return Counts.from_row(h)


def _stages(case: Case) -> list[Stage]:
    out = [Stage("triage", True, ("requests", "affected", "accounts", "nodes"), "")]
    audit = tuple(t for t in ("node_configs", "findings", "runtime_indicators") if case.has(t))
    out.append(Stage("audit", bool(audit), audit,
                     "" if audit else "not run: no node_configs, findings or runtime_indicators in the case "
                                      "(run `kvir audit`)"))
    replay = tuple(t for t in ("replay_results", "replay_exposure") if case.has(t))
    out.append(Stage("replay", "replay_results" in replay, replay,
                     "" if "replay_results" in replay else "not run: no replay_results in the case (run `kvir replay`)"))
    return out


def _accounts(case: Case, replay_ran: bool, mechanism: str) -> list[AccountExposure]:
    responses = grouped(rows(case, "account_responses" if mechanism == OVERSIZED_PROMPT else "prefix_responses"),
                        "account_id")
    replays = grouped(rows(case, "account_replays"), "account_id") if replay_ran else {}
    out = []
    for a in rows(case, "accounts"):
        acc = AccountExposure(a["account_id"], a["label"], a["label_reason"], bool(a["excluded"]), int(a["affected"]),
                              utc(a["first_affected"]), utc(a["last_affected"]))
        if acc.account_id is not None:
            acc.responses = [AffectedResponse(r["request_id"], utc(r["ts"]), utc(r["ts_end"]), r["prompt_tokens"],
                                              r["completion_tokens"], r["http_status"], r["finish_reason"],
                                              r.get("verdict"), r.get("cached_tokens"), r.get("source_tenants"))
                             for r in responses.get(acc.account_id, [])]
            acc.replay = [ReplayVerdict(r["request_id"], r["verdict"], r["leaked_tokens"], int(r["foreign_requests"]),
                                        r["reason"])
                          for r in replays.get(acc.account_id, [])]
        out.append(acc)
    return out


def _audit(case: Case) -> tuple[list[NodeFix], list[Finding], list[Indicator]]:
    names = EvidenceNames.of(case)

    def ev(r: dict[str, Any], prefix: str) -> str:
        return names.evidence(r[f"{prefix}_file"], r[f"{prefix}_line"])

    fixes = [NodeFix(r["node"], r["role"], int(r["starts"]), utc(r["vulnerable_from"]), r["vulnerable_pool"],
                     r["vulnerable_context"], ev(r, "vulnerable"), utc(r["fixed_at"]), r["fixed_version"],
                     r["fixed_pool"], r["fixed_context"], ev(r, "fixed"), bool(r["still_vulnerable"]))
             for r in rows(case, "node_fixes")] if case.has("node_configs") else []
    findings = [Finding(r["rule_id"], r["severity"], r["node"], r["role"], utc(r["ts"]), r["title"] or "",
                        r["message"] or "", r["fix"] or "", ev(r, "evidence"))
                for r in rows(case, "findings")] if case.has("findings") else []
    indicators = [Indicator(r["node"], r["role"], r["indicator"], int(r["n"] or 0), utc(r["first_ts"]),
                            utc(r["last_ts"]), ev(r, "evidence"))
                  for r in rows(case, "runtime_events")] if case.has("runtime_indicators") else []
    return fixes, findings, indicators


def _replay(case: Case, warns: list[str]) -> ReplaySummary:
    verdicts = rows(case, "replay_verdicts")
    replay = ReplaySummary({v["verdict"]: int(v["n"]) for v in verdicts},
                           sum(int(v["leaked_tokens"] or 0) for v in verdicts), sum(int(v["n"]) for v in verdicts),
                           sum(int(v["fixed_rejected"] or 0) for v in verdicts))
    has_basis = "build_basis" in case.columns("replay_results")
    if has_basis:
        reasons = rows(case, "replay_reasons")
        replay.reasons = [(r["verdict"], r["reason"], int(r["n"])) for r in reasons if r["verdict"] == "inconclusive"]
        replay.assumed_builds = sum(int(r["n"]) for r in reasons
                                    if r["verdict"] != "inconclusive" and r["build_basis"] == "assumed")
    if not case.has("replay_exposure"):
        warns.append("replay ran but wrote no replay_exposure table: no source-account notices")
        return replay
    requests = grouped(rows(case, "source_requests"), "account_id")
    for s in rows(case, "replay_sources"):
        src = SourceExposure(s["account_id"], s["label"], int(s["source_requests"]), int(s["reader_responses"]),
                             s["tokens"])
        src.requests = [SourceRequest(r["request_id"], utc(r["ts"]), int(r["reached_responses"]), r["tokens"])
                        for r in requests.get(src.account_id, [])]
        replay.sources.append(src)
    return replay


def _traffic_gap(case: Case, facts: Facts, search_from, minutes: float) -> TrafficGap | None:
    found = rows(case, "traffic_gap", {"models": list(facts.model_names), "search_from": search_from,
                                       "min_gap_s": minutes * 60})
    if not found:
        return None
    g, names = found[0], EvidenceNames.of(case)
    return TrafficGap(g["before_id"], utc(g["before_ts"]), names.evidence(g["before_file"], g["before_line"]),
                      g["after_id"], utc(g["after_ts"]), names.evidence(g["after_file"], g["after_line"]),
                      float(g["gap_s"]))


def _story(case: Case, facts: Facts, counts: Counts):
    """The engine, the defect and what the logs show, for the wording of every document (kvir.report.story)."""
    e = rows(case, "evidence_facts")[0]
    starts = rows(case, "start_facts") if case.has("node_configs") else []
    small = [r for r in starts if r["small_pool"]]
    first = EvidenceNames.of(case).evidence(small[0]["evidence_file"], small[0]["evidence_line"]) if small else ""
    holding = sum(1 for r in starts if not r["refused"] and r["holds_context"])
    ev = Evidence(int(e["pd_responses"] or 0), int(e["placeholder_responses"] or 0), case.has("node_configs"),
                  len(small), sum(1 for r in small if r["refused"]), first, holding)
    prefix = _prefix_facts(case, facts) if facts.mechanism != OVERSIZED_PROMPT else None
    defect, why = defect_for(read_disclosure(case, "defect"), starts, facts.engine, mechanism=facts.mechanism)
    choice = EngineChoice(ENGINES[facts.engine], facts.engine_source)
    return make_story(choice, facts.trigger, defect, why, ev, prefix=prefix)


def _prefix_facts(case: Case, facts: Facts) -> PrefixFacts:
    """The prefix-cache story's facts: the triage's counts beside `affected`, the audit's starts."""
    c = rows(case, "prefix_facts")[0] if "cannot_decide" in case.columns("triage_summary") else {}
    audited = case.has("node_configs") and "salt_honoured" in case.columns("node_configs")
    names = EvidenceNames.of(case)
    starts = tuple({**r, "evidence": names.evidence(r["evidence_file"], r["evidence_line"])}
                   for r in rows(case, "prefix_starts")) if audited else ()
    return PrefixFacts(facts.prefix_cache, int(c.get("possibly_affected") or 0), int(c.get("cannot_decide") or 0),
                       int(c.get("cache_hits") or 0), int(c.get("instances") or 0), int(c.get("source_tenants") or 0),
                       starts)


def build_model(case: Case, *, warnings: list[str] | None = None) -> IncidentModel:
    """Assemble the incident model from the case (tables written by triage, audit, replay and the spec
    facts triage recorded); build the timeline too."""
    from kvir.report.timeline import build_timeline

    logged = len(case.log.entries)
    facts = _facts(case)
    raw_disclosure = read_disclosure(case)
    if facts.awareness_time is not None:
        raw_disclosure.setdefault("awareness_time", iso(facts.awareness_time))
    disclosure = parse_disclosure(raw_disclosure, facts.id)
    warns = list(warnings or [])
    if disclosure.unknown_keys:
        warns.append("unknown [disclosure] key(s) ignored: " + ", ".join(disclosure.unknown_keys)
                     + " (see the keys in `kvir init`'s template)")
    for k in NEEDED_TABLES:
        if not case.has(k):
            raise KvirError(f"the case has no `{k}` table: run `kvir triage` first", path=str(home(case)))
    window = {"models": list(facts.model_names), "window_start": facts.window_start, "window_end": facts.window_end}
    counts = _counts(case, warns, facts.mechanism)
    stages = _stages(case)
    replay_ran = stages[2].ran
    accounts = _accounts(case, replay_ran, facts.mechanism)
    nodes = [NodeExposure(n["node"], n["role"], int(n["affected"]), utc(n["first_affected"]),
                          utc(n["last_affected"]), int(n["accounts"])) for n in rows(case, "nodes")]
    node_fixes, findings, indicators = _audit(case)
    if facts.mechanism != OVERSIZED_PROMPT:   # pool-vs-context restarts and PD indicators are another mechanism's
        node_fixes, indicators = [], []
    findings = [f for f in findings if RULES_BY_ID.get(f.rule_id) is None
                or RULES_BY_ID[f.rule_id].mechanism == facts.mechanism]
    replay = _replay(case, warns) if replay_ran else None
    bpd = BINS_PER_DECADE
    lines = limit_values(facts)          # bins split at the figure's limit lines: no bar spans one
    hist = [HistogramBin(*bin_edges(b["bin"], b["seg"], bpd, lines), int(b["n"]), int(b["n_affected"]))
            for b in rows(case, "prompt_histogram", {**window, "bins_per_decade": bpd, "lines": lines})]
    by_hour = [(utc(r["hour"]), int(r["n"])) for r in rows(case, "affected_by_hour")]
    gap = _traffic_gap(case, facts, disclosure.awareness_time or facts.window_start, disclosure.traffic_gap_minutes)

    story = _story(case, facts, counts)
    if "data_exposed" not in raw_disclosure:      # the default is what the mechanism exposes
        disclosure = replace(disclosure, data_exposed=story.data_exposed)
    if story.no_advisory:
        warns.append(story.no_advisory)
    if story.contradicted:
        warns.append("the start-up logs contradict incident.toml [trigger]: no start served on a KV pool below the "
                     "context, and every start that served held the whole context (check pool_tokens, or the nodes)")
    models_note = ((case.manifest.get("triage") or {}).get("summary") or {}).get("models_seen", {}).get("note", "")
    if models_note:
        warns.append("models: " + models_note)
    model = IncidentModel(
        facts=facts, counts=counts, accounts=accounts, nodes=nodes, node_fixes=node_fixes, findings=findings,
        indicators=indicators, replay=replay, stages=stages, disclosure=disclosure, story=story, histogram=hist,
        by_hour=by_hour, traffic_gap=gap, traffic_gap_query="queries/report/traffic_gap.sql",
        warnings=warns, models_note=models_note, case_path=home(case).name, case_inputs=list(case.manifest.get("inputs") or []),
    )
    if facts.mechanism != OVERSIZED_PROMPT:
        model.candidate_sources = [CandidateSource(r["account_id"], int(r["responses"]), int(r["affected"]),
                                                   utc(r["first_ts"]), utc(r["last_ts"]))
                                   for r in rows(case, "prefix_sources")]
    model.timeline = build_timeline(case, model)
    model.queries = list(case.log.entries[logged:])
    return model


def case_input_hashes(case: Case) -> dict[str, Any]:
    """SHA-256 of what the reports were built from: the case database, its manifest, the spec, the logs
    (their paths as the reports show them: kvir.report.read.shown_path)."""
    out: dict[str, Any] = {}
    names = EvidenceNames.of(case)
    for name in ("case.duckdb", "manifest.json"):
        p = Path(case.path) / name
        if p.exists():
            out[name] = {"sha256": sha256_file(p), "bytes": p.stat().st_size}
    spec = case.manifest.get("incident_spec")
    if spec:
        out["incident_spec"] = {**spec, "path": names.path(spec.get("path"))}
    out["log_inputs"] = [_shown_input(s, names) for s in case.manifest.get("inputs") or []]
    return out


def _shown_input(source: dict[str, Any], names: EvidenceNames) -> dict[str, Any]:
    s = dict(source)
    if "label" in s:
        s["label"] = names.path(s["label"])
    if isinstance(s.get("files"), list):
        s["files"] = [{**f, "path": names.path(f.get("path"))} if isinstance(f, dict) else f
                      for f in s["files"]]
    return s
