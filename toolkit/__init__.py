"""kvir: incident response and coordinated disclosure for KV-cache exposure incidents in LLM serving.

The Python API mirrors the CLI (each command is a thin wrapper over one of these):

    kvir.triage(incident, paths, out=...)   -> TriageResult (tables as pandas / Arrow, the case path)
    kvir.ingest_shard(paths, out, shard=...) -> one shard of a canonical dataset (triage it, also on Spark)
    kvir.confirm(case, sources, options)     -> ConfirmResult (whose text an affected response carried)
    kvir.open_case(path)                     -> Case (reopen an investigation)
    kvir.simulate(out, requests=..., seed=...) -> the synthetic reference fleet
    kvir.probe(endpoint, model, ...)         -> ProbeResult (is a live deployment exposed?)
    kvir.audit.audit(paths, ...)             -> audit findings
    kvir.replay.replay_case(case, ...)       -> replay verdicts
    kvir.report.report(case, ...)            -> rendered documents

Heavy modules (torch for replay, matplotlib for reports) are imported only when used.
"""
from __future__ import annotations

__version__ = "0.1.0"

# Functions only: a name here must not be a submodule's name too, or importing the submodule would
# replace the function on the package (kvir.audit, kvir.replay and kvir.report are packages: call
# kvir.audit.audit(...), kvir.replay.replay_case(...), kvir.report.report(...)).
_LAZY = {
    "triage": ("kvir.triage", None),   # the package itself: it is callable (kvir/triage/__init__.py)
    "TriageResult": ("kvir.triage.run", "TriageResult"),
    "probe": ("kvir.probe", None),     # callable too (kvir/probe/__init__.py)
    "confirm": ("kvir.confirm", None),  # callable too (kvir/confirm/__init__.py)
    "ConfirmOptions": ("kvir.confirm.run", "ConfirmOptions"),
    "ProbeResult": ("kvir.probe.result", "ProbeResult"),
    "open_case": ("kvir.case.store", "open_case"),
    "Case": ("kvir.case.store", "Case"),
    "load_spec": ("kvir.spec.model", "load_spec"),
    "ingest_shard": ("kvir.ingest.export", "ingest_shard"),
    "simulate": ("kvir.sim.fleet", "simulate"),
    "demo": ("kvir.sim.demo", "demo"),
    "KvirError": ("kvir.core.errors", "KvirError"),
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        module = importlib.import_module(mod)
        return module if attr is None else getattr(module, attr)
    raise AttributeError(f"module 'kvir' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
