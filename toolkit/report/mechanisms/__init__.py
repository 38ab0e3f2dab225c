"""The mechanism registry of the documents: one Story class per exposure mechanism (kvir.spec.mechanism),
each holding every sentence its documents say about how KV crossed tenants; the templates and
kvir.report.machine ask the case's story, never a default. Adding a mechanism adds a module here.

Every story answers (properties unless called with arguments):
    rule_text, condition                  the rule the triage used, what every counted response had
    configuration, configuration_public   what the spec and the start-up logs say of the setup
    what_happened, what_happened_public   the whole account, internal and public
    cause_short                           one clause for notices
    config_details                        per-node lines for the post-mortem (None: node_fixes instead)
    other_rule_sentence(adds, drops), summary_clause, trigger_sentence(model), condition_row, not_exposed,
    exposed_clause, notice_what, notice_meaning, notice_actions, not_replayed, source_what(model),
    gdpr_mechanism, gdpr_consequences, workaround, impact, preconditions, details_config, remediation_public,
    records_clause, data_exposed ([disclosure] data_exposed's default), replay_source_meaning, replay_tokens; prefix-cache only (its candidate-source notices): source_meaning, source_action
"""
from __future__ import annotations

from kvir.report.defect import Defect
from kvir.report.mechanisms.oversized_prompt import OversizedPromptStory
from kvir.report.mechanisms.prefix_cache import PrefixCacheStory, PrefixFacts
from kvir.report.story import Evidence, Story
from kvir.rules.engines import ENGINES, EngineChoice
from kvir.rules.trigger import Trigger
from kvir.spec.mechanism import OVERSIZED_PROMPT, PREFIX_CACHE

STORIES: dict[str, type[Story]] = {OVERSIZED_PROMPT: OversizedPromptStory, PREFIX_CACHE: PrefixCacheStory}


def make_story(engine: EngineChoice, trigger: Trigger | None, defect: Defect | None, no_advisory: str,
               ev: Evidence, *, prefix: PrefixFacts | None = None) -> Story:
    """The case's story: the prefix-cache one when `prefix` is given, else the oversized-prompt one over
    `trigger` (the stored rule, bound to the engine the case names)."""
    if prefix is not None:
        return PrefixCacheStory(engine, defect, no_advisory, ev, pc=prefix)
    return OversizedPromptStory(engine, defect, no_advisory, ev,
                                trigger=trigger.with_engine(engine.name if engine.name in ENGINES else "unknown"))


__all__ = ["STORIES", "make_story", "Evidence", "Story", "OversizedPromptStory", "PrefixCacheStory", "PrefixFacts"]
