"""The prefix-cache mechanism's triage part (hookspec: kvir.triage.plugin.TriagePart)."""
from __future__ import annotations


class PrefixCacheTriage:
    pass


PART = PrefixCacheTriage()
