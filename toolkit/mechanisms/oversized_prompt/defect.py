"""What kvir knows of the oversized-prompt mechanism's engine defect: SGLang's build table (kvir.rules.builds,
read from the published wheels) says which builds transfer the over-long stub to decode and which fix it.
The report stage asks it through the mechanism's report part (kvir.report.defect.DefectKnowledge): a
defect the table matches on the case's start-up evidence, and where the table places a declared fix
differently. It applies only where the evidence is SGLang's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvir.report.defect import Defect
from kvir.rules.builds import TABLE as BUILDS


@dataclass(frozen=True)
class TableMatch:
    """SGLang prefill starts of the case whose build the table says transfers the over-long stub."""

    nodes: tuple[str, ...]
    builds: tuple[str, ...]
    evidence: tuple[str, ...]       # how each build was placed (the audit's build_evidence)


def fixed_evidence() -> str:
    """What the build table read in the wheels' code about the fix of the over-long stub."""
    t = BUILDS
    retire, door = t.over_long(t.first_fixed), t.over_long(t.first_door_reject)
    return (f"{t.first_fixed} is the first build that never transfers the over-long request ({retire.summary}; "
            f"{retire.evidence.file}: {retire.evidence.function}) and {t.first_door_reject} the first that "
            f"rejects it at the bootstrap door ({door.evidence.function}); every build read up to "
            f"{t.read[t.read.index(t.first_fixed) - 1]} transfers it.")


def table_match(configs: list[dict[str, Any]]) -> TableMatch | None:
    """The case's SGLang PD prefill starts with a pool below the context on a build the table says
    transfers the over-long stub (node_configs after the audit), or None."""
    hits = [c for c in configs if c.get("engine") == "sglang" and c.get("role") == "prefill"
            and c.get("holds_context") is False and c.get("stub_transferred") is True]
    if not hits:
        return None
    return TableMatch(tuple(sorted({str(c["node"]) for c in hits})), tuple(sorted({str(c["build"]) for c in hits})),
                      tuple(sorted({str(c.get("build_evidence") or "") for c in hits}))[:3])


def _from_table(m: TableMatch) -> Defect:
    t = BUILDS
    row = t.over_long_rows[0]
    return Defect(
        "build table",
        f"matched by kvir's SGLang build table (read from the published wheels, kvir/rules/builds.toml) on the "
        f"start-up evidence of {', '.join(m.nodes)}: build {', '.join(m.builds)} ({'; '.join(m.evidence)})",
        "sglang", "PyPI", t.vendor, t.repo,
        "sglang: a prompt that does not fit the prefill KV pool is served from another request's KV cache "
        "(prefill/decode disaggregation)",
        f"With prefill/decode disaggregation, a request of max_req_input_len tokens or more: {row.summary} "
        f"({row.evidence.file}: {row.evidence.function}).",
        row.first, t.first_fixed, None, "the code of the published wheels (kvir's SGLang build table)",
        (t.repo,), "CWE-226", "", f"In the published wheels, {fixed_evidence()}")


class SglangBuildTable:
    """kvir.report.defect.DefectKnowledge over SGLang's build table."""

    def match(self, configs: list[dict[str, Any]]) -> Defect | None:
        m = table_match(configs)
        return _from_table(m) if m is not None else None

    def note(self, package: str, fixed_version: str, fixed_source: str, engine: str,
             configs: list[dict[str, Any]]) -> str:
        sglang = engine == "sglang" or any(c.get("engine") == "sglang" for c in configs)
        if not sglang or package.lower() != "sglang" or fixed_version == BUILDS.first_fixed:
            return ""
        return (f"kvir's SGLang build table (read from the published wheels, applied because the evidence is "
                f"SGLang's) places the fix differently: {fixed_evidence()} This document uses {fixed_version}, "
                f"declared in incident.toml" + (f" ({fixed_source})" if fixed_source else "") + ".")


KNOWLEDGE = SglangBuildTable()
