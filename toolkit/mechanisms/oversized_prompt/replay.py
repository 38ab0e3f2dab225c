"""The oversized-prompt mechanism's replay part (hookspec: kvir.replay.plugin.ReplayPart)."""
from __future__ import annotations


class OversizedPromptReplay:
    pass


PART = OversizedPromptReplay()
