"""Building the incident model from the case alone: the tables written by triage, audit and replay, and
the spec facts that triage recorded. Each question is one query in queries/report/ (or the case's
mechanism's own, queries/mechanisms/<folder>/report/) over all accounts (run once through Case.run, logged
in the manifest); the rows are split by account in memory and made records by column name. What differs
by mechanism the case's mechanism's report part says (kvir.report.plugin.ReportPart).
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from kvir.audit.rules import RULES_BY_ID
from kvir.case.spec_tables import case_mechanism, read_disclosure
from kvir.case.store import Case
from kvir.core.errors import KvirError
from kvir.core.files import sha256_file
from kvir.report.defect import defect_for
from kvir.report.disclosure import Disclosure, parse_disclosure
from kvir.report.model import Counts, Facts, IncidentModel
from kvir.report.plotting import bin_edges, limit_values
from kvir.report.plugin import ReportPart, StoryInputs, report_part
from kvir.report.read import EvidenceNames, grouped, home, rows
from kvir.report.records import (AccountExposure, AffectedResponse, Finding, HistogramBin, Indicator,
                                 NodeExposure, NodeFix, ReplaySummary, ReplayVerdict, SourceExposure,
                                 SourceRequest, Stage, TrafficGap, from_row)
from kvir.report.story import Evidence, Story
from kvir.report.times import iso, utc
from kvir.rules.engines import ENGINES, EngineChoice

NEEDED_TABLES = ("affected", "accounts", "nodes", "triage_hits", "excluded", "requests", "account_rules")
BINS_PER_DECADE = 10


def _facts(case: Case) -> Facts:
    if not case.has("incident"):
        raise KvirError("the case has no `incident` table: run `kvir triage` first", path=str(home(case)))
    kv = dict(case.con.execute("SELECT key, value FROM incident").fetchall())
    missing = [k for k in ("id", "title", "models", "window_start", "window_end") if k not in kv]
    if missing:
        raise KvirError(f"the case's incident table lacks {', '.join(missing)}", path=str(home(case)))
    mechanism, params = case_mechanism(case)
    return Facts(
        id=kv["id"], title=kv["title"], models=tuple(json.loads(kv["models"])),
        window_start=utc(kv["window_start"]), window_end=utc(kv["window_end"]),
        engine=kv.get("engine") if kv.get("engine") in ENGINES else "unknown",
        engine_source=kv.get("engine_source") or "not recorded by triage (triage again)",
        spec_path=EvidenceNames.of(case).path(kv.get("spec_path", "")),
        awareness_time=utc(kv["awareness_time"]) if kv.get("awareness_time") else None,
        mechanism=mechanism, params=params, model_names=tuple(json.loads(kv.get("model_names") or kv["models"])),
    )


def _counts(case: Case, warns: list[str], part: ReportPart) -> Counts:
    """The triage's headline counts (table triage_summary), exactly as `kvir triage` printed them. The affected
    table may hold the mechanism's possibly affected responses beside the affected ones."""
    if not case.has("triage_summary"):
        raise KvirError("the case has no `triage_summary` table (triaged by an older kvir): run `kvir triage` "
                        "again", path=str(home(case)))
    h = rows(case, "headline")[0]
    if int(h["affected_now"]) != int(h["affected"]) + part.possibly_affected(case):
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


def _accounts(case: Case, replay_ran: bool, folder: str) -> list[AccountExposure]:
    """Every affected account with its responses (report/account_responses, the mechanism's own where it has
    one: its extra columns ride along by name) and its replay verdicts."""
    responses = grouped(rows(case, "account_responses", mechanism=folder), "account_id")
    replays = grouped(rows(case, "account_replays"), "account_id") if replay_ran else {}
    out = []
    for a in rows(case, "accounts"):
        acc = from_row(AccountExposure, a, reason=a["label_reason"], excluded=bool(a["excluded"]),
                       affected=int(a["affected"]), first=utc(a["first_affected"]), last=utc(a["last_affected"]))
        if acc.account_id is not None:
            acc.responses = [AffectedResponse.of(r) for r in responses.get(acc.account_id, [])]
            acc.replay = [from_row(ReplayVerdict, r, foreign_requests=int(r["foreign_requests"]))
                          for r in replays.get(acc.account_id, [])]
        out.append(acc)
    return out


def _audit(case: Case, part: ReportPart, mechanism: str) -> tuple[list[NodeFix], list[Finding], list[Indicator]]:
    """The audit's node fixes, findings and runtime indicators, as far as the case's mechanism's documents show
    them: its own findings (a rule of another mechanism's audit checks what this incident is not about)."""
    names = EvidenceNames.of(case)

    def ev(r: dict[str, Any], prefix: str) -> str:
        return names.evidence(r[f"{prefix}_file"], r[f"{prefix}_line"])

    fixes = [from_row(NodeFix, r, starts=int(r["starts"]), vulnerable_from=utc(r["vulnerable_from"]),
                      vulnerable_evidence=ev(r, "vulnerable"), fixed_at=utc(r["fixed_at"]),
                      fixed_evidence=ev(r, "fixed"), still_vulnerable=bool(r["still_vulnerable"]))
             for r in rows(case, "node_fixes")] if case.has("node_configs") else []
    findings = [from_row(Finding, r, ts=utc(r["ts"]), title=r["title"] or "", message=r["message"] or "",
                         fix=r["fix"] or "", evidence=ev(r, "evidence"))
                for r in rows(case, "findings")] if case.has("findings") else []
    indicators = [from_row(Indicator, r, n=int(r["n"] or 0), first_ts=utc(r["first_ts"]), last_ts=utc(r["last_ts"]),
                           evidence=ev(r, "evidence"))
                  for r in rows(case, "runtime_events")] if case.has("runtime_indicators") else []
    # Seam: the audit stage says which mechanism each rule checks (kvir.audit.rules.Rule.mechanism); a finding
    # of a rule it does not list is kept.
    findings = [f for f in findings if RULES_BY_ID.get(f.rule_id) is None
                or RULES_BY_ID[f.rule_id].mechanism == mechanism]
    return (fixes if part.shows_node_fixes else [], findings,
            indicators if part.shows_runtime_indicators else [])


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
        src = from_row(SourceExposure, s, source_requests=int(s["source_requests"]),
                       reader_responses=int(s["reader_responses"]))
        src.requests = [from_row(SourceRequest, r, ts=utc(r["ts"]), reached_responses=int(r["reached_responses"]))
                        for r in requests.get(src.account_id, [])]
        replay.sources.append(src)
    return replay


def _traffic_gap(case: Case, facts: Facts, search_from, minutes: float) -> TrafficGap | None:
    found = rows(case, "traffic_gap", {"models": list(facts.model_names), "search_from": search_from,
                                       "min_gap_s": minutes * 60})
    if not found:
        return None
    g, names = found[0], EvidenceNames.of(case)
    return from_row(TrafficGap, g, before_ts=utc(g["before_ts"]), after_ts=utc(g["after_ts"]),
                    before_evidence=names.evidence(g["before_file"], g["before_line"]),
                    after_evidence=names.evidence(g["after_file"], g["after_line"]), gap_s=float(g["gap_s"]))


def _story(case: Case, facts: Facts, part: ReportPart, node_fixes: list[NodeFix]) -> Story:
    """The engine, the defect and what the logs show, for the wording of every document: the mechanism's
    story over them (kvir.report.story)."""
    e = rows(case, "evidence_facts")[0]
    starts = rows(case, "start_facts") if case.has("node_configs") else []
    small = [r for r in starts if r["small_pool"]]
    first = EvidenceNames.of(case).evidence(small[0]["evidence_file"], small[0]["evidence_line"]) if small else ""
    holding = sum(1 for r in starts if not r["refused"] and r["holds_context"])
    ev = Evidence(int(e["pd_responses"] or 0), int(e["placeholder_responses"] or 0), case.has("node_configs"),
                  len(small), sum(1 for r in small if r["refused"]), first, holding)
    defect, why = defect_for(read_disclosure(case, "defect"), starts, facts.engine, part.defect_knowledge)
    choice = EngineChoice(ENGINES[facts.engine], facts.engine_source)
    return part.story(StoryInputs(case, facts, choice, defect, why, ev, tuple(node_fixes)))


def _disclosure(case: Case, facts: Facts, warns: list[str]) -> tuple[dict[str, Any], Disclosure]:
    """[disclosure] as the case stores it (raw) and typed; its unknown keys said in `warns`."""
    raw = read_disclosure(case)
    if facts.awareness_time is not None:
        raw.setdefault("awareness_time", iso(facts.awareness_time))
    disclosure = parse_disclosure(raw, facts.id)
    if disclosure.unknown_keys:
        warns.append("unknown [disclosure] key(s) ignored: " + ", ".join(disclosure.unknown_keys)
                     + " (see the keys in `kvir init`'s template)")
    return raw, disclosure


def _histogram(case: Case, facts: Facts, part: ReportPart) -> list[HistogramBin]:
    """Prompt lengths of the model's requests in the window, in log bins split at the mechanism's prompt
    limits (the figure's lines: no bar spans one)."""
    bpd = BINS_PER_DECADE
    lines = limit_values(x.tokens for x in part.prompt_limits(facts).lines)
    window = {"models": list(facts.model_names), "window_start": facts.window_start, "window_end": facts.window_end}
    return [HistogramBin(*bin_edges(b["bin"], b["seg"], bpd, lines), int(b["n"]), int(b["n_affected"]))
            for b in rows(case, "prompt_histogram", {**window, "bins_per_decade": bpd, "lines": lines})]


def build_model(case: Case, *, warnings: list[str] | None = None) -> IncidentModel:
    """Assemble the incident model from the case (tables written by triage, audit, replay and the spec
    facts triage recorded); build the timeline too."""
    from kvir.report.timeline import build_timeline

    logged = len(case.log.entries)
    facts = _facts(case)
    part = report_part(facts.mechanism.name)
    warns = list(warnings or [])
    raw_disclosure, disclosure = _disclosure(case, facts, warns)
    for k in NEEDED_TABLES:
        if not case.has(k):
            raise KvirError(f"the case has no `{k}` table: run `kvir triage` first", path=str(home(case)))
    counts = _counts(case, warns, part)
    stages = _stages(case)
    replay_ran = stages[2].ran
    accounts = _accounts(case, replay_ran, facts.mechanism.folder)
    nodes = [from_row(NodeExposure, n, affected=int(n["affected"]), first=utc(n["first_affected"]),
                      last=utc(n["last_affected"]), accounts=int(n["accounts"])) for n in rows(case, "nodes")]
    node_fixes, findings, indicators = _audit(case, part, facts.mechanism.name)
    replay = _replay(case, warns) if replay_ran else None
    hist = _histogram(case, facts, part)
    by_hour = [(utc(r["hour"]), int(r["n"])) for r in rows(case, "affected_by_hour")]
    gap = _traffic_gap(case, facts, disclosure.awareness_time or facts.window_start, disclosure.traffic_gap_minutes)
    story = _story(case, facts, part, node_fixes)
    if "data_exposed" not in raw_disclosure:      # the default is what the mechanism exposes
        disclosure = replace(disclosure, data_exposed=story.data_exposed)
    warns += [story.no_advisory] if story.no_advisory else []
    warns += story.warnings
    models_note = ((case.manifest.get("triage") or {}).get("summary") or {}).get("models_seen", {}).get("note", "")
    if models_note:
        warns.append("models: " + models_note)
    model = IncidentModel(
        facts=facts, counts=counts, accounts=accounts, nodes=nodes, node_fixes=node_fixes, findings=findings,
        indicators=indicators, replay=replay, stages=stages, disclosure=disclosure, story=story, histogram=hist,
        by_hour=by_hour, traffic_gap=gap, traffic_gap_query="queries/report/traffic_gap.sql",
        candidate_sources=part.candidate_sources(case), warnings=warns, models_note=models_note,
        case_path=home(case).name, case_inputs=list(case.manifest.get("inputs") or []),
    )
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
        out["incident_spec"] = {k: v for k, v in spec.items() if k != "resolved"} | {"path": names.path(spec.get("path"))}
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
