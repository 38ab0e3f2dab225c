"""kvir.replay: the replay stage and the machinery it shares across mechanisms: a small deterministic
prefill/decode pair over paged KV pools (pure PyTorch; CPU reference, CUDA with a Triton kernel) whose
policies are SGLang builds (kvir.rules.builds), a provenance ledger that says whose data each response read,
and a block cache keyed as vLLM keys its blocks. Each mechanism's replay part (kvir.replay.plugin) uses
what it needs of them.

    run = kvir.replay.replay_case("case/", limit=20, scale=0.01)     # the stage (run.py)
    run.results, run.exposure                                         # replay_results, replay_exposure

One role per module:

    plugin       the stage's hookspec (ReplayPart) and its options and output
    run          replay_case: the case in, the mechanism's replay, replay_results and replay_exposure out
    results      replay_results and replay_exposure: the schemas every part returns, written and exported
    config       model dims, node limits (SGLang's max_req_input_len), memory arithmetic
    page_table   FlashInfer CSR page tables (indptr, indices, last_page_len)
    allocator    pages, free-list strategies, owner/epoch stamps, check_integrity()
    pool         K/V tensors and write stamps on the device, journals for counterfactual runs
    ledger       per slot and per page tenancy: writer, position, token, step, content hash
    node         pool + allocator + ledger of one role, kept in step
    checks       the owner/epoch check and the kernels' result types (shared by both kernels)
    kernels      paged decode attention (pure torch), optionally checking owners (canary, kvir's proposal)
    triton_kernels  the same for CUDA (tested on CPU under TRITON_INTERPRET=1)
    models       a small random-weight transformer and the hand-built recall model
    tokens       synthetic token streams derived from request ids
    policy       one policy per build range (sglang-0.5.19, -0.5.20, -0.5.21), kvir's proposal, freed-page fill
    block_cache  a cache of KV blocks under chained hashes (salted or not), with whose request wrote each
                 block; run_through_cache re-runs requests through one and says whose blocks each hit
    prefill, transfer, decode, pd_pair   the workers (page-granular transfer) and the pair that joins them
    attribution  one target under several builds, attribution, the causal sentinel check
    history      node history from the case's logs (lengths and limits as logged)
    sample       --scale: the decode attention over a sample of a row's pages (attribution stays full size)
    segment      one decode node's segment replayed, each request under its production build
    pd_rows      replay_results rows of a prefill/decode replay: verdicts, owners, assumptions
    device, progress   the torch device and threads of a replay; its progress bar

Importing kvir.replay (or its plugin) does not import torch: the names below load their module on first use.
"""
from __future__ import annotations

import importlib

_LAZY = {
    "PairConfig": "config", "ModelDims": "config", "NodeLimits": "config", "PDPair": "pd_pair",
    "RecallModel": "models", "TinyTransformer": "models", "TransformerConfig": "models", "PageTable": "page_table",
    "FreedPageFill": "policy", "KVIR_PROPOSAL": "policy", "POLICIES": "policy", "Policy": "policy",
    "policy_for": "policy", "Outcome": "request", "ReplayRequest": "request", "ReplayRun": "run",
    "replay_case": "run", "CacheRequest": "block_cache", "PrefixCache": "block_cache", "PrefixHit": "block_cache",
    "run_through_cache": "block_cache",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"kvir.replay.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'kvir.replay' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
