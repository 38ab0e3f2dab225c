"""The torch device and threads a paged-KV replay runs with, and how the results name the device."""
from __future__ import annotations

import platform
from contextlib import contextmanager
from typing import Iterator

import torch

from kvir.core.errors import KvirError


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise KvirError("--device cuda: no CUDA device is available", hint="use --device cpu or auto")
    if device not in ("cpu", "cuda"):
        raise KvirError(f"unknown device {device!r}", hint="auto, cpu or cuda")
    return torch.device(device)


def describe_device(dev: torch.device) -> str:
    if dev.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(dev)})"
    return f"cpu ({platform.machine()}, torch {torch.__version__})"


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """torch's intra-op threads on CPU set to `threads` while the replay runs, restored afterwards (None
    keeps torch's setting). One is the replay's default: it is a long chain of small memory-bound ops, and
    on a shared machine multi-threaded ops stall (benchmarks/README.md)."""
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


__all__ = ["resolve_device", "describe_device", "torch_threads"]
