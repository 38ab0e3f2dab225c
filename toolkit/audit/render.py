"""Audit results as JSON (machine output); the tables for people are in kvir.cli.present.audit."""
from __future__ import annotations

import json
from typing import Any

from kvir.audit.rules import FIXED_SGLANG, SEVERITIES



def _records(df) -> list[dict[str, Any]]:
    return json.loads(df.to_json(orient="records", date_format="iso", date_unit="us")) if len(df) else []


def to_json(result) -> dict[str, Any]:
    from kvir import __version__

    return {
        "kvir_version": __version__,
        "fixed_sglang": FIXED_SGLANG,
        "summary": summary(result),
        "inputs": result.inputs,
        "node_configs": _records(result.node_configs),
        "findings": _records(result.findings),
        "runtime_indicators": _records(result.runtime_indicators),
        "node_exposure": _records(result.node_exposure),
        "problems": _records(result.problems),
    }


def summary(result) -> dict[str, Any]:
    f = result.findings
    return {
        "files": len(result.files),
        "node_starts": len(result.node_configs),
        "nodes": int(result.node_configs["node"].nunique()) if len(result.node_configs) else 0,
        "findings": {s: int(((f["severity"] == s) & (f["status"] == "fail")).sum()) for s in SEVERITIES},
        "unknown": {s: int(((f["severity"] == s) & (f["status"] == "unknown")).sum()) for s in SEVERITIES},
        "problems": len(result.problems),
        "seconds": round(result.seconds, 3),
    }
