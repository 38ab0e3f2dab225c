"""kvir: incident response and coordinated disclosure for KV-cache exposure incidents in LLM serving.

The Python API mirrors the CLI (each command is a thin wrapper over one of these):

    kvir.triage(incident, paths, out=...)   -> TriageResult (tables as pandas / Arrow, the case path)
    kvir.open_case(path)                     -> Case (reopen an investigation)
    kvir.simulate(out, requests=..., seed=...) -> the synthetic reference fleet
    kvir.audit(paths, ...)                   -> audit findings
    kvir.replay(case, ...)                   -> replay verdicts
    kvir.report(case, ...)                   -> rendered documents

Heavy modules (torch for replay, matplotlib for reports) are imported only when used.
"""
from __future__ import annotations

__version__ = "0.1.0"

_LAZY = {
    "triage": ("kvir.triage", "triage"),
    "TriageResult": ("kvir.triage", "TriageResult"),
    "open_case": ("kvir.case", "open_case"),
    "Case": ("kvir.case", "Case"),
    "load_spec": ("kvir.spec", "load_spec"),
    "simulate": ("kvir.simulate", "simulate"),
    "demo": ("kvir.demo", "demo"),
    "audit": ("kvir.audit", "audit"),
    "replay": ("kvir.replay.run", "replay_case"),
    "report": ("kvir.report", "report"),
    "KvirError": ("kvir.errors", "KvirError"),
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(mod), attr)
    raise AttributeError(f"module 'kvir' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
