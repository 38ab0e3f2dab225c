"""The oversized-prompt mechanism's spec section: [trigger], the KV pool and context the incident ran with and
the rule that counts a served response (kvir.rules.trigger.Trigger), and the engine it may declare (where
earlier specs declared it; incident.engine is the place now, and the two must agree).
"""
from __future__ import annotations

from typing import Any

from kvir.rules.engines import NAMES as ENGINE_NAMES
from kvir.rules.trigger import RULES, Trigger
from kvir.spec.mechanism import SpecContext

KEYS = {"pool_tokens", "context_tokens", "rule", "engine"}

TEMPLATE = '''\
[trigger]
pool_tokens = 100000        # the KV pool in effect (SGLang: max_total_num_tokens; vLLM: KV cache size)
context_tokens = 131072     # the served context length (SGLang context_len; vLLM max_model_len)
rule = "public"             # "public": prompt_tokens > pool_tokens
                            # "engine": prompt_tokens >= the engine's own limit (needs the engine)
# engine = "vllm"           # sglang, vllm or unknown; unset: taken from the logs (kvir.rules.engines)

'''


class OversizedPromptSpec:
    section = "trigger"
    template = TEMPLATE
    title_example = "A prompt that does not fit the KV pool is served from another request's KV cache"
    sources_example = ""

    def parse(self, table: dict[str, Any] | None, ctx: SpecContext) -> Trigger:
        err = ctx.err
        if not isinstance(table, dict):
            raise err("trigger", "missing [trigger] table")
        for k in table:
            if k not in KEYS:
                raise err("trigger." + k, f"unknown key; expected one of {', '.join(sorted(KEYS))}")
        engine = table.get("engine")
        if engine is not None and engine not in ENGINE_NAMES:
            raise err("trigger.engine", f"expected one of {', '.join(ENGINE_NAMES)}, got {engine!r}")
        if engine is not None and ctx.engine is not None and engine != ctx.engine:
            raise err("incident.engine", f"incident.engine and [trigger] engine disagree ({ctx.engine} vs {engine})")
        pool = _positive_int(table, "pool_tokens", err)
        context = _positive_int(table, "context_tokens", err)
        rule = table.get("rule", "public")
        if rule not in RULES:
            raise err("trigger.rule", 'expected "public" (prompt_tokens > pool) or "engine" (the engine\'s own limit), '
                                      f"got {rule!r}")
        return Trigger(pool, context, rule, ctx.engine or engine or "unknown")

    def engine(self, params: Trigger) -> str | None:
        return None if params.engine == "unknown" else params.engine

    def record(self, params: Trigger) -> dict[str, Any]:
        return {"pool_tokens": params.pool_tokens, "context_tokens": params.context_tokens, "rule": params.rule}

    def restore(self, record: dict[str, Any]) -> Trigger:
        return Trigger(int(record["pool_tokens"]), int(record["context_tokens"]), record.get("rule") or "public")


def _positive_int(t: dict, key: str, err) -> int:
    v = t.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise err("trigger." + key, f"expected a positive integer number of tokens, got {v!r}")
    return v


PART = OversizedPromptSpec()
