"""The oversized-prompt mechanism's replay part (hookspec: kvir.replay.plugin.ReplayPart): the affected
responses re-run on the paged-KV prefill/decode path of the SGLang builds that matter, over a model of each
decode node's history (replay_run.py, which imports torch: loaded only when a replay runs)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvir.case.store import Case
    from kvir.replay.plugin import ReplayOptions, ReplayOutput
    from kvir.rules.trigger import Trigger


class OversizedPromptReplay:
    basis_legend = ("(ran): the start-up evidence names the build the response's prefill node ran; (assumed): "
                    "it does not")

    def replay(self, case: "Case", params: "Trigger", options: "ReplayOptions") -> "ReplayOutput":
        from kvir.mechanisms.oversized_prompt.replay_run import replay

        return replay(case, params, options)


PART = OversizedPromptReplay()
