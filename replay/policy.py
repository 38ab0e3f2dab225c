"""Policies: the only difference between the unpatched and the patched engine.

UnpatchedPolicy is SGLang before the fixes (research/sglang.md §2.2, research/replay.md §5.1): a prompt
at or over max_req_input_len is swapped for the 1-token placeholder [0]; bootstrap admission compares
the placeholder's length with the pool, so it passes; the sender transfers 1 token; the decode side,
which pre-allocated pages for the whole prompt, decodes over them and the client gets HTTP 200.

PatchedPolicy is the union of the upstream fixes: bootstrap admission uses max_req_input_len (#30325), a
request aborted at intake finishes before any sender exists and decode is told (#34208, #38935), the
client gets HTTP 400 (#35421, #33507); as defence in depth the decode side refuses a transfer whose
token count is not the prompt length, and the patched kernel masks slots the request did not write.

FreedPageFill is a separate mitigation (not part of the upstream fix), so its effect can be measured
alone: zero or poison pages when they are freed (TensorRT-LLM's fresh-page fill, vLLM's zeroing).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Policy:
    name: str
    reject_before_bootstrap: bool       # prefill: an intake-rejected request ends (400) before a sender exists
    bootstrap_checks_input_limit: bool  # bootstrap admission compares the ORIGINAL length with max_req_input_len
    decode_checks_token_count: bool     # decode: transferred tokens must equal the prompt length
    kernel_checks_ownership: bool       # decode attention masks slots the request did not write

    @property
    def patched(self) -> bool:
        return self.reject_before_bootstrap


def UnpatchedPolicy() -> Policy:  # noqa: N802 - reads as a class at call sites
    return Policy("unpatched", False, False, False, False)


def PatchedPolicy() -> Policy:  # noqa: N802
    return Policy("patched", True, True, True, True)


FILLS = ("none", "zero", "nan", "sentinel")


@dataclass(frozen=True)
class FreedPageFill:
    """What happens to a page's bytes when it is freed. `nan` is fail-loud poison (non-finite in every
    float format); `sentinel` is a finite pattern encoding the previous owner (research/replay.md §4.3.3)."""

    mode: str = "none"

    def __post_init__(self) -> None:
        if self.mode not in FILLS:
            raise ValueError(f"unknown freed-page fill {self.mode!r}; one of {', '.join(FILLS)}")
