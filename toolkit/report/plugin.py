"""The report stage's hookspec: what it needs of an exposure mechanism (kvir.spec.mechanism).

A mechanism's report part (kvir.mechanisms.<m>.report.PART) has every member of ReportPart; registration
checks it. Its story (every sentence its documents say) is a kvir.report.story.Story, whose abstract
members a mechanism's subclass must all write (checked when the subclass is defined, i.e. when the
mechanism registers). Its own report queries lie in queries/mechanisms/<folder>/report/; one named as a
shared query the stage runs with the case's mechanism replaces it (report/account_responses: its extra
columns reach each notice's table as AffectedResponse.extra). Its own templates lie in
templates/mechanisms/<folder>/, found before the shared templates/ of the same name (notice_responses.md.j2:
that table). The report stage reaches a mechanism only through `report_part(name)`, never by its name.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from kvir.case.store import Case
from kvir.report.defect import Defect, DefectKnowledge
from kvir.report.model import Facts
from kvir.report.records import CandidateSource, NodeFix
from kvir.report.story import Evidence, Story
from kvir.rules.engines import EngineChoice
from kvir.spec.mechanism import mechanism


@dataclass(frozen=True)
class StoryInputs:
    """What the report stage hands a mechanism's part to write the case's story: the case (for the
    mechanism's own report queries), the incident's facts with the mechanism's params, the engine, the
    defect (or why there is none), what the logs and the audit show, and the audit's node fixes the
    mechanism's documents show (ReportPart.shows_node_fixes)."""

    case: Case
    facts: Facts
    engine: EngineChoice
    defect: Defect | None
    no_advisory: str
    ev: Evidence
    node_fixes: tuple[NodeFix, ...] = ()


@dataclass(frozen=True)
class LimitLine:
    """A prompt length the prompt-length figure marks with a vertical line."""

    tokens: int | None             # None: not known for this case, not drawn
    label: str                     # e.g. "KV pool"
    style: str                     # matplotlib line style: "-", ":", "--"


@dataclass(frozen=True)
class PromptLimits:
    """The prompt lengths that matter to the mechanism (its figure's lines; the histogram's bins split at
    them) and the caption's words for them ('' with no line)."""

    lines: tuple[LimitLine, ...] = ()
    caption: str = ""


@dataclass(frozen=True)
class CandidateNotice:
    """A mechanism whose triage names candidate source accounts (accounts that could have been the source of
    another account's affected response) notifies each when no replay settles it: its template (in
    templates/mechanisms/<folder>/) and the notice's subject (after 'Notice to account ID: ')."""

    template: str
    subject: str


class ReportPart(Protocol):
    """What the report stage calls on the case's mechanism."""

    shows_node_fixes: bool         # the documents show the audit's node fixes (a start on a KV pool below the
                                   # context until a restart onto one that holds it): the post-mortem's lines,
                                   # the node-windows figure, the timeline's fixed-config events
    shows_runtime_indicators: bool # the documents show the audit's runtime indicators (engine log lines)
    defect_knowledge: DefectKnowledge | None   # kvir's tables of its engine defects; None: [defect] alone
    candidate_notice: CandidateNotice | None   # its notice to candidate source accounts; None: it has none
    templates: Mapping[str, tuple[str, ...]]   # artifact name -> its own templates in templates/mechanisms/<folder>/

    def possibly_affected(self, case: Case) -> int:
        """Responses the case's affected table holds beyond those the triage counts affected."""

    def candidate_sources(self, case: Case) -> list[CandidateSource]:
        """The accounts its triage names as candidate sources ([] for a mechanism without them)."""

    def prompt_limits(self, facts: Facts) -> PromptLimits:
        """The prompt lengths the prompt-length figure marks for this case."""

    def story(self, inputs: StoryInputs) -> Story:
        """The case's story: every sentence its documents say."""


def report_part(name: str | None) -> ReportPart:
    """The report part of the mechanism `name` (None: the default mechanism)."""
    return mechanism(name).part("report")
