"""The oversized-prompt mechanism's report part (hookspec: kvir.report.plugin.ReportPart)."""
from __future__ import annotations


class OversizedPromptReport:
    pass


PART = OversizedPromptReport()
