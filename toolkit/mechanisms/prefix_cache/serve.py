"""The prefix-cache mechanism's serve part (hookspec: kvir.serve.plugin.ServePart)."""
from __future__ import annotations


class PrefixCacheServe:
    pass


PART = PrefixCacheServe()
