"""The oversized-prompt mechanism's serve part (hookspec: kvir.serve.plugin.ServePart)."""
from __future__ import annotations


class OversizedPromptServe:
    pass


PART = OversizedPromptServe()
