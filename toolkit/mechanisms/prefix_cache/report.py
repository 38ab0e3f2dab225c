"""The prefix-cache mechanism's report part (hookspec: kvir.report.plugin.ReportPart)."""
from __future__ import annotations


class PrefixCacheReport:
    pass


PART = PrefixCacheReport()
