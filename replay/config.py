"""Sizes and limits the replay engine is built from: model dims, per-node pool/context limits.

Memory arithmetic (why full-size pools fit in CPU RAM). One KV token costs
    2 (K and V) x layers x kv_heads x head_dim x bytes per element.
The recall model (the default for case replays) has 1 layer, 1 KV head, head_dim 16, fp32:
    2 x 1 x 1 x 16 x 4 = 128 B per token.
The reference incident's pools are then
    prefill 681,280 tokens   x 128 B =  83 MiB
    decode  2,097,152 tokens x 128 B = 256 MiB   (the largest decode pool of the reference fleet)
plus host-side provenance of 20 B per slot (writer, position, token, write step, stamp: numpy int32)
    2,097,152 x 20 B = 40 MiB,
and a device-side int32 write stamp per slot (8 MiB). The small random-weight transformer used in tests
(2 layers, 2 KV heads, head_dim 16, fp32) costs 512 B per token: 1 GiB for a 2 M-token pool. Nothing is
allocated per token as a Python object: pools are tensors, the ledger is NumPy columns.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from kvir.rules.trigger import max_req_input_len


@dataclass(frozen=True)
class ModelDims:
    """The KV-relevant shape of a model: what a pool must hold per token."""

    n_layers: int
    n_q_heads: int
    n_kv_heads: int
    head_dim: int
    dtype: torch.dtype = torch.float32

    def __post_init__(self) -> None:
        if min(self.n_layers, self.n_q_heads, self.n_kv_heads, self.head_dim) < 1:
            raise ValueError(f"model dims must be positive: {self}")
        if self.n_q_heads % self.n_kv_heads:
            raise ValueError(f"n_q_heads ({self.n_q_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads})")

    @property
    def group(self) -> int:
        """Query heads per KV head (GQA ratio)."""
        return self.n_q_heads // self.n_kv_heads

    @property
    def kv_bytes_per_token(self) -> int:
        return 2 * self.n_layers * self.n_kv_heads * self.head_dim * torch.finfo(self.dtype).bits // 8


@dataclass(frozen=True)
class NodeLimits:
    """One engine node's limits, as SGLang derives them at start-up (sglang/srt/managers/scheduler.py and tp_worker.py in the wheels).

    pool_tokens is max_total_num_tokens (already a multiple of page_size in SGLang); context_len the
    model's context length. The scheduler refuses a prompt of max_req_input_len tokens or more (the one
    definition: kvir.rules.trigger.max_req_input_len).
    """

    pool_tokens: int
    context_len: int
    page_size: int = 64
    allow_auto_truncate: bool = False
    source: str = ""            # where the numbers came from (node_configs file:line, incident table, a test)

    def __post_init__(self) -> None:
        if self.page_size < 1 or self.pool_tokens < self.page_size or self.context_len < 1:
            raise ValueError(f"invalid node limits: {self}")

    @property
    def num_pages(self) -> int:
        """Allocatable pages (SGLang rounds the pool down to whole pages; page 0 is extra, reserved)."""
        return self.pool_tokens // self.page_size

    @property
    def max_req_input_len(self) -> int:
        return max_req_input_len(self.context_len, self.pool_tokens)   # kvir.rules.trigger: the one definition


@dataclass(frozen=True)
class PairConfig:
    """A prefill node and a decode node joined by a KV transfer."""

    prefill: NodeLimits
    decode: NodeLimits
    transfer_batch_cap: int | None = None      # SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES (pages per batch)
    free_list: str = "sglang-pd"                # allocation strategy, see allocator.STRATEGIES
    seed: int = 0
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.prefill.page_size != self.decode.page_size:
            # SGLang refuses the pair at bootstrap ("Page size mismatch").
            raise ValueError(f"page size mismatch: prefill {self.prefill.page_size}, decode {self.decode.page_size}")

    @property
    def page_size(self) -> int:
        return self.decode.page_size
