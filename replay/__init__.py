"""kvir.replay: a small deterministic prefill/decode engine over paged KV pools (pure PyTorch; CPU
reference, CUDA with a Triton kernel) that replays affected requests under the SGLang builds they ran on
and the builds compared (policies are builds: kvir.rules.builds), and says, from a provenance ledger,
whose data each response read.

    run = kvir.replay.replay_case("case/", limit=20, scale=0.01)     # the case integration (run.py)
    run.results, run.exposure                                         # replay_results, replay_exposure

One role per module:

    config       model dims, node limits (SGLang's max_req_input_len), memory arithmetic
    page_table   FlashInfer CSR page tables (indptr, indices, last_page_len)
    allocator    pages, free-list strategies, owner/epoch stamps, check_integrity()
    pool         K/V tensors and write stamps on the device, journals for counterfactual runs
    ledger       per slot and per page tenancy: writer, position, token, step, content hash
    node         pool + allocator + ledger of one role, kept in step
    checks       the owner/epoch check and the kernels' result types (shared by both kernels)
    kernels      paged decode attention (pure torch), optionally checking owners (canary, kvir's proposal)
    triton_kernels  the same for CUDA (tested on CPU under TRITON_INTERPRET=1)
    reference    the float64 dense oracle and the error-ratio criterion
    models       a small random-weight transformer and the hand-built recall model
    tokens       synthetic token streams derived from request ids
    policy       one policy per build range (sglang-0.5.19, -0.5.20, -0.5.21), kvir's proposal, freed-page fill
    prefix_cache a prefix cache keyed as vLLM keys its blocks (salted or not), with whose request wrote each
                 block; replay_prefix_cache re-runs requests through one and says whose blocks each hit
    prefill, transfer, decode, engine   the workers (page-granular transfer) and the engine that joins them
    attribution  one target under several builds, attribution, the causal sentinel check
    history      node history from the case's logs; scaling that keeps admission decisions
    segment      one decode node's segment replayed, each request under its production build
    results      replay_results (one row per response and build) and replay_exposure
    run          replay_case: the case in, replay_results and replay_exposure out
"""
from __future__ import annotations

import importlib
from typing import Any

# name -> the module that defines it; imported on first use (PEP 562), so that importing kvir.replay.plugin
# (the replay stage's hookspec, which the mechanism registry reads at every command) costs no torch import.
_WHERE = {
    "EngineConfig": "config", "ModelDims": "config", "NodeLimits": "config", "PDEngine": "engine",
    "RecallModel": "models", "TinyTransformer": "models", "TransformerConfig": "models", "PageTable": "page_table",
    "KVIR_PROPOSAL": "policy", "POLICIES": "policy", "FreedPageFill": "policy", "Policy": "policy",
    "policy_for": "policy", "CacheRequest": "prefix_cache", "PrefixCache": "prefix_cache",
    "PrefixHit": "prefix_cache", "replay_prefix_cache": "prefix_cache", "Outcome": "request",
    "ReplayRequest": "request", "ReplayRun": "run", "replay_case": "run",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'kvir.replay' has no attribute {name!r}")
    return getattr(importlib.import_module(f"kvir.replay.{_WHERE[name]}"), name)


__all__ = ["EngineConfig", "ModelDims", "NodeLimits", "PDEngine", "RecallModel", "TinyTransformer",
           "TransformerConfig", "PageTable", "FreedPageFill", "KVIR_PROPOSAL", "POLICIES", "Policy", "policy_for",
           "Outcome", "ReplayRequest", "ReplayRun", "replay_case", "CacheRequest", "PrefixCache", "PrefixHit",
           "replay_prefix_cache"]
