"""The engine defect an advisory describes: declared in incident.toml's [defect], or a defect that kvir's
knowledge of the case's mechanism (its report part's DefectKnowledge, e.g. the SGLang build table read from
the wheels) matches on the case's start-up evidence, said as such. Without either there is no engine
advisory: `Defect` is None and the index says why and what to add.

    defect_for(raw_spec_defect, node_configs_rows, engine, knowledge) -> (Defect | None, why_not)
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any, Protocol

from kvir.core.errors import KvirError

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


class DefectKnowledge(Protocol):
    """What kvir ships about one mechanism's engine defects (a mechanism without any has None)."""

    def match(self, configs: list[dict[str, Any]]) -> Defect | None:
        """The defect kvir's tables match on the case's node starts (node_configs rows), or None."""

    def note(self, package: str, fixed_version: str, fixed_source: str, engine: str,
             configs: list[dict[str, Any]]) -> str:
        """Where kvir's tables, applied because the evidence is that engine's, place a declared fix differently
        ('' when they do not apply or agree)."""


def _from_spec(raw: dict[str, Any], engine: str, configs: list[dict[str, Any]],
               knowledge: DefectKnowledge | None) -> Defect:
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
    note = knowledge.note(package, fixed, text("fixed_source"), engine, configs) if knowledge else ""
    return Defect("spec", "declared in incident.toml [defect]", package, text("ecosystem", "PyPI"), text("vendor"),
                  repo, text("title") or f"{package}: engine defect behind incident", text("description"),
                  text("introduced_version", "0"), fixed, date, text("fixed_source"), tuple(refs), cwe,
                  text("workaround"), note)


def defect_for(raw: dict[str, Any], configs: list[dict[str, Any]], engine: str,
               knowledge: DefectKnowledge | None) -> tuple[Defect | None, str]:
    """(the defect an engine advisory describes, or None with the reason there is none). `configs`: the
    case's node starts (node_configs); `engine`: the serving engine triage recorded; `knowledge`: the case's
    mechanism's (None: it has none, and its advisory comes from [defect] alone)."""
    if knowledge is None:
        configs = []
    if raw:
        return _from_spec(raw, engine, configs, knowledge), ""
    match = knowledge.match(configs) if knowledge else None
    if match is not None:
        return match, ""
    why = ("no engine advisory: incident.toml declares no engine defect ([defect]), and "
           + ("the case's start-up evidence matches no defect kvir knows" if configs else
              "the case holds no start-up evidence (kvir audit) that matches a defect kvir knows")
           + f"; to publish one, {HOW_TO_DECLARE}")
    return None, why
