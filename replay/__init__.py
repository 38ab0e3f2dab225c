"""kvir.replay: a small deterministic prefill/decode engine over paged KV pools (pure PyTorch; CPU
reference, CUDA with a Triton kernel) that replays affected requests on an unpatched and a patched
path and says, from a provenance ledger, whose data each response read.

    run = kvir.replay.replay_case("case/", limit=20, scale=0.01)     # the case integration (run.py)
    run.results, run.exposure                                         # replay_results, replay_exposure

One role per module:

    config       model dims, node limits (SGLang's max_req_input_len), memory arithmetic
    page_table   FlashInfer CSR page tables (indptr, indices, last_page_len)
    allocator    pages, free-list strategies, owner/epoch stamps, check_integrity()
    pool         K/V tensors and write stamps on the device, journals for counterfactual runs
    ledger       per slot and per page tenancy: writer, position, token, step, content hash
    node         pool + allocator + ledger of one role, kept in step
    kernels      paged decode attention (pure torch), unpatched and patched (owner/epoch check)
    triton_kernels  the same for CUDA (tested on CPU under TRITON_INTERPRET=1)
    reference    the float64 dense oracle and the error-ratio criterion
    models       a small random-weight transformer and the hand-built recall model
    tokens       synthetic token streams derived from request ids
    policy       UnpatchedPolicy / PatchedPolicy and the freed-page fill mitigation
    prefill, transfer, decode, engine   the workers and the engine that joins them
    attribution  one target both ways, attribution, the causal sentinel check
    history      node history from the case's logs; scaling that keeps admission decisions
    run          replay_case: the case in, replay_results and replay_exposure out
"""
from __future__ import annotations

from kvir.replay.config import EngineConfig, ModelDims, NodeLimits
from kvir.replay.engine import PDEngine
from kvir.replay.models import RecallModel, TinyTransformer, TransformerConfig
from kvir.replay.page_table import PageTable
from kvir.replay.policy import FreedPageFill, PatchedPolicy, Policy, UnpatchedPolicy
from kvir.replay.request import Outcome, ReplayRequest
from kvir.replay.run import ReplayRun, replay_case

__all__ = ["EngineConfig", "ModelDims", "NodeLimits", "PDEngine", "RecallModel", "TinyTransformer",
           "TransformerConfig", "PageTable", "FreedPageFill", "PatchedPolicy", "Policy", "UnpatchedPolicy",
           "Outcome", "ReplayRequest", "ReplayRun", "replay_case"]
