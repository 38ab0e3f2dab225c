"""The prefix-cache mechanism's replay part (hookspec: kvir.replay.plugin.ReplayPart)."""
from __future__ import annotations


class PrefixCacheReplay:
    pass


PART = PrefixCacheReplay()
