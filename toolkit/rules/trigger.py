"""The trigger: when a served response counts as exposed. Written once for Python (here) and once for SQL
(the macros kvir_engine_limit and kvir_rule_threshold in queries/macros.sql); tests/test_trigger.py checks
that the two agree. Spec, triage, audit, replay, the simulator and the reports all take it from here.

Two rules, because a pool-based statement and the engine's own limit can disagree:

    public   prompt_tokens > pool_tokens            longer than the KV pool incident.toml gives
    engine   prompt_tokens >= the engine's limit    the limit of the engine that served it
                                                    (kvir.rules.engines: SGLang's max_req_input_len =
                                                    min(context - 1, pool - 1) - 5; vLLM's max_model_len)

The engine rule needs a known engine (incident.toml [trigger] engine, or the evidence: kvir.rules.engines.
resolve_engine); without one it is not available and the summaries say so.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from kvir.rules.engines import ENGINES, FORMULA, OUTPUT_RESERVE, max_req_input_len

RULES = ("public", "engine")


def threshold(rule: str, pool_tokens: int, context_len: int | None, engine: str = "sglang"):
    """The shortest prompt (in tokens) the rule counts as exposed (None: the engine's limit is unknown)."""
    if rule == "public":
        return pool_tokens + 1
    if rule == "engine":
        return ENGINES[engine].limit(context_len, pool_tokens)
    raise ValueError(f"unknown trigger rule {rule!r}; expected one of {', '.join(RULES)}")


@dataclass(frozen=True)
class Trigger:
    """The incident's trigger: the pool and context it applies to, which rule counts, and the engine whose
    own limit the engine rule is ('unknown' until incident.toml or the evidence says)."""

    pool_tokens: int
    context_tokens: int
    rule: str = "public"
    engine: str = "unknown"

    @property
    def other_rule(self) -> str:
        return "engine" if self.rule == "public" else "public"

    def with_engine(self, engine: str) -> "Trigger":
        return replace(self, engine=engine)

    @property
    def engine_limit(self) -> int | None:
        """The engine's own prompt limit for this pool and context (None: engine unknown)."""
        return ENGINES[self.engine].limit(self.context_tokens, self.pool_tokens)

    def available(self, rule: str | None = None) -> bool:
        return self.threshold(rule) is not None

    def threshold(self, rule: str | None = None) -> int | None:
        return threshold(rule or self.rule, self.pool_tokens, self.context_tokens, self.engine)

    def hit(self, prompt_tokens: int, rule: str | None = None) -> bool:
        t = self.threshold(rule)
        if t is None:
            raise ValueError(f"the {rule or self.rule} rule is not available: the engine is unknown")
        return prompt_tokens >= t

    def condition(self, rule: str | None = None) -> str:
        """What every counted prompt had, in words: 'more than 200 tokens' / '256 tokens or more'."""
        rule = rule or self.rule
        if rule == "public":
            return f"more than {self.pool_tokens:,} tokens"
        t = self.threshold(rule)
        return f"{t:,} tokens or more" if t is not None else "a length the engine refuses (engine unknown)"

    def complement(self, rule: str | None = None) -> str:
        """What every prompt the rule does not count had: '200 tokens or fewer' / 'fewer than 256 tokens'."""
        rule = rule or self.rule
        if rule == "public":
            return f"{self.pool_tokens:,} tokens or fewer"
        t = self.threshold(rule)
        return f"fewer than {t:,} tokens" if t is not None else "a length the engine accepts (engine unknown)"

    def describe(self, rule: str | None = None) -> str:
        """The rule with its formula, as summaries and manifests print it."""
        rule = rule or self.rule
        if rule == "public":
            return f"public: prompt_tokens > {self.pool_tokens:,} (the KV pool)"
        e = ENGINES[self.engine]
        t = self.threshold(rule)
        if t is None:
            return "engine: not available (the engine is unknown: set [trigger] engine in incident.toml)"
        return f"engine: prompt_tokens >= {t:,} ({e.limit_formula}, {e.label}'s {e.limit_name})"

    def query_params(self) -> dict[str, object]:
        """What the triage queries bind: the numbers, never a threshold computed twice."""
        return {"pool_tokens": self.pool_tokens, "context_tokens": self.context_tokens, "rule": self.rule,
                "engine": self.engine}


__all__ = ["FORMULA", "OUTPUT_RESERVE", "RULES", "Trigger", "max_req_input_len", "threshold"]
