"""kvir.report: the incident's documents, rendered from the case alone.

    result = kvir.report("case/")                    # every artifact, Markdown and HTML
    result = kvir.report(case, only=["timeline"], format="md")
    result.index                                     # reports/index.html
    result.validations                               # CSAF / OSV / CVE validation results
    result.model                                     # the incident model every document projects

See kvir.report.render for the artifact list, kvir.report.model for the model and
kvir.report.timeline for how hand-entered and derived events are merged.
"""
from __future__ import annotations

from kvir.report.model import IncidentModel, build_model
from kvir.report.render import ARTIFACTS, FORMATS, ReportResult, report
from kvir.case.spec_tables import ensure_spec_facts, store_spec_facts

__all__ = ["ARTIFACTS", "FORMATS", "IncidentModel", "ReportResult", "build_model", "ensure_spec_facts", "report",
           "store_spec_facts"]

