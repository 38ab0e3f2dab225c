"""Findings as SARIF 2.1.0, so code-scanning tools (GitHub, GitLab, IDE viewers) show them.

Each finding is a result of its rule at the log line that is its evidence. A failed check is kind
"fail" with level error (critical, high), warning (medium) or note (low); a check the evidence cannot
decide is kind "open" (SARIF: "the tool was unable to determine whether the rule was satisfied") with
level "none", so an unknown is never shown as passed nor as failed. GitHub's numeric severity goes in
each rule's `security-severity` property.
"""
from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

from kvir.audit.rules import all_rules

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVEL = {"critical": "error", "high": "error", "medium": "warning", "low": "note"}
SECURITY_SEVERITY = {"critical": "9.5", "high": "8.0", "medium": "5.5", "low": "3.0"}


def _missing(v: Any) -> bool:
    if v is None:
        return True
    try:
        return bool(isinstance(v, float) and math.isnan(v)) or str(v) in ("NaT", "nan", "<NA>")
    except TypeError:
        return False


def _uri(path: str) -> tuple[str, str | None]:
    """(uri, uriBaseId): relative to the working folder when the file is under it, else a file: URI."""
    p = Path(path)
    try:
        rel = p.resolve().relative_to(Path.cwd().resolve())
        return rel.as_posix(), "%SRCROOT%"
    except ValueError:
        return p.resolve().as_uri(), None


def information_uri() -> str | None:
    """kvir's home page as the installed package states it (pyproject [project.urls] Homepage): the SARIF
    tool.driver.informationUri (SARIF2005). None when kvir runs without its package metadata."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        urls = metadata("kvir").get_all("Project-URL") or []
    except PackageNotFoundError:
        return None
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() == "homepage" and url.strip():
            return url.strip()
    return None


def _iso(ts: Any) -> str | None:
    if _missing(ts):
        return None
    return ts.isoformat().replace("+00:00", "Z") if hasattr(ts, "isoformat") else str(ts)


def to_sarif(result, rules=None) -> dict[str, Any]:
    """`rules`: the rules to describe (default: every registered mechanism's; kvir preflight adds its own)."""
    from kvir import __version__

    every = tuple(rules) if rules is not None else all_rules()   # a finding of any of them is described
    rule_index = {r.rule_id: i for i, r in enumerate(every)}
    rules = [{
        "id": r.rule_id,
        "name": r.name,
        "shortDescription": {"text": r.title},
        "fullDescription": {"text": r.help},
        "help": {"text": r.fix},
        "defaultConfiguration": {"level": LEVEL[r.severity]},
        "properties": {"security-severity": SECURITY_SEVERITY[r.severity],
                       "tags": ["security", "kv-cache", "configuration"]},
    } for r in every]

    artifacts: list[dict[str, Any]] = []
    artifact_index: dict[str, int] = {}
    for inp in result.inputs:
        uri, base = _uri(inp["path"])
        loc: dict[str, Any] = {"uri": uri}
        if base:
            loc["uriBaseId"] = base
        artifact_index[inp["path"]] = len(artifacts)
        artifacts.append({"location": loc, "length": int(inp["size_bytes"]), "hashes": {"sha-256": inp["sha256"]},
                          "mimeType": "text/plain"})

    results = []
    for f in result.findings.to_dict("records"):
        sev, status = f["severity"], f["status"]
        res: dict[str, Any] = {
            "ruleId": f["rule_id"],
            "ruleIndex": rule_index[f["rule_id"]],
            "kind": "fail" if status == "fail" else "open",
            "level": LEVEL[sev] if status == "fail" else "none",
            "message": {"text": f"{f['message']}. Fix: {f['fix']}" if status == "fail"
                        else f"Unknown: {f['message']}. {f['fix']}"},
        }
        if not _missing(f.get("evidence_file")):
            uri, base = _uri(f["evidence_file"])
            art: dict[str, Any] = {"uri": uri}
            if base:
                art["uriBaseId"] = base
            if f["evidence_file"] in artifact_index:
                art["index"] = artifact_index[f["evidence_file"]]
            phys: dict[str, Any] = {"artifactLocation": art}
            if not _missing(f.get("evidence_line")) and int(f["evidence_line"]) >= 1:
                phys["region"] = {"startLine": int(f["evidence_line"])}
            loc = {"physicalLocation": phys}
            if not _missing(f.get("node")):
                loc["logicalLocations"] = [{"name": str(f["node"]), "kind": "module"}]
            res["locations"] = [loc]
        key = "|".join(str(f.get(k)) for k in ("rule_id", "node", "ts", "evidence_file", "evidence_line"))
        res["partialFingerprints"] = {"kvirFinding/v1": hashlib.sha256(key.encode()).hexdigest()}
        props = {"severity": sev, "status": status}
        for k in ("node", "role", "engine", "version", "deployment", "related_node", "related_evidence"):
            if not _missing(f.get(k)):
                props[k] = str(f[k])
        if _iso(f.get("ts")):
            props["ts"] = _iso(f.get("ts"))
        if not _missing(f.get("is_current")):
            props["current_start"] = bool(f["is_current"])
        res["properties"] = props
        results.append(res)

    driver: dict[str, Any] = {"name": "kvir", "version": __version__, "semanticVersion": __version__, "rules": rules}
    if information_uri():
        driver["informationUri"] = information_uri()
    run: dict[str, Any] = {
        "tool": {"driver": driver},
        "invocations": [{"executionSuccessful": True}],
        "artifacts": artifacts,
        "results": results,
        "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().resolve().as_uri() + "/"}},
    }
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
