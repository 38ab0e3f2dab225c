"""The oversized-prompt mechanism's wording (the reference incident's): a prompt beyond what the KV pool holds
is served instead of refused; on a PD build that hands decode the request, decode reads pages nobody wrote
for it (a one-token placeholder on the prefill side). Every sentence states its owner: the spec's [trigger],
the start-up logs (kvir audit), the engine's code (kvir.rules.engines), the declared or matched defect.
"""
from __future__ import annotations

from dataclasses import dataclass

from kvir.report.story import Story
from kvir.report.timeline import served_on
from kvir.rules.trigger import Trigger

# [disclosure] data_exposed's default for this mechanism: what a response served from unwritten pages carried
DATA_EXPOSED = (
    "fragments of text derived from other requests' prompts and completions (KV-cache contents) that "
    "appeared in the affected responses",
)


@dataclass(frozen=True, kw_only=True)
class OversizedPromptStory(Story):
    trigger: Trigger               # the stored rule, bound to the engine the case names
    replay_scope: str = ""         # what the replay's figures cover (report.replay_scope)

    defect_role = "let these responses carry other requests' data"

    # ---------------------------------------------------------------- the engine
    @property
    def engine_knowledge(self) -> str:
        """What kvir knows about this engine's handling of an oversized prompt, with where it read it."""
        e = self.engine.engine
        if not e.known:
            return ""
        t = self.trigger
        return (f"From {e.label}'s code (kvir's engine table, applied because the engine is {e.label}): with a KV "
                f"pool smaller than its context it {e.small_pool} ({e.small_pool_evidence}); "
                f"{e.limit_text(t.context_tokens, t.pool_tokens)}, in {e.limit_evidence}.")

    # ---------------------------------------------------------------- the configuration
    @property
    def pool_below_context(self) -> bool:
        return self.trigger.pool_tokens < self.trigger.context_tokens

    @property
    def configuration(self) -> str:
        t = self.trigger
        s = (f"incident.toml gives a KV pool of {t.pool_tokens:,} tokens under a context length of "
             f"{t.context_tokens:,} tokens.")
        ev = self.ev
        if not ev.audit_ran:
            return s + " No start-up logs are in the case (kvir audit not run), so no node's pool is confirmed."
        if ev.small_pool_starts == 0:
            return s + " The start-up logs in the case show no node start whose pool is smaller than its context."
        out = (s + f" The start-up logs show {ev.small_pool_starts} node start(s) with a pool smaller than the context"
               f" (first: {ev.first_small_pool_evidence})")
        if ev.refused_small_pool_starts:
            out += f"; {self.engine_label} refused to start {ev.refused_small_pool_starts} of them"
        out += "."
        if self.contradicted:
            out += (f" Every start that served ({ev.holding_starts}) held the whole context: the start-up logs do not "
                    f"support [trigger]'s pool for the serving nodes.")
        return out

    # ---------------------------------------------------------------- what the logs show of the mechanism
    @property
    def serving_path(self) -> str:
        n = self.ev.pd_responses
        if not n:
            return ""
        return (f"The logs show prefill/decode disaggregation: {n:,} affected response(s) were prefilled on one node "
                f"and decoded on another.")

    @property
    def request_evidence(self) -> str:
        n = self.ev.placeholder_responses
        if not n:
            return ""
        return (f"For {n:,} of them the logs show that the prefill side computed a single token for a longer prompt "
                f"(prefill_tokens = 1): the prompt was replaced by a one-token placeholder.")

    @property
    def cause_short(self) -> str:
        """One clause for notices: the cause, as far as it is known."""
        parts = []
        if self.pool_below_context and not self.contradicted:
            parts.append("a serving configuration whose KV pool was smaller than its context length")
        if self.defect is not None:
            parts.append(f"a defect in the inference engine ({self.defect.package})")
        if not parts:
            return "a cause that the investigation has not yet established"
        return " together with ".join(parts)

    @property
    def contradicted(self) -> bool:
        """The start-up logs contradict [trigger]: no start served on a pool below the context, and starts that
        served held it (e.g. vLLM refused the small pool)."""
        ev = self.ev
        return (ev.audit_ran and self.pool_below_context and ev.small_pool_starts == ev.refused_small_pool_starts
                and ev.holding_starts > 0)

    @property
    def configuration_public(self) -> str:
        t, ev = self.trigger, self.ev
        s = (f"Our incident record gives a context length of {t.context_tokens:,} tokens and a KV pool of "
             f"{t.pool_tokens:,} tokens.")
        served = ev.small_pool_starts - ev.refused_small_pool_starts
        if ev.audit_ran and served > 0:
            s += f" Our start-up logs show {served} node start(s) that served with a KV pool smaller than the context."
        if ev.audit_ran and ev.refused_small_pool_starts:
            s += (f" The engine refused to start {ev.refused_small_pool_starts} time(s) on a KV pool smaller than the "
                  f"context.")
        if self.contradicted:
            s += (f" Every start that served in our start-up logs ({ev.holding_starts}) had a KV pool that holds the "
                  f"whole context: the cause of these responses is still under investigation.")
        return s

    @property
    def what_happened_public(self) -> str:
        d = self.defect
        defect = (d.description if d is not None else
                  "Which engine defect, if any, let these responses carry other requests' data has not been "
                  "established yet.")
        return " ".join(x for x in (self.configuration_public, self.engine_public, self.serving_path,
                                    self.request_evidence, defect) if x)

    @property
    def warnings(self) -> tuple[str, ...]:
        if not self.contradicted:
            return ()
        return ("the start-up logs contradict incident.toml [trigger]: no start served on a KV pool below the "
                "context, and every start that served held the whole context (check pool_tokens, or the nodes)",)

    def served_on(self, prefill_node: str | None, decode_node: str | None) -> str:
        return served_on(prefill_node, decode_node)

    # ---------------------------------------------------------------- the documents' mechanism sentences
    @property
    def rule_text(self) -> str:
        return self.trigger.describe()

    @property
    def condition(self) -> str:
        return self.trigger.condition()

    @property
    def possibly_affected(self) -> int:
        return 0                   # the rule decides every response it counts: none is counted apart

    def other_rule_sentence(self, adds: int, drops: int) -> str:
        t = self.trigger
        if t.available(t.other_rule):
            return f"The other rule ({t.describe(t.other_rule)}) would add {adds:,} and drop {drops:,} served responses."
        return f"The other rule is not available ({t.describe(t.other_rule)})."

    @property
    def summary_clause(self) -> str:
        """After 'N responses of MODEL between A and B': what they were and what they may have carried."""
        return (f"answered prompts of {self.condition} (rule {self.rule_text}; incident.toml gives a KV pool of "
                f"{self.trigger.pool_tokens:,} tokens) and may have carried other requests' KV-cache data")

    def trigger_sentence(self, model: str) -> str:
        return f"Prompts of {self.condition} sent to {model} ({self.rule_text})"

    @property
    def condition_row(self) -> str:
        return f"every affected response answered a prompt of {self.condition} ({self.rule_text})"

    @property
    def not_exposed(self) -> str:
        return f"responses to prompts of {self.trigger.complement()}: every other request was processed normally"

    @property
    def exposed_clause(self) -> str:
        """After 'responses from the model M': what they may have held (public report, CSAF summary)."""
        return "may have contained text derived from other requests' data"

    @property
    def notice_what(self) -> str:
        return (f"to prompts of {self.condition} could contain text derived from other requests' data instead of an "
                f"answer to the prompt.")

    @property
    def notice_meaning(self) -> str:
        return ("The responses listed above may contain fragments of other parties' prompts or completions, which can "
                "include personal data of people who are not your users. They did not answer your prompt.")

    @property
    def notice_actions(self) -> tuple[str, ...]:
        return ("Do not use the responses listed above. Delete them, and copies in logs, caches, datasets or downstream "
                "systems, or keep them only under restricted access for your own investigation.",
                "Do not forward their content to your users or to third parties.")

    def source_what(self, model: str) -> str:
        return (f"{self.cause_short} let some responses of the model {model} be derived from other requests' data held in "
                f"the engine's KV cache.")

    @property
    def gdpr_mechanism(self) -> str:
        return (f"to prompts of {self.condition} could be generated from other requests' data held in the inference "
                f"engine's KV cache")

    @property
    def gdpr_consequences(self) -> str:
        return ("Disclosure of fragments of text to another business customer, which may reveal personal data contained "
                "in it.")

    @property
    def workaround(self) -> str:
        return ("Keep the context length no larger than the KV pool on every node (compare them in each start-up log "
                "after any change of weights, quantisation, parallelism or memory settings); do not rely on proxy "
                "limits.")

    @property
    def impact(self) -> str:
        return ("Cross-request (cross-tenant) disclosure of KV-cache contents: text derived from other users' prompts "
                "and completions.")

    @property
    def preconditions(self) -> str:
        t, e = self.trigger, self.engine.engine
        return (f"Prompts of {self.condition} on a deployment whose KV pool is smaller than its context length; "
                f"{e.limit_text(t.context_tokens, t.pool_tokens) if e.known else 'the engine is not identified'}.")

    @property
    def details_config(self) -> str:
        t = self.trigger
        return f"incident.toml gives a context of {t.context_tokens} tokens and a KV pool of {t.pool_tokens} tokens."

    @property
    def not_replayed(self) -> str:
        return "Which other requests' data each response contained has not been established yet (replay not run)."

    config_details = None          # the post-mortem lists node_fixes (pool vs context per node) instead
    remediation_public = None      # the public report states node_fixes (restarts onto a pool that holds the context)

    @property
    def records_clause(self) -> str:
        return "carried potentially foreign data"

    @property
    def data_exposed(self) -> tuple[str, ...]:
        return DATA_EXPOSED

    @property
    def replay_source_meaning(self) -> tuple[str, ...]:
        """The source notice's 'what this means' (a replay found the account's data in another response)."""
        return ("Text derived from the prompts or completions of these requests may have been disclosed to another "
                "customer of ours (an API customer, not the public). If those requests held personal data, this is a "
                "personal data breach (confidentiality) for which you are the controller.",
                "The recipients receive their own notice listing the affected responses and asking them to delete them "
                "and all copies.",
                "The replay is a reconstruction of the serving path; the token counts show how much of your data was "
                "read, not how much of it was legible in the response.")

    replay_tokens = "foreign tokens read"    # after the replay's token count in the post-mortem
