"""The incident model every document projects: the incident's facts, the headline counts, and the rows
(records.py) read from the case by kvir.report.build.

The headline counts are the triage's own (the case table `triage_summary` that `kvir triage` prints), so
a number in a report is the number the responder saw in the terminal. `queries` lists every report query
that ran (the entries Case.run logged: file, SHA-256, bound parameters, rows), so a number in any report
can be traced to queries/report/<name>.sql (or the mechanism's own, queries/mechanisms/<folder>/report/).
Stages that have not run (audit, replay) are recorded as not run; nothing is filled in for them.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from kvir.report.defect import Defect
from kvir.report.disclosure import Disclosure
from kvir.report.records import (AccountExposure, CandidateSource, Finding, HistogramBin, Indicator, NodeExposure,
                                 NodeFix, ReplaySummary, Stage, TimelineEvent, TrafficGap)
from kvir.report.story import Story
from kvir.report.times import UTC
from kvir.spec.mechanism import Mechanism
from kvir.triage.summary import COUNT_COLUMNS, TriageSummary

Counts = TriageSummary        # the headline counts are the triage's own typed summary
__all__ = ["COUNT_COLUMNS", "Counts", "Facts", "IncidentModel"]


@dataclass(frozen=True)
class Facts:
    id: str
    title: str
    models: tuple[str, ...]
    window_start: dt.datetime
    window_end: dt.datetime
    engine: str                     # the serving engine triage recorded (kvir.rules.engines), 'unknown' if none
    engine_source: str              # how it is known
    spec_path: str
    awareness_time: dt.datetime | None
    mechanism: Mechanism            # the case's exposure mechanism; its wording is its report part's story
    params: Any                     # the mechanism's typed params as triage stored them (its spec part's)
    model_names: tuple[str, ...] = ()   # every name matched (kvir.spec.model.IncidentSpec.model_names)

    @property
    def model(self) -> str:
        return self.models[0]


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
    story: Story
    histogram: list[HistogramBin]
    by_hour: list[tuple[dt.datetime, int]]
    traffic_gap: TrafficGap | None
    traffic_gap_query: str
    timeline: list[TimelineEvent] = field(default_factory=list)
    candidate_sources: list[CandidateSource] = field(default_factory=list)   # ReportPart.candidate_sources
    queries: list[dict[str, Any]] = field(default_factory=list)   # QueryLog entries of the report's queries
    warnings: list[str] = field(default_factory=list)
    models_note: str = ""           # triage's note on model names the spec missed (kvir.triage.models)
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
    def notifiable_accounts(self) -> list[AccountExposure]:
        """Every affected account with an id: each gets its own notice (labelled ones too)."""
        return [a for a in self.accounts if a.account_id is not None]

    @property
    def prefill_nodes(self) -> list[NodeExposure]:
        return [n for n in self.nodes if n.role == "prefill"]

    @property
    def defect(self) -> Defect | None:
        return self.story.defect

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
