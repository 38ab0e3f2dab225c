"""Per deployment (node) and engine defect, the VEX status of its current start, and why.

    known_affected       the node runs an affected build of the defect's package, in the configuration that
                         triggers the defect (the mechanism's audit part says: AuditPart.configuration)
    known_not_affected   another package (component_not_present), a build before the defect
                         (vulnerable_code_not_present), or an affected build outside the triggering configuration
                         (the mechanism's justification, e.g. vulnerable_code_not_in_execute_path)
    fixed                every build the evidence allows is the fixed version or later
    under_investigation  the build, or whether the configuration triggers it, is not in the evidence

The defects are the incident's [defect] or what a mechanism's defect knowledge (its report part) matches on the
evidence: never invented (kvir.vex.defects).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvir.rules.builds import version_key

AFFECTED, NOT_AFFECTED, FIXED, INVESTIGATING = "known_affected", "known_not_affected", "fixed", "under_investigation"


@dataclass(frozen=True)
class Statement:
    node: str
    status: str
    version: str | None              # the build the statement is about (None: not known)
    because: str                     # the evidence, in words
    justification: str | None = None  # for known_not_affected: a CSAF/OpenVEX justification label
    action: str = ""                 # for known_affected: what to do
    evidence: str = ""               # file:line of the start


def _package_of(engine: str | None) -> str | None:
    return {"sglang": "sglang", "vllm": "vllm"}.get(engine or "")


def _range(start: dict[str, Any]) -> tuple[str | None, str | None]:
    lo = start.get("build_lo") or start.get("version")
    hi = start.get("build_hi") or start.get("version")
    if start.get("build_open"):
        hi = None
    return (str(lo) if _ok(lo) else None), (str(hi) if _ok(hi) else None)


def _ok(v: Any) -> bool:
    return isinstance(v, str) and version_key(v) is not None


def statement(start: dict[str, Any], defect, configuration) -> Statement:
    """The VEX statement of one node start for `defect` (kvir.report.defect.Defect); `configuration` is the
    defect's mechanism's audit part's answer for this start (kvir.audit.signals.Configuration)."""
    node, where = str(start["node"]), f"{start.get('evidence_file')}:{start.get('evidence_line')}"
    pkg = _package_of(start.get("engine"))
    if pkg is not None and pkg != defect.package.lower():
        return Statement(node, NOT_AFFECTED, None, f"the node runs {start.get('engine')} "
                         f"{start.get('version') or ''}".rstrip() + f", not {defect.package}", "component_not_present",
                         evidence=where)
    lo, hi = _range(start)
    fixed, intro = version_key(defect.fixed_version), version_key(defect.introduced_version or "0")
    build = str(start.get("build") or start.get("version") or "unknown")
    basis = start.get("build_evidence") or start.get("version_source") or "no version in the evidence"
    if pkg is None or lo is None:
        return Statement(node, INVESTIGATING, None, f"the {defect.package} build is not known ({basis})", evidence=where)
    if version_key(lo) >= fixed:
        return Statement(node, FIXED, build, f"{defect.package} {build} ({basis}) is at or after the fix "
                         f"{defect.fixed_version}", evidence=where)
    if hi is None or version_key(hi) >= fixed:
        return Statement(node, INVESTIGATING, build, f"{defect.package} builds {build} ({basis}) span the fix "
                         f"{defect.fixed_version}", evidence=where)
    if intro is not None and version_key(hi) < intro and defect.source != "spec":
        return Statement(node, INVESTIGATING, build, f"{defect.package} {build} ({basis}) is older than every build "
                         f"kvir's table read (from {defect.introduced_version})", evidence=where)
    if intro is not None and version_key(hi) < intro:
        return Statement(node, NOT_AFFECTED, build, f"{defect.package} {build} ({basis}) predates the defect "
                         f"(introduced in {defect.introduced_version})", "vulnerable_code_not_present", evidence=where)
    if configuration.runs is False:
        return Statement(node, NOT_AFFECTED, build, f"{defect.package} {build} ({basis}) is affected, but "
                         f"{configuration.because}", configuration.justification or "vulnerable_code_not_in_execute_path",
                         evidence=where)
    if configuration.runs is None:
        return Statement(node, INVESTIGATING, build, f"{defect.package} {build} ({basis}) is affected; "
                         f"{configuration.because}", evidence=where)
    action = (f"Upgrade {defect.package} on this node to {defect.fixed_version} or later"
              + (f"; until then: {defect.workaround}" if defect.workaround else "") + ".")
    return Statement(node, AFFECTED, build, f"{defect.package} {build} ({basis}), {configuration.because}",
                     action=action, evidence=where)
