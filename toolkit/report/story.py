"""What the case says happened, sentence by sentence, each sentence with its owner: incident.toml (the spec),
the evidence in the case (logs, start-up logs, replay), or knowledge kvir ships about an engine that the
evidence or the spec identified (kvir.rules: each engine's limits, each build's and release's behaviour),
said as such. What none of them says is said to be unknown. Every prose and machine document takes its wording
about the engine and the mechanism from here, never from a default.

`Story` is the interface: the sentences every mechanism shares (the engine, the defect, its fix) written
here, and every sentence the documents ask of a mechanism declared abstract. A mechanism's report part
(kvir.report.plugin.ReportPart.story) writes a subclass in its own folder (kvir.mechanisms.<m>.story); a
subclass that lacks a member fails when it is defined, which is when its mechanism registers, never when
a document is rendered.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from kvir.core.errors import KvirError
from kvir.report.defect import Defect
from kvir.rules.engines import EngineChoice


@dataclass(frozen=True)
class Evidence:
    """Facts of the affected responses that the logs hold (queries/report/evidence_facts.sql) and of the
    audit's node starts (queries/report/start_facts.sql)."""

    pd_responses: int              # served with a prefill node other than the decode node
    placeholder_responses: int     # the prefill side computed 1 token for a longer prompt
    audit_ran: bool
    small_pool_starts: int         # node starts whose pool is below their context (audit)
    refused_small_pool_starts: int # of them, starts the engine refused (vLLM)
    first_small_pool_evidence: str
    holding_starts: int = 0        # starts that served with a pool holding the whole context


@dataclass(frozen=True)
class Story(ABC):
    """The case's sentences. Written here: the engine's and the defect's. Abstract: the mechanism's, each
    one a property unless it takes arguments; '' (or ()) where the mechanism has nothing to say there."""

    engine: EngineChoice
    defect: Defect | None
    no_advisory: str               # why there is no engine advisory ('' when there is one)
    ev: Evidence

    def __init_subclass__(cls, abstract: bool = False, **kw) -> None:
        super().__init_subclass__(**kw)
        lacking = sorted(n for n in getattr(Story, "__abstractmethods__", ())
                         if getattr(getattr(cls, n, None), "__isabstractmethod__", False))
        if lacking and not abstract:
            raise KvirError(f"story {cls.__module__}.{cls.__qualname__} lacks {', '.join(lacking)} "
                            f"(the interface: kvir.report.story.Story)")

    # ---------------------------------------------------------------- what every mechanism says alike
    @property
    def replay_scope(self) -> str:
        """What the documents' replay figures cover: how many of the affected responses were replayed, and
        whether whose data each read was worked out at full size ('' where the mechanism says nothing)."""
        return ""

    @property
    def engine_label(self) -> str:
        return self.engine.engine.label

    @property
    def engine_sentence(self) -> str:
        if self.engine.engine.known:
            return f"The serving engine was {self.engine_label} ({self.engine.source})."
        return f"The serving engine is not identified: {self.engine.source}."

    @property
    def engine_public(self) -> str:
        if self.engine.engine.known:
            return f"The serving engine was {self.engine_label}."
        return "The serving engine has not been identified."

    @property
    def defect_sentence(self) -> str:
        d = self.defect
        if d is None:
            return (f"Which engine defect, if any, {self.defect_role} is not established: incident.toml declares none "
                    "([defect]) and the evidence matches none kvir knows.")
        return f"Engine defect ({d.how}): {d.description}"

    @property
    def engine_fix(self) -> str:
        d = self.defect
        if d is None:
            return "No engine fix is stated: the engine's part is not established."
        out = f"The engine defect is fixed in {d.package} {d.fixed_version}"
        if d.fixed_release_date:
            out += f" (released {d.fixed_release_date.isoformat()})"
        if d.fixed_source:
            out += f", according to {d.fixed_source}"
        out += "."
        return out + (f" {d.code_note}" if d.code_note else "")

    # ---------------------------------------------------------------- the rule, the counts
    @property
    @abstractmethod
    def rule_text(self) -> str:
        """The rule the triage counted by, with its parameters (summaries, the index, the public report)."""

    @abstractmethod
    def other_rule_sentence(self, adds: int, drops: int) -> str:
        """After 'Rule used: ...' in the post-mortem: what the triage's other count (adds, drops) means."""

    @property
    @abstractmethod
    def possibly_affected(self) -> int:
        """Responses counted apart as possibly affected (the affected table holds them beside the affected)."""

    @property
    @abstractmethod
    def summary_clause(self) -> str:
        """After 'N responses of MODEL between A and B': what they were and what they may have carried."""

    @abstractmethod
    def trigger_sentence(self, model: str) -> str:
        """The post-mortem's trigger: which requests to `model` were exposed and by which rule."""

    @property
    @abstractmethod
    def condition_row(self) -> str:
        """The public report's 'condition' row: what every affected response had."""

    # ---------------------------------------------------------------- the configuration and the cause
    @property
    @abstractmethod
    def defect_role(self) -> str:
        """What an engine defect would have done ('let ... '), for the sentence on an unknown defect."""

    @property
    @abstractmethod
    def engine_knowledge(self) -> str:
        """What kvir's tables say of this engine for this mechanism, with where they read it ('' none)."""

    @property
    @abstractmethod
    def configuration(self) -> str:
        """What the spec and the start-up logs say of the setup (post-mortem, internal)."""

    @property
    @abstractmethod
    def configuration_public(self) -> str:
        """The same, as the public documents say it."""

    @property
    @abstractmethod
    def config_details(self) -> list[str] | None:
        """The post-mortem's lines under the configuration; None: it lists the audit's node fixes (each
        node's start on a pool below its context until a restart onto one that holds it) instead."""

    @property
    @abstractmethod
    def serving_path(self) -> str:
        """What the affected responses' records show of the path that served them ('' nothing to say)."""

    @property
    @abstractmethod
    def request_evidence(self) -> str:
        """What the records show the engine did with the affected requests themselves ('' nothing to say)."""

    @property
    @abstractmethod
    def what_happened_public(self) -> str:
        """The whole account, public (the public report, CSAF's root cause)."""

    @property
    @abstractmethod
    def cause_short(self) -> str:
        """One clause for notices: the cause, as far as it is known."""

    @property
    @abstractmethod
    def warnings(self) -> tuple[str, ...]:
        """What the evidence contradicts of the spec, for the index's warnings."""

    @abstractmethod
    def served_on(self, prefill_node: str | None, decode_node: str | None) -> str:
        """Where a response was served, in the timeline's words ('on p-0 → d-1')."""

    # ---------------------------------------------------------------- the public report and the machine documents
    @property
    @abstractmethod
    def exposed_clause(self) -> str:
        """After 'responses from the model M': what they may have held (public report, CSAF summary)."""

    @property
    @abstractmethod
    def not_exposed(self) -> str:
        """The public report's last line under 'What data was not exposed'."""

    @property
    @abstractmethod
    def data_exposed(self) -> tuple[str, ...]:
        """[disclosure] data_exposed's default: what the mechanism exposes."""

    @property
    @abstractmethod
    def not_replayed(self) -> str:
        """What is not established without a replay (one sentence, ending in a full stop)."""

    @property
    @abstractmethod
    def remediation_public(self) -> list[str] | None:
        """The public report's and CSAF's remediation lines; None: they state the audit's node fixes."""

    @property
    @abstractmethod
    def workaround(self) -> str:
        """The advisory's workaround where [defect] gives none."""

    @property
    @abstractmethod
    def impact(self) -> str:
        """The advisory's impact."""

    @property
    @abstractmethod
    def preconditions(self) -> str:
        """The advisory's preconditions."""

    @property
    @abstractmethod
    def details_config(self) -> str:
        """The advisory's incident details: the spec's configuration."""

    @property
    @abstractmethod
    def records_clause(self) -> str:
        """After 'the records of N responses that' (the GDPR notification's categories)."""

    @property
    @abstractmethod
    def replay_tokens(self) -> str:
        """After the replay's token count in the post-mortem ('foreign tokens read')."""

    # ---------------------------------------------------------------- notices and the regulator
    @property
    @abstractmethod
    def notice_what(self) -> str:
        """After 'responses of the model M' in a notice: what happened to them."""

    @property
    @abstractmethod
    def notice_meaning(self) -> str:
        """A notice's first point under 'What this means for your data'."""

    @property
    @abstractmethod
    def notice_actions(self) -> tuple[str, ...]:
        """A notice's numbered actions."""

    @abstractmethod
    def source_what(self, model: str) -> str:
        """A source account's notice: what happened, for responses of `model`."""

    @property
    @abstractmethod
    def replay_source_meaning(self) -> tuple[str, ...]:
        """A replay's source notice: what it means for the account whose data another response read."""

    @property
    @abstractmethod
    def gdpr_mechanism(self) -> str:
        """The GDPR notification: after 'responses of the model M', how the breach happened."""

    @property
    @abstractmethod
    def gdpr_consequences(self) -> str:
        """The GDPR notification's likely consequences."""
