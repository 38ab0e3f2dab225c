"""One incident model, assembled from the case alone; every document is a projection of it.

Each figure carries the query that produced it (`Traced` values and the `queries` list), so a number
in any report can be traced to queries/report/<name>.sql and its bound parameters. Stages that have
not run (audit, replay) are recorded as not run; nothing is filled in for them.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvir.rules.trigger import FORMULA, Trigger
from kvir.case.store import Case
from kvir.core.errors import KvirError
from kvir.core.files import sha256_file
from kvir.core.sql import load
from kvir.report.disclosure import Disclosure, parse_disclosure
from kvir.case.spec_tables import read_disclosure

UTC = dt.timezone.utc


def utc(v: Any) -> dt.datetime | None:
    """A DuckDB / ISO time as an aware UTC datetime (None stays None)."""
    if v is None:
        return None
    if isinstance(v, str):
        v = dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    if v.tzinfo is None:
        v = v.replace(tzinfo=UTC)
    return v.astimezone(UTC)


def iso(v: dt.datetime | None) -> str:
    """RFC 3339 UTC with a Z (the form every document uses)."""
    if v is None:
        return ""
    v = v.astimezone(UTC)
    spec = "seconds" if v.microsecond == 0 else "microseconds"
    return v.isoformat(timespec=spec).replace("+00:00", "Z")


# ------------------------------------------------------------------------------------- dataclasses

@dataclass(frozen=True)
class QueryTrace:
    """One query the model ran: which file (and its SHA-256), which parameters, how many rows."""

    name: str
    sha256: str
    params: dict[str, Any]
    rows: int

    @property
    def file(self) -> str:
        return f"queries/{self.name}.sql"


@dataclass(frozen=True)
class Facts:
    id: str
    title: str
    models: tuple[str, ...]
    window_start: dt.datetime
    window_end: dt.datetime
    pool_tokens: int
    context_tokens: int
    rule: str
    rule_text: str
    other_rule_text: str
    spec_path: str
    awareness_time: dt.datetime | None

    @property
    def model(self) -> str:
        return self.models[0]

    @property
    def trigger(self) -> Trigger:
        return Trigger(self.pool_tokens, self.context_tokens, self.rule)

    @property
    def engine_limit(self) -> int:
        return self.trigger.engine_limit

    @property
    def condition(self) -> str:
        """What every counted prompt had, under the rule the triage used ('more than 681,280 tokens')."""
        return self.trigger.condition()

    @property
    def complement(self) -> str:
        """What every prompt the rule did not count had ('681,280 tokens or fewer')."""
        return self.trigger.complement()

    @property
    def rule_formula(self) -> str:
        return FORMULA


@dataclass(frozen=True)
class Counts:
    requests_total: int
    in_scope: int
    affected: int
    affected_accounts: int
    customers: int
    customer_affected: int
    labelled_affected: int
    unknown_account_affected: int
    excluded: int
    rejected: int
    failed: int
    aborted: int
    undecidable: int
    other_rule_adds: int
    other_rule_drops: int
    affected_with_conflicts: int
    first_affected: dt.datetime | None
    last_affected: dt.datetime | None
    prefill_nodes: int
    decode_nodes: int
    query: str = "queries/report/headline.sql"

    @property
    def per_million(self) -> float | None:
        """Affected responses per million requests to the model in the window."""
        return self.affected / self.in_scope * 1e6 if self.in_scope else None


@dataclass(frozen=True)
class AffectedResponse:
    request_id: str
    ts: dt.datetime
    ts_end: dt.datetime | None
    prompt_tokens: int | None
    completion_tokens: int | None
    http_status: int | None
    finish_reason: str | None


@dataclass(frozen=True)
class ReplayVerdict:
    request_id: str
    verdict: str
    leaked_tokens: int | None
    foreign_requests: int


@dataclass
class AccountExposure:
    account_id: str | None
    label: str | None
    reason: str | None
    excluded: bool
    affected: int
    first: dt.datetime | None
    last: dt.datetime | None
    responses: list[AffectedResponse] = field(default_factory=list)
    replay: list[ReplayVerdict] = field(default_factory=list)

    @property
    def is_customer(self) -> bool:
        return self.account_id is not None and self.label is None


@dataclass(frozen=True)
class SourceRequest:
    request_id: str
    ts: dt.datetime | None
    reached_responses: int
    tokens: int | None


@dataclass
class SourceExposure:
    """An account whose data the replay found in someone else's response."""

    account_id: str
    label: str | None
    source_requests: int
    reader_responses: int
    tokens: int | None
    requests: list[SourceRequest] = field(default_factory=list)


@dataclass(frozen=True)
class NodeExposure:
    node: str | None
    role: str
    affected: int
    first: dt.datetime | None
    last: dt.datetime | None
    accounts: int


@dataclass(frozen=True)
class NodeFix:
    node: str
    role: str | None
    starts: int
    vulnerable_from: dt.datetime | None
    vulnerable_pool: int | None
    vulnerable_context: int | None
    vulnerable_evidence: str
    fixed_at: dt.datetime | None
    fixed_version: str | None
    fixed_pool: int | None
    fixed_context: int | None
    fixed_evidence: str
    still_vulnerable: bool


@dataclass(frozen=True)
class Finding:
    rule_id: str
    severity: str
    node: str | None
    role: str | None
    ts: dt.datetime | None
    title: str
    message: str
    fix: str
    evidence: str


@dataclass(frozen=True)
class Indicator:
    node: str | None
    role: str | None
    indicator: str
    n: int
    first_ts: dt.datetime | None
    last_ts: dt.datetime | None
    evidence: str


@dataclass(frozen=True)
class Stage:
    name: str
    ran: bool
    tables: tuple[str, ...]
    note: str


@dataclass
class ReplaySummary:
    verdicts: dict[str, int]
    leaked_tokens: int
    replayed: int
    patched_rejected: int
    sources: list[SourceExposure] = field(default_factory=list)

    @property
    def exposed(self) -> int:
        return self.verdicts.get("exposed", 0)


@dataclass(frozen=True)
class HistogramBin:
    lo: float
    hi: float
    n: int
    n_affected: int


@dataclass(frozen=True)
class TrafficGap:
    before_id: str
    before_ts: dt.datetime
    before_evidence: str
    after_id: str
    after_ts: dt.datetime
    after_evidence: str
    gap_s: float


@dataclass
class TimelineEvent:
    """One timeline entry (research/disclosure.md §6): when, what, who, and where it comes from."""

    ts: dt.datetime
    title: str
    category: str
    actor: str
    origin: str                    # "hand" (incident.toml) or "data" (a query over the case)
    source: str                    # incident.toml [[events]] #n, or queries/report/<name>.sql
    evidence: str = ""             # file:line of the log record, when there is one
    timestamp_desc: str = ""
    kind: str = "hand"
    description: str = ""
    visibility: str = "internal"
    related_request_ids: tuple[str, ...] = ()
    conflicts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def event_id(self) -> str:
        key = f"{self.origin}|{self.kind}|{iso(self.ts)}|{self.title}"
        return hashlib.sha256(key.encode()).hexdigest()[:16]

    @property
    def iso(self) -> str:
        return iso(self.ts)


@dataclass
class IncidentModel:
    facts: Facts
    counts: Counts
    accounts: list[AccountExposure]
    nodes: list[NodeExposure]
    node_fixes: list[NodeFix]
    findings: list[Finding]
    indicators: list[Indicator]
    replay: ReplaySummary | None
    stages: list[Stage]
    disclosure: Disclosure
    histogram: list[HistogramBin]
    by_hour: list[tuple[dt.datetime, int]]
    traffic_gap: TrafficGap | None
    traffic_gap_query: str
    timeline: list[TimelineEvent] = field(default_factory=list)
    queries: list[QueryTrace] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    case_path: str = ""
    case_inputs: list[dict[str, Any]] = field(default_factory=list)
    generated_at: dt.datetime = field(default_factory=lambda: dt.datetime.now(UTC).replace(microsecond=0))

    # convenience views used by several templates
    @property
    def customer_accounts(self) -> list[AccountExposure]:
        return [a for a in self.accounts if a.is_customer]

    @property
    def labelled_accounts(self) -> list[AccountExposure]:
        return [a for a in self.accounts if a.label is not None]

    @property
    def unknown_account(self) -> AccountExposure | None:
        return next((a for a in self.accounts if a.account_id is None), None)

    @property
    def notifiable_accounts(self) -> list[AccountExposure]:
        """Every affected account with an id: each gets its own notice (labelled ones too)."""
        return [a for a in self.accounts if a.account_id is not None]

    @property
    def prefill_nodes(self) -> list[NodeExposure]:
        return [n for n in self.nodes if n.role == "prefill"]

    @property
    def public_timeline(self) -> list[TimelineEvent]:
        """Events marked public; a derived event is left out where a hand-entered event describes the same
        moment (e.g. 'Model made private'), so public documents state each milestone once."""
        hand_kinds = {e.kind for e in self.timeline if e.origin == "hand"}
        return [e for e in self.timeline if e.visibility == "public"
                and not (e.origin == "data" and e.kind in hand_kinds)]

    @property
    def conflicts(self) -> list[TimelineEvent]:
        return [e for e in self.timeline if e.conflicts]

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)

    @property
    def gdpr_deadline(self) -> dt.datetime | None:
        t = self.disclosure.awareness_time
        return t + dt.timedelta(hours=72) if t else None

    @property
    def gdpr_late(self) -> bool | None:
        """True when the notification came (or, not yet made, comes) after the 72-hour deadline."""
        d = self.gdpr_deadline
        if d is None:
            return None
        return (self.disclosure.notified_at or self.generated_at) > d


# ------------------------------------------------------------------------------------- building

class _Runner:
    """Runs queries/report/*.sql on the case and keeps the trace of each."""

    def __init__(self, case: Case):
        self.case = case
        self.traces: list[QueryTrace] = []

    def rows(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        full = f"report/{name}"
        rows = self.case.run(full, params or {}, fetch=True)
        cols = [d[0] for d in self.case.con.description]
        q = load(full)
        self.traces.append(QueryTrace(full, q.sha256, {k: _jsonable(v) for k, v in (params or {}).items()
                                                       if k in q.params}, len(rows)))
        return [dict(zip(cols, r)) for r in rows]


def _jsonable(v: Any) -> Any:
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, dt.datetime):
        return iso(utc(v))
    return v


def _evidence(file: Any, line: Any) -> str:
    if not file:
        return ""
    return f"{file}:{line}" if line is not None else str(file)


def _facts(case: Case) -> Facts:
    if not case.has("incident"):
        raise KvirError("the case has no `incident` table: run `kvir triage` first", path=str(case.path))
    kv = dict(case.con.execute("SELECT key, value FROM incident").fetchall())
    need = ("id", "title", "models", "window_start", "window_end", "pool_tokens", "context_tokens", "rule")
    missing = [k for k in need if k not in kv]
    if missing:
        raise KvirError(f"the case's incident table lacks {', '.join(missing)}", path=str(case.path))
    tri = case.manifest.get("triage") or {}
    return Facts(
        id=kv["id"], title=kv["title"], models=tuple(json.loads(kv["models"])),
        window_start=utc(kv["window_start"]), window_end=utc(kv["window_end"]),
        pool_tokens=int(kv["pool_tokens"]), context_tokens=int(kv["context_tokens"]), rule=kv["rule"],
        rule_text=tri.get("rule", kv["rule"]),
        other_rule_text=tri.get("other_rule", ""), spec_path=kv.get("spec_path", ""),
        awareness_time=utc(kv["awareness_time"]) if kv.get("awareness_time") else None,
    )


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


def build_model(case: Case, *, warnings: list[str] | None = None) -> IncidentModel:
    """Assemble the incident model from the case (tables written by triage, audit, replay and the spec
    facts that kvir.report copies in); build the timeline too."""
    from kvir.report.timeline import build_timeline

    facts = _facts(case)
    raw_disclosure = read_disclosure(case)
    if facts.awareness_time is not None:
        raw_disclosure.setdefault("awareness_time", iso(facts.awareness_time))
    disclosure = parse_disclosure(raw_disclosure, facts.id)
    run = _Runner(case)
    warns = list(warnings or [])
    if disclosure.unknown_keys:
        warns.append("unknown [disclosure] key(s) ignored: " + ", ".join(disclosure.unknown_keys)
                     + " (see the keys in `kvir init`'s template)")
    for k in ("affected", "accounts", "nodes", "triage_hits", "excluded", "requests", "account_rules"):
        if not case.has(k):
            raise KvirError(f"the case has no `{k}` table: run `kvir triage` first", path=str(case.path))
    window = {"models": list(facts.models), "window_start": facts.window_start, "window_end": facts.window_end}

    h = run.rows("headline", window)[0]
    counts = Counts(**{k: (utc(v) if k in ("first_affected", "last_affected") else int(v or 0))
                       for k, v in h.items()})
    tri = (case.manifest.get("triage") or {}).get("summary") or {}
    if tri and tri.get("affected") is not None and int(tri["affected"]) != counts.affected:
        warns.append(f"the triage summary in manifest.json says {tri['affected']} affected responses, the case's "
                     f"affected table holds {counts.affected}: the table was used")

    stages = _stages(case)
    replay_ran = stages[2].ran
    accounts: list[AccountExposure] = []
    for a in run.rows("accounts"):
        acc = AccountExposure(a["account_id"], a["label"], a["label_reason"], bool(a["excluded"]), int(a["affected"]),
                              utc(a["first_affected"]), utc(a["last_affected"]))
        if acc.account_id is not None:
            acc.responses = [AffectedResponse(r["request_id"], utc(r["ts"]), utc(r["ts_end"]), r["prompt_tokens"],
                                              r["completion_tokens"], r["http_status"], r["finish_reason"])
                             for r in run.rows("account_requests", {"account_id": acc.account_id})]
            if replay_ran:
                acc.replay = [ReplayVerdict(r["request_id"], r["verdict"], r["leaked_tokens"], int(r["foreign_requests"]))
                              for r in run.rows("replay_for_account", {"account_id": acc.account_id})]
        accounts.append(acc)

    nodes = [NodeExposure(n["node"], n["role"], int(n["affected"]), utc(n["first_affected"]),
                          utc(n["last_affected"]), int(n["accounts"])) for n in run.rows("nodes")]
    node_fixes: list[NodeFix] = []
    if case.has("node_configs"):
        node_fixes = [NodeFix(r["node"], r["role"], int(r["starts"]), utc(r["vulnerable_from"]), r["vulnerable_pool"],
                              r["vulnerable_context"], _evidence(r["vulnerable_file"], r["vulnerable_line"]),
                              utc(r["fixed_at"]), r["fixed_version"], r["fixed_pool"], r["fixed_context"],
                              _evidence(r["fixed_file"], r["fixed_line"]), bool(r["still_vulnerable"]))
                      for r in run.rows("node_fixes")]
    findings = [Finding(r["rule_id"], r["severity"], r["node"], r["role"], utc(r["ts"]), r["title"] or "",
                        r["message"] or "", r["fix"] or "", _evidence(r["evidence_file"], r["evidence_line"]))
                for r in run.rows("findings")] if case.has("findings") else []
    indicators = [Indicator(r["node"], r["role"], r["indicator"], int(r["n"] or 0), utc(r["first_ts"]),
                            utc(r["last_ts"]), _evidence(r["evidence_file"], r["evidence_line"]))
                  for r in run.rows("runtime_events")] if case.has("runtime_indicators") else []

    replay = None
    if replay_ran:
        verdicts = run.rows("replay_verdicts")
        replay = ReplaySummary({v["verdict"]: int(v["n"]) for v in verdicts},
                               sum(int(v["leaked_tokens"] or 0) for v in verdicts), sum(int(v["n"]) for v in verdicts),
                               sum(int(v["patched_rejected"] or 0) for v in verdicts))
        if case.has("replay_exposure"):
            for s in run.rows("replay_sources"):
                src = SourceExposure(s["account_id"], s["label"], int(s["source_requests"]), int(s["reader_responses"]),
                                     s["tokens"])
                src.requests = [SourceRequest(r["request_id"], utc(r["ts"]), int(r["reached_responses"]), r["tokens"])
                                for r in run.rows("replay_source_requests", {"account_id": src.account_id})]
                replay.sources.append(src)
        else:
            warns.append("replay ran but wrote no replay_exposure table: no source-account notices")

    bpd = 10
    hist = [HistogramBin(10 ** (b["bin"] / bpd), 10 ** ((b["bin"] + 1) / bpd), int(b["n"]), int(b["n_affected"]))
            for b in run.rows("prompt_histogram", {**window, "bins_per_decade": bpd})]
    by_hour = [(utc(r["hour"]), int(r["n"])) for r in run.rows("affected_by_hour")]

    search_from = disclosure.awareness_time or facts.window_start
    gap_rows = run.rows("traffic_gap", {"models": list(facts.models), "search_from": search_from,
                                        "min_gap_s": disclosure.traffic_gap_minutes * 60})
    gap = None
    if gap_rows:
        g = gap_rows[0]
        gap = TrafficGap(g["before_id"], utc(g["before_ts"]), _evidence(g["before_file"], g["before_line"]),
                         g["after_id"], utc(g["after_ts"]), _evidence(g["after_file"], g["after_line"]),
                         float(g["gap_s"]))

    model = IncidentModel(
        facts=facts, counts=counts, accounts=accounts, nodes=nodes, node_fixes=node_fixes, findings=findings,
        indicators=indicators, replay=replay, stages=stages, disclosure=disclosure, histogram=hist,
        by_hour=by_hour, traffic_gap=gap, traffic_gap_query="queries/report/traffic_gap.sql",
        warnings=warns, case_path=str(case.path), case_inputs=list(case.manifest.get("inputs") or []),
    )
    model.timeline = build_timeline(case, model, run)
    model.queries = run.traces
    return model


def case_input_hashes(case: Case) -> dict[str, Any]:
    """SHA-256 of what the reports were built from: the case database, its manifest, the spec."""
    out: dict[str, Any] = {}
    for name in ("case.duckdb", "manifest.json"):
        p = Path(case.path) / name
        if p.exists():
            out[name] = {"sha256": sha256_file(p), "bytes": p.stat().st_size}
    spec = case.manifest.get("incident_spec")
    if spec:
        out["incident_spec"] = spec
    out["log_inputs"] = case.manifest.get("inputs") or []
    return out

