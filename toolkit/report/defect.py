"""The engine defect an advisory describes: declared in incident.toml's [defect], or a defect kvir's SGLang
build table (kvir.rules.builds, read from the wheels) matches on the case's start-up evidence, said as
such. Without either there is no engine advisory: `Defect` is None and the index says why and what to add.

    defect_for(raw_spec_defect, node_configs_rows) -> (Defect | None, why_not)
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from kvir.core.errors import KvirError
from kvir.rules.builds import TABLE as BUILDS

# CWE ids kvir may cite, with their catalogue names (CSAF mandatory test 6.1.11 checks the name).
CWE_NAMES = {
    "CWE-488": "Exposure of Data Element to Wrong Session",
    "CWE-226": "Sensitive Information in Resource Not Removed Before Reuse",
    "CWE-200": "Exposure of Sensitive Information to an Unauthorized Actor",
    "CWE-362": "Concurrent Execution using Shared Resource with Improper Synchronization ('Race Condition')",
}
HOW_TO_DECLARE = ("add a [defect] table to incident.toml (package, affected and fixed versions, references, CWE, "
                  "description; `kvir init` shows it) and render again")


@dataclass(frozen=True)
class Defect:
    source: str                     # "spec" (incident.toml [defect]) or "build table"
    how: str                        # the sentence that says how kvir knows it
    package: str
    ecosystem: str
    vendor: str
    repo: str
    title: str
    description: str
    introduced_version: str
    fixed_version: str
    fixed_release_date: dt.date | None
    fixed_source: str
    references: tuple[str, ...]
    cwe: str
    workaround: str
    code_note: str = ""             # the build table's reading where it differs from a declared fix

    @property
    def cwe_name(self) -> str:
        return CWE_NAMES[self.cwe]

    @property
    def affected_text(self) -> str:
        return ("all versions" if self.introduced_version == "0" else f">= {self.introduced_version}") + \
            f" before {self.fixed_version}"


def _from_spec(raw: dict[str, Any], sglang_evidence: bool) -> Defect:
    def err(key: str, msg: str) -> KvirError:
        return KvirError(msg, key=f"defect.{key}")

    def text(key: str, default: str = "") -> str:
        v = raw.get(key, default)
        if not isinstance(v, str):
            raise err(key, f"expected a string, got {v!r}")
        return v.strip()

    for key in ("package", "fixed_version", "description"):
        if not text(key):
            raise err(key, "required when [defect] is given: the advisory cannot be written without it")
    cwe = text("cwe", "CWE-226")
    if cwe not in CWE_NAMES:
        raise err("cwe", f"expected one of {', '.join(CWE_NAMES)}")
    refs = raw.get("references", [])
    if isinstance(refs, str):
        refs = [refs]
    if not isinstance(refs, list) or not all(isinstance(r, str) and re.match(r"^https?://\S+$", r) for r in refs):
        raise err("references", "expected a list of http(s) URLs")
    repo = text("repo")
    if repo and not re.match(r"^https?://\S+$", repo):
        raise err("repo", "expected an http(s) URL")
    date = raw.get("fixed_release_date")
    if date is not None:
        try:
            date = dt.date.fromisoformat(str(date)[:10])
        except ValueError:
            raise err("fixed_release_date", f"expected a date like 2026-02-01, got {date!r}") from None
    package = text("package")
    fixed = text("fixed_version")
    note = ""
    if sglang_evidence and package.lower() == "sglang" and fixed != BUILDS.first_fixed:
        note = (f"kvir's SGLang build table (read from the published wheels, applied because the evidence is "
                f"SGLang's) places the fix differently: {fixed_evidence()} This document uses {fixed}, declared in "
                f"incident.toml"
                + (f" ({text('fixed_source')})" if text("fixed_source") else "") + ".")
    return Defect("spec", "declared in incident.toml [defect]", package, text("ecosystem", "PyPI"), text("vendor"),
                  repo, text("title") or f"{package}: engine defect behind incident", text("description"),
                  text("introduced_version", "0"), fixed, date, text("fixed_source"), tuple(refs), cwe,
                  text("workaround"), note)


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


def defect_for(raw: dict[str, Any], configs: list[dict[str, Any]], engine: str = "unknown", *,
               mechanism: str = "oversized-prompt") -> tuple[Defect | None, str]:
    """(the defect an engine advisory describes, or None with the reason there is none). `configs`: the
    case's node starts (node_configs); `engine`: the serving engine triage recorded. The SGLang build table
    knows the oversized-prompt defect only: another mechanism's advisory comes from [defect] alone."""
    if mechanism != "oversized-prompt":
        configs = []
    match = table_match(configs)
    if raw:
        sglang = mechanism == "oversized-prompt" and (engine == "sglang" or any(c.get("engine") == "sglang" for c in configs))
        return _from_spec(raw, sglang), ""
    if match is not None:
        return _from_table(match), ""
    why = ("no engine advisory: incident.toml declares no engine defect ([defect]), and "
           + ("the case's start-up evidence matches no defect kvir knows" if configs else
              "the case holds no start-up evidence (kvir audit) that matches a defect kvir knows")
           + f"; to publish one, {HOW_TO_DECLARE}")
    return None, why
