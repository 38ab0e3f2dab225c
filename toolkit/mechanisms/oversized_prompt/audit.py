"""The oversized-prompt mechanism's audit part (hookspec: kvir.audit.plugin.AuditPart)."""
from __future__ import annotations


class OversizedPromptAudit:
    pass


PART = OversizedPromptAudit()
