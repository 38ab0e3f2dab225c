"""What `kvir serve` is told: the shared engine's settings and each mechanism's target mode.

    ServeConfig(pool=4096, context=8192, **modes)      # e.g. build="0.5.19": a mechanism's serve option

The engine's own settings (pools, pages, the free list, the model's name, limits, tenants) are fields here.
Every other keyword is a registered mechanism's serve option (kvir.serve.plugin.ServePart.options): kept in
`modes`, checked by the part it belongs to, and resolved to its default when not given.
"""
from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from kvir.core.errors import KvirError

FREE_LISTS = ("sglang", "sglang-pd", "fifo")


@dataclass(frozen=True, init=False)
class ServeConfig:
    pool: int = 4096                  # prefill KV pool (tokens): SGLang's max_total_num_tokens
    context: int = 8192               # the model's context length
    decode_pool: int | None = None    # decode KV pool (default: the context, so the decode side admits what prefill cannot)
    page_size: int = 16
    free_list: str = "sglang"         # which freed pages a new request gets (kvir.replay.allocator)
    model: str = "kvir-replay"
    usage_from: str = "decode"        # usage.prompt_tokens: decode's count (the prompt) or prefill's (1 for the stub)
    attribution: bool = True          # ledger: whose slots each response read
    default_max_tokens: int = 16
    max_tokens_cap: int = 512         # output tokens per request at most (the engine thread serves one at a time)
    tenants: dict[str, str] = field(default_factory=dict)   # API key -> tenant name (empty: every key is a tenant)
    modes: dict[str, Any] = field(default_factory=dict)     # the mechanisms' serve options given, by name

    def __init__(self, **kw: Any) -> None:
        modes = dict(kw.pop("modes", None) or {})
        for f in fields(self):
            if f.name == "modes":
                continue
            value = kw.pop(f.name) if f.name in kw else (
                f.default_factory() if f.default_factory is not MISSING else f.default)
            object.__setattr__(self, f.name, value)
        object.__setattr__(self, "modes", {**modes, **kw})   # checked against the parts' options by check()

    def values(self, part: Any) -> dict[str, Any]:
        """A serve part's options: what was given, else each one's default."""
        return {o.name: self.modes.get(o.name, o.default) for o in part.options}

    def check(self) -> None:
        if self.free_list not in FREE_LISTS:
            raise KvirError(f"--free-list must be one of {', '.join(FREE_LISTS)}, not {self.free_list!r}")
        if self.usage_from not in ("decode", "prefill"):
            raise KvirError(f"--usage-from must be decode or prefill, not {self.usage_from!r}")
        if self.page_size < 1 or self.pool < self.page_size or self.context < 2:
            raise KvirError(f"need page size >= 1, pool >= page size and context >= 2 (got page {self.page_size}, "
                            f"pool {self.pool}, context {self.context})")
        if (self.decode_pool or self.context) < self.page_size:
            raise KvirError("--decode-pool must hold at least one page")
        if self.max_tokens_cap < 1:
            raise KvirError("--max-tokens-cap must be at least 1")
        parts = serve_parts()
        known = {o.name for p in parts.values() for o in p.options}
        unknown = sorted(set(self.modes) - known)
        if unknown:
            raise KvirError(f"kvir serve has no option {', '.join(unknown)}; the mechanisms' options: "
                            f"{', '.join(sorted(known))}")
        for part in parts.values():
            part.check(self.values(part))

    @property
    def decode_tokens(self) -> int:
        return self.decode_pool or self.context


def serve_parts() -> dict[str, Any]:
    """Every registered mechanism's serve part (kvir.serve.plugin.ServePart), by name, in registration order."""
    from kvir.spec.mechanism import mechanisms

    return {m.name: m.part("serve") for m in mechanisms()}
