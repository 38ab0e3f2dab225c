"""Replay tests. Without a GPU, Triton kernels run under Triton's interpreter (TRITON_INTERPRET=1), which
must be set before triton is imported; kvir.replay imports triton only inside the Triton kernel module."""
from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
