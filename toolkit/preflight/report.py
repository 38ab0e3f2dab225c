"""kvir preflight's machine outputs: SARIF 2.1.0 (the audit's writer, every rule preflight runs described: GitHub
code scanning shows each finding at the deployment file's line) and JUnit XML for CI (one test suite per node,
one test case per rule: a failure for each failed finding at or above the threshold, a skip for a rule the
evidence cannot decide, never a pass for it).
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from kvir.audit.rules import SEVERITY_RANK

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def to_sarif(result) -> dict[str, Any]:
    from kvir.audit.sarif import to_sarif as audit_sarif

    doc = audit_sarif(result, rules=result.rules())
    doc["runs"][0]["automationDetails"] = {"id": "kvir-preflight/"}
    return doc


def _text(value: Any) -> str:
    return _NOT_XML.sub("?", str(value))


def _case(suite: ET.Element, node: str, rule, rows: list[dict], threshold: str) -> tuple[int, int]:
    case = ET.SubElement(suite, "testcase", classname=_text(f"kvir.preflight.{node}"),
                         name=_text(f"{rule.rule_id} {rule.name}"), time="0")
    failing = [r for r in rows if r["status"] == "fail" and SEVERITY_RANK[r["severity"]] >= SEVERITY_RANK[threshold]]
    below = [r for r in rows if r["status"] == "fail" and r not in failing]
    unknown = [r for r in rows if r["status"] == "unknown"]
    if failing:
        worst = max(failing, key=lambda r: SEVERITY_RANK[r["severity"]])
        el = ET.SubElement(case, "failure", type=worst["severity"], message=_text(worst["message"])[:1000])
        el.text = _text("\n".join(f"{r['severity']}: {r['message']} ({r['evidence_file']}:{r['evidence_line']}). "
                                  f"Fix: {r['fix']}" for r in failing))
        return 1, 0
    if unknown and not below:
        ET.SubElement(case, "skipped", message=_text(f"cannot decide: {unknown[0]['message']}")[:1000])
        return 0, 1
    if below or unknown:
        out = ET.SubElement(case, "system-out")
        out.text = _text("\n".join(f"{r['status']} {r['severity']} (below --fail-on {threshold}): {r['message']}"
                                   for r in below + unknown))
    return 0, 0


def to_junit(result, threshold: str) -> str:
    """JUnit XML: per node a test suite, per rule a test case."""
    rules = result.rules()
    by: dict[tuple[str, str], list[dict]] = {}
    for r in result.findings.to_dict("records"):
        by.setdefault((str(r["node"]), r["rule_id"]), []).append(r)
    nodes = sorted(set(result.nodes) | {n for n, _ in by})
    root = ET.Element("testsuites", name="kvir preflight")
    totals = [0, 0, 0]
    for node in nodes:
        suite = ET.SubElement(root, "testsuite", name=_text(node), errors="0")
        fails = skips = 0
        for rule in rules:
            f, s = _case(suite, node, rule, by.get((node, rule.rule_id), []), threshold)
            fails, skips = fails + f, skips + s
        suite.set("tests", str(len(rules)))
        suite.set("failures", str(fails))
        suite.set("skipped", str(skips))
        for i, n in enumerate((len(rules), fails, skips)):
            totals[i] += n
    root.set("tests", str(totals[0]))
    root.set("failures", str(totals[1]))
    root.set("skipped", str(totals[2]))
    root.set("errors", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
