"""The oversized-prompt mechanism's report part (hookspec: kvir.report.plugin.ReportPart): its story over the
stored [trigger] (bound to the engine the case names), the audit's node fixes and runtime indicators as its
documents' evidence, SGLang's build table as its defect knowledge, the pool, the engine's limit and the
context as the prompt-length figure's lines. Its triage names no candidate source (only a replay says whose
data a response read), so it has no candidate notice and no templates of its own.
"""
from __future__ import annotations

from kvir.case.store import Case
from kvir.mechanisms.oversized_prompt.defect import KNOWLEDGE
from kvir.mechanisms.oversized_prompt.story import OversizedPromptStory
from kvir.report.model import Facts
from kvir.report.plugin import LimitLine, PromptLimits, StoryInputs
from kvir.report.records import CandidateSource
from kvir.rules.engines import ENGINES


class OversizedPromptReport:
    shows_node_fixes = True
    shows_runtime_indicators = True
    defect_knowledge = KNOWLEDGE
    candidate_notice = None
    templates: dict[str, tuple[str, ...]] = {}

    def possibly_affected(self, case: Case) -> int:
        return 0

    def candidate_sources(self, case: Case) -> list[CandidateSource]:
        return []

    def prompt_limits(self, facts: Facts) -> PromptLimits:
        t = facts.params.with_engine(facts.engine)
        return PromptLimits((LimitLine(t.pool_tokens, "KV pool", "-"),
                             LimitLine(t.engine_limit, f"{ENGINES[facts.engine].label} limit", ":"),
                             LimitLine(t.context_tokens, "context", "--")),
                            "the KV pool, the engine's limit, the context length")

    def story(self, inputs: StoryInputs) -> OversizedPromptStory:
        engine = inputs.engine.name if inputs.engine.name in ENGINES else "unknown"
        return OversizedPromptStory(inputs.engine, inputs.defect, inputs.no_advisory, inputs.ev,
                                    trigger=inputs.facts.params.with_engine(engine))


PART = OversizedPromptReport()
