"""The prefix-cache mechanism's probe part (hookspec: kvir.probe.plugin.ProbePart)."""
from __future__ import annotations


class PrefixCacheProbe:
    pass


PART = PrefixCacheProbe()
