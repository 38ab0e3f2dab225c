"""A probe run as SARIF 2.1.0: one result per finding (kind fail) and one per check carrying its verdict
(kind pass: not exposed; fail: exposed; open: inconclusive, "unable to determine"). The location is the
endpoint route the evidence came from; request ids, lengths and hashes go in the properties."""
from __future__ import annotations

from typing import Any

from kvir.probe.rules import EXPOSED, NOT_EXPOSED, check, checks, rule, rules

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVEL = {"critical": "error", "high": "error", "medium": "warning", "low": "note"}
SECURITY_SEVERITY = {"critical": "9.5", "high": "8.0", "medium": "5.5", "low": "3.0"}


def to_sarif(r) -> dict[str, Any]:
    """`r`: a kvir.probe.result.ProbeResult."""
    from kvir import __version__

    described = [{"id": x.rule_id, "name": x.name, "shortDescription": {"text": x.title},
                  "fullDescription": {"text": x.help}, "help": {"text": x.help},
                  "defaultConfiguration": {"level": LEVEL[x.severity]},
                  "properties": {"security-severity": SECURITY_SEVERITY[x.severity],
                                 "tags": ["security", "kv-cache", "probe"]}}
                 for x in rules()]
    described += [{"id": c.rule_id, "name": f"{c.name}-check", "shortDescription": {"text": c.title},
                   "defaultConfiguration": {"level": "error"}, "properties": {"tags": ["security", "kv-cache", "probe"]}}
                  for c in checks()]
    index = {x["id"]: i for i, x in enumerate(described)}
    endpoint = r.options.get("endpoint", "")
    path = "/v1/chat/completions" if r.options.get("api") == "chat" else "/v1/completions"

    def loc(route: str) -> list[dict]:
        return [{"physicalLocation": {"artifactLocation": {"uri": endpoint.rstrip("/") + route}}}]

    results: list[dict[str, Any]] = []
    for c in r.checks:
        kind = "fail" if c.verdict == EXPOSED else "pass" if c.verdict == NOT_EXPOSED else "open"
        rule_id = check(c.name).rule_id
        results.append({"ruleId": rule_id, "ruleIndex": index[rule_id], "kind": kind,
                        "level": "error" if kind == "fail" else "none",
                        "message": {"text": f"{c.name} check: {c.verdict}: {c.reason}"}, "locations": loc(path),
                        "properties": {"verdict": c.verdict, "stats": c.stats}})
    for f in r.findings:
        results.append({"ruleId": f.rule_id, "ruleIndex": index[f.rule_id], "kind": "fail",
                        "level": LEVEL[rule(f.rule_id).severity], "message": {"text": f.message},
                        "locations": loc("/get_server_info" if f.rule_id == "KVIR-P006" else path),
                        "partialFingerprints": {"kvirProbe/v1": f"{f.rule_id}:{f.check}:{':'.join(f.request_ids[:1])}"},
                        "properties": {"check": f.check, "severity": f.severity, "requestIds": f.request_ids,
                                       "evidence": f.evidence}})
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "kvir probe", "semanticVersion": __version__, "version": __version__,
                            "rules": described}},
        "invocations": [{"executionSuccessful": not r.dry_run, "startTimeUtc": r.started_at, "endTimeUtc": r.ended_at,
                         "properties": {"requestsSent": r.sent, "wallSeconds": round(r.wall_s, 3)}}],
        "results": results,
        "properties": {"verdict": r.verdict, "reason": r.reason, "runId": r.run_id, "endpoint": endpoint},
    }
    if not r.started_at:
        run["invocations"][0].pop("startTimeUtc")
        run["invocations"][0].pop("endTimeUtc")
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
