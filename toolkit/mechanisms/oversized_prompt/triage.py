"""The oversized-prompt mechanism's triage part (hookspec: kvir.triage.plugin.TriagePart)."""
from __future__ import annotations


class OversizedPromptTriage:
    pass


PART = OversizedPromptTriage()
