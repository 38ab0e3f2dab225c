"""Sigma rules (the SigmaHQ specification: rules and correlation rules) from the mechanisms' runtime signals
(kvir.audit.signals). A line signal is a keyword rule over the engine's raw lines (every keyword must appear,
none of the exclusions); a correlation groups its signals' events by a field (a request id, the node) within a
timespan. Ids are UUIDv5 of the signal id, so a rule keeps its id across runs and kvir versions.
"""
from __future__ import annotations

import uuid
from typing import Any

from kvir.audit.signals import Correlation, LogSignal

NAMESPACE = uuid.UUID("6f0d5b52-3d8e-4c3a-9a59-4b8f7c1e2a34")      # kvir's namespace for rule ids
AUTHOR = "kvir detect"


def rule_id(name: str) -> str:
    return str(uuid.uuid5(NAMESPACE, name))


def _tags(mechanism: str, incident: str | None) -> list[str]:
    tags = [f"kvir.mechanism.{mechanism.replace('-', '_')}"]
    if incident:
        tags.append("kvir.incident." + "".join(c if c.isalnum() else "_" for c in incident.lower()))
    return tags


def line_rule(s: LogSignal, mechanism: str, incident: str | None = None) -> dict[str, Any]:
    """One Sigma rule: all of s.keywords (one selection each, ANDed), none of s.exclude."""
    detection: dict[str, Any] = {f"keyword_{i}": [k] for i, k in enumerate(s.keywords, 1)}
    if s.any_of:
        detection["any_form"] = list(s.any_of)
    cond = " and ".join(detection)
    if s.exclude:
        detection["filter"] = list(s.exclude)
        cond += " and not filter"
    detection["condition"] = cond
    desc = f"{s.meaning}. Printed by {s.source}."
    if not s.alert:
        desc += " A building block of a correlation rule: on its own it is not an alert."
    return {"title": s.title, "id": rule_id(s.signal_id), "name": s.signal_id.replace("-", "_"),
            "status": "experimental", "description": desc, "author": AUTHOR,
            "references": [], "tags": _tags(mechanism, incident),
            "logsource": {"product": s.engine, "service": "server"},
            "detection": detection,
            "falsepositives": ["none known" if s.alert else "every matching line (not an alert on its own)"],
            "level": s.level}


def correlation_rule(c: Correlation, mechanism: str, incident: str | None = None) -> dict[str, Any]:
    return {"title": c.title, "id": rule_id(c.correlation_id), "name": c.correlation_id.replace("-", "_"),
            "status": "experimental", "description": c.meaning, "author": AUTHOR, "tags": _tags(mechanism, incident),
            "correlation": {"type": "temporal", "rules": [s.replace("-", "_") for s in c.signals],
                            "group-by": list(c.group_by), "timespan": c.timespan},
            "level": c.level}


def references_of(signals: list[LogSignal]) -> list[str]:
    return sorted({s.source for s in signals})
