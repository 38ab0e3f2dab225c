"""The rows of the incident model: one dataclass per kind of thing a document lists (an affected response,
an account, a node, a finding, a timeline event ...). Each is filled from one report query's rows by
column name (`from_row`); none holds prompt or response text."""
from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from kvir.report.times import iso, utc

R = TypeVar("R")


def from_row(cls: type[R], row: Mapping[str, Any], **given: Any) -> R:
    """A record from a query's row by name: each field is `given` (a value converted or renamed by the caller)
    or else the row's column of that name; a field with a default may be absent from both."""
    return cls(**{f.name: given[f.name] if f.name in given else row[f.name] for f in fields(cls)
                  if f.init and (f.name in given or f.name in row)})


@dataclass(frozen=True)
class AffectedResponse:
    request_id: str
    ts: dt.datetime
    ts_end: dt.datetime | None
    prompt_tokens: int | None
    completion_tokens: int | None
    http_status: int | None
    finish_reason: str | None
    extra: dict[str, Any] = field(default_factory=dict)   # the mechanism's own columns, by name (its own
                                                          # queries/mechanisms/<folder>/report/account_responses.sql)

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> "AffectedResponse":
        """From a row of report/account_responses: the shared columns by name, every other column but the
        account id into `extra`."""
        shared = {f.name for f in fields(cls)} - {"extra"}
        return from_row(cls, row, ts=utc(row["ts"]), ts_end=utc(row["ts_end"]),
                        extra={k: v for k, v in row.items() if k not in shared and k != "account_id"})


@dataclass(frozen=True)
class ReplayVerdict:
    request_id: str
    verdict: str
    leaked_tokens: int | None
    foreign_requests: int
    reason: str | None = None       # why it could not be replayed (inconclusive only)


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
class CandidateSource:
    """An account the triage (not a replay) names as a possible source of other accounts' affected responses
    (ReportPart.candidate_sources): how many responses name it, when."""

    account_id: str
    responses: int                 # affected and possibly affected responses that name it
    affected: int                  # of them, affected
    first: dt.datetime | None
    last: dt.datetime | None


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
    replayed: int                   # affected responses the replay took up (conclusive or not)
    fixed_rejected: int             # rejected (4xx) by the first fixed build (replay_results.first_fixed)
    sources: list[SourceExposure] = field(default_factory=list)
    reasons: list[tuple[str, str, int]] = field(default_factory=list)   # (verdict, reason, n) of inconclusive rows
    assumed_builds: int = 0         # conclusive replays whose build the evidence does not name

    @property
    def exposed(self) -> int:
        return self.verdicts.get("exposed", 0)

    @property
    def inconclusive(self) -> int:
        return self.verdicts.get("inconclusive", 0)

    @property
    def ran(self) -> int:
        """Replays that reached a verdict (everything but inconclusive)."""
        return self.replayed - self.inconclusive

    @property
    def inconclusive_reasons(self) -> list[str]:
        return [f"{n} × {reason}" for v, reason, n in self.reasons if v == "inconclusive"]

    @property
    def sentence(self) -> str:
        """What the replay established, never calling an inconclusive replay 'not reproduced'."""
        out = []
        if self.ran:
            out.append(f"Our replay of {self.ran:,} affected request(s) on a model of the serving path reproduced the "
                       f"exposure for {self.exposed:,} of them"
                       + (f" (for {self.assumed_builds:,} the build was assumed, not named by the evidence)"
                          if self.assumed_builds else "") + ".")
        if self.inconclusive:
            out.append(f"{self.inconclusive:,} of the {self.replayed:,} could not be replayed (inconclusive: "
                       + "; ".join(self.inconclusive_reasons) + ").")
        return " ".join(out) or "No affected request was replayed."


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
    """One timeline entry (a CSAF/CVE timeline entry's fields): when, what, who, and where it comes from."""

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
