"""The prefix-cache mechanism's audit part (hookspec: kvir.audit.plugin.AuditPart)."""
from __future__ import annotations


class PrefixCacheAudit:
    pass


PART = PrefixCacheAudit()
