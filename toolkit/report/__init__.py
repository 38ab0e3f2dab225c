"""kvir.report: the incident's documents, rendered from the case alone.

    result = kvir.report("case/")                    # every artifact, Markdown and HTML
    result = kvir.report(case, only=["timeline"], format="md")
    result.index                                     # reports/index.html
    result.validations                               # CSAF / OSV / CVE validation results
    result.model                                     # the incident model every document projects

Modules: artifacts (what can be rendered, from which templates), model and records (the incident model),
build (the model from the case) with read (the report queries), plugin (what the stage asks of the case's
mechanism: ReportPart) and story (the sentences every document takes from the mechanism: Story), defect
(the engine defect an advisory describes), timeline (hand-entered and derived events merged), renderer
(one method per artifact) with markup (Jinja, escaping) and tables (CSV, JSONL), machine (CSAF / OSV / CVE
values), validate, figures, manifest, render (report()).
"""
from __future__ import annotations

from kvir.case.spec_tables import ensure_spec_facts, store_spec_facts
from kvir.report.artifacts import ARTIFACTS, FORMATS
from kvir.report.build import build_model
from kvir.report.model import IncidentModel
from kvir.report.render import ReportResult, report

__all__ = ["ARTIFACTS", "FORMATS", "IncidentModel", "ReportResult", "build_model", "ensure_spec_facts", "report",
           "store_spec_facts"]
