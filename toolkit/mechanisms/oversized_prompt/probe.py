"""The oversized-prompt mechanism's probe part (hookspec: kvir.probe.plugin.ProbePart)."""
from __future__ import annotations


class OversizedPromptProbe:
    pass


PART = OversizedPromptProbe()
