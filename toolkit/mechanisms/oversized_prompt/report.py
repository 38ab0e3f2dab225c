"""The oversized-prompt mechanism's report part (hookspec: kvir.report.plugin.ReportPart): its story over the
stored [trigger] (bound to the engine the case names), the audit's node fixes and runtime indicators as its
documents' evidence, SGLang's build table as its defect knowledge, the pool, the engine's limit and the
context as the prompt-length figure's lines. Its triage names no candidate source (only a replay says whose
data a response read), so it has no candidate notice and no templates of its own. What the replay's figures
cover (replay_scope) comes from its own queries: queries/mechanisms/oversized_prompt/report/.
"""
from __future__ import annotations

from kvir.case.store import Case
from kvir.mechanisms.oversized_prompt import MECHANISM
from kvir.mechanisms.oversized_prompt.defect import KNOWLEDGE
from kvir.mechanisms.oversized_prompt.story import OversizedPromptStory
from kvir.report.model import Facts
from kvir.report.plugin import LimitLine, PromptLimits, StoryInputs
from kvir.report.read import rows
from kvir.report.records import CandidateSource
from kvir.rules.engines import ENGINES

FOLDER = MECHANISM.folder           # its queries: queries/mechanisms/<folder>/report/


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
                                    trigger=inputs.facts.params.with_engine(engine),
                                    replay_scope=replay_scope(inputs.case))


def replay_scope(case: Case) -> str:
    """What the documents' replay figures (verdicts, source accounts and requests, token counts) cover: the
    affected responses it replayed of all of them, and the scale whose placement named the sources."""
    if not case.has("replay_results"):
        return ""
    got = rows(case, "replay_scope", mechanism=FOLDER)[0]
    n, total, scale = int(got["replayed"] or 0), int(got["affected"] or 0), got["scale"]
    if n == 0:
        return ""
    out = []
    if n < total:
        out.append(f"The replay covered the first {n:,} of the {total:,} affected responses (by time): the accounts, "
                   f"requests and token counts it names are those these {n:,} read, and a replay of all {total:,} "
                   f"may name more.")
    scaled = scale is not None and scale < 1
    full = "attribution_scale" in case.columns("replay_results") and \
        rows(case, "replay_attribution", mechanism=FOLDER)[0]["attribution_scale"] == 1
    if scaled and not full:             # a replay from before issue 39: every length was shrunk
        out.append(f"The replay was scaled by {_fraction(scale)} (every length shrunk): the accounts, requests and token "
                   f"counts it names may differ from those of a full-size replay.")
    else:
        out.append("Whose data each replayed response read was worked out at full size: every logged request at its "
                   "logged lengths on its nodes' own pools" + (
                       f" (only the decode attention ran over a sample of pages, scale {_fraction(scale)}, which changes "
                       f"none of these names or counts)." if scaled else "."))
    return " ".join(out)


PART = OversizedPromptReport()


def _fraction(f: float) -> str:
    """1/64 rather than 0.015625 where the scale is one over a whole number."""
    k = round(1 / f)
    return f"1/{k}" if abs(k * f - 1) < 1e-9 else f"{f:g}"
