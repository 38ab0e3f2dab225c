"""What the case says happened, sentence by sentence, each sentence with its owner: incident.toml (the spec),
the evidence in the case (logs, start-up logs, replay), or knowledge kvir ships about an engine that the
evidence or the spec identified (kvir.rules.engines, kvir.rules.builds, kvir.rules.prefix_cache), said as
such. What none of them says is said to be unknown. Every prose and machine document takes its wording
about the engine and the mechanism from here, never from a default.

This module holds what every mechanism says alike (the engine, the defect, its fix); the mechanism's own
wording (how KV crossed tenants, what a response carried, what to do) is one class per mechanism in
kvir.report.mechanisms (the registry), so a document never names a mechanism the incident is not about.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kvir.report.defect import Defect
from kvir.rules.engines import EngineChoice


@dataclass(frozen=True)
class Evidence:
    """Facts of the affected responses that the logs hold (queries/report/evidence_facts.sql)."""

    pd_responses: int              # served with a prefill node other than the decode node
    placeholder_responses: int     # the prefill side computed 1 token for a longer prompt
    audit_ran: bool
    small_pool_starts: int         # node starts whose pool is below their context (audit)
    refused_small_pool_starts: int # of them, starts the engine refused (vLLM)
    first_small_pool_evidence: str
    holding_starts: int = 0        # starts that served with a pool holding the whole context
    mechanism: dict[str, Any] = field(default_factory=dict)   # the mechanism's own facts (its build_evidence)


@dataclass(frozen=True)
class Story:
    """The sentences every mechanism shares. A mechanism's class (kvir.report.mechanisms) adds the rest:
    rule_text, condition, configuration(_public), what_happened(_public), cause_short, and the documents'
    mechanism sentences (see kvir.report.mechanisms.SENTENCES)."""

    engine: EngineChoice
    defect: Defect | None
    no_advisory: str               # why there is no engine advisory ('' when there is one)
    ev: Evidence

    mechanism = ""                 # the mechanism's name (kvir.spec.mechanism)
    defect_role = "let these responses carry other requests' data"   # what an engine defect would have done

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

    @property
    def possibly_affected(self) -> int:   # responses counted apart as possibly affected (prefix-cache)
        return 0

    @property
    def placeholder(self) -> str:      # the oversized-prompt mechanism's; empty for any other
        return ""

    @property
    def pd(self) -> str:
        return ""

    @property
    def contradicted(self) -> bool:
        return False
