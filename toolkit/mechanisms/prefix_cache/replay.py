"""The prefix-cache mechanism's replay part (hookspec: kvir.replay.plugin.ReplayPart): the instance's logged
requests re-run through a block cache keyed as vLLM keys its blocks, salted and unsalted, and whose blocks
each affected response hit (replay_run.py, loaded only when a replay runs)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvir.case.store import Case
    from kvir.mechanisms.prefix_cache.spec import PrefixCacheParams
    from kvir.replay.plugin import ReplayOptions, ReplayOutput


class PrefixCacheReplay:
    basis_legend = "(ran): the replay's cached tokens equal the logged ones under this keying; (assumed): they do not"

    def replay(self, case: "Case", params: "PrefixCacheParams", options: "ReplayOptions") -> "ReplayOutput":
        from kvir.mechanisms.prefix_cache.replay_run import replay

        return replay(case, params, options)


PART = PrefixCacheReplay()
