"""The trigger: when a served response counts as exposed. Written once for Python (here) and once for SQL
(the macros kvir_max_req_input_len and kvir_rule_threshold in queries/macros.sql); tests/test_trigger.py
checks that the two agree. Spec, triage, audit, replay, the simulator and the reports all take it from here.

Two rules, because the public statement and the engine disagree by six token lengths:

    public   prompt_tokens > pool_tokens            the provider's statement ("more than 681,280 tokens")
    engine   prompt_tokens >= max_req_input_len     SGLang's own scheduler limit, whose test is `>=`

SGLang's scheduler (TpModelWorker) sets max_req_len = min(context_len - 1, pool - 1) and
max_req_input_len = max_req_len - 5, keeping five tokens of room for the output.
"""
from __future__ import annotations

from dataclasses import dataclass

RULES = ("public", "engine")
OUTPUT_RESERVE = 5           # SGLang: max_req_input_len = max_req_len - 5
FORMULA = "min(context - 1, pool - 1) - 5"


def max_req_input_len(context_len: int | None, pool_tokens: int | None):
    """SGLang's max_req_input_len: a prompt of this many tokens or more does not fit. Either number may be
    unknown (None; a start-up line without the context): the other alone bounds it, as in the SQL macro.
    Works on ints and NumPy arrays."""
    if context_len is None and pool_tokens is None:
        return None
    context_len = pool_tokens if context_len is None else context_len
    pool_tokens = context_len if pool_tokens is None else pool_tokens
    least = min if isinstance(context_len, int) and isinstance(pool_tokens, int) else _np_minimum
    return least(context_len - 1, pool_tokens - 1) - OUTPUT_RESERVE


def _np_minimum(a, b):
    import numpy as np

    return np.minimum(a, b)


def threshold(rule: str, pool_tokens: int, context_len: int | None):
    """The shortest prompt (in tokens) the rule counts as exposed."""
    if rule == "public":
        return pool_tokens + 1
    if rule == "engine":
        return max_req_input_len(context_len, pool_tokens)
    raise ValueError(f"unknown trigger rule {rule!r}; expected one of {', '.join(RULES)}")


@dataclass(frozen=True)
class Trigger:
    """The incident's trigger: the pool and context it applies to, and which rule counts."""

    pool_tokens: int
    context_tokens: int
    rule: str = "public"

    @property
    def other_rule(self) -> str:
        return "engine" if self.rule == "public" else "public"

    @property
    def engine_limit(self) -> int:
        """SGLang's max_req_input_len for this pool and context."""
        return max_req_input_len(self.context_tokens, self.pool_tokens)

    def threshold(self, rule: str | None = None) -> int:
        return threshold(rule or self.rule, self.pool_tokens, self.context_tokens)

    def hit(self, prompt_tokens: int, rule: str | None = None) -> bool:
        return prompt_tokens >= self.threshold(rule)

    def condition(self, rule: str | None = None) -> str:
        """What every counted prompt had, in words: 'more than 681,280 tokens' / '681,274 tokens or more'."""
        rule = rule or self.rule
        if rule == "public":
            return f"more than {self.pool_tokens:,} tokens"
        return f"{self.threshold(rule):,} tokens or more"

    def complement(self, rule: str | None = None) -> str:
        """What every prompt the rule does not count had: '681,280 tokens or fewer' / 'fewer than 681,274 tokens'."""
        rule = rule or self.rule
        if rule == "public":
            return f"{self.pool_tokens:,} tokens or fewer"
        return f"fewer than {self.threshold(rule):,} tokens"

    def describe(self, rule: str | None = None) -> str:
        """The rule with its formula, as summaries and manifests print it."""
        rule = rule or self.rule
        if rule == "public":
            return f"public: prompt_tokens > {self.pool_tokens:,} (the KV pool)"
        return f"engine: prompt_tokens >= {self.threshold(rule):,} ({FORMULA}, SGLang's max_req_input_len)"

    def query_params(self) -> dict[str, object]:
        """What the triage queries bind: the numbers, never a threshold computed twice."""
        return {"pool_tokens": self.pool_tokens, "context_tokens": self.context_tokens, "rule": self.rule}
