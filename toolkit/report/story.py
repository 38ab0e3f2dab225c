"""What the case says happened, sentence by sentence, each sentence with its owner: incident.toml (the spec),
the evidence in the case (logs, start-up logs, replay), or knowledge kvir ships about an engine that the
evidence or the spec identified (kvir.rules.engines, kvir.rules.builds), said as such. What none of them
says is said to be unknown. Every prose and machine document takes its wording about the engine and the
mechanism from here, never from a default.

This module holds the wording of the oversized-prompt mechanism (a prompt beyond the KV pool; PD builds;
the one-token placeholder; pages nobody wrote) in one place, so that a mechanism registry can own it later.
"""
from __future__ import annotations

from dataclasses import dataclass

from kvir.report.defect import Defect
from kvir.rules.engines import ENGINES, EngineChoice
from kvir.rules.trigger import Trigger


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


@dataclass(frozen=True)
class Story:
    engine: EngineChoice
    trigger: Trigger
    defect: Defect | None
    no_advisory: str               # why there is no engine advisory ('' when there is one)
    ev: Evidence

    # ---------------------------------------------------------------- the engine
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
    def pd(self) -> str:
        n = self.ev.pd_responses
        if not n:
            return ""
        return (f"The logs show prefill/decode disaggregation: {n:,} affected response(s) were prefilled on one node "
                f"and decoded on another.")

    @property
    def placeholder(self) -> str:
        n = self.ev.placeholder_responses
        if not n:
            return ""
        return (f"For {n:,} of them the logs show that the prefill side computed a single token for a longer prompt "
                f"(prefill_tokens = 1): the prompt was replaced by a one-token placeholder.")

    # ---------------------------------------------------------------- the defect
    @property
    def defect_sentence(self) -> str:
        d = self.defect
        if d is None:
            return ("Which engine defect, if any, let these responses carry other requests' data is not established: "
                    "incident.toml declares none ([defect]) and the evidence matches none kvir knows.")
        return f"Engine defect ({d.how}): {d.description}"

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
        return " ".join(x for x in (self.configuration_public, self.engine_public, self.pd, self.placeholder, defect) if x)

    @property
    def what_happened(self) -> str:
        return " ".join(x for x in (self.configuration, self.engine_sentence, self.engine_knowledge, self.pd,
                                    self.placeholder, self.defect_sentence) if x)

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


def make_story(engine: EngineChoice, trigger: Trigger, defect: Defect | None, no_advisory: str,
               ev: Evidence) -> Story:
    return Story(engine, trigger.with_engine(engine.name if engine.name in ENGINES else "unknown"), defect,
                 no_advisory, ev)
