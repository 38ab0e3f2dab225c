"""The audit stage's hookspec: what it needs of an exposure mechanism (kvir.spec.mechanism).

A mechanism's audit part (kvir.mechanisms.<m>.audit.PART) has every member below; registration checks
it. The audit stage reaches a mechanism only through `audit_part(name)`, never by its name.
"""
from __future__ import annotations

from typing import Protocol

from kvir.spec.mechanism import mechanism


class AuditPart(Protocol):
    """What the audit stage calls on the case's mechanism."""


def audit_part(name: str | None) -> AuditPart:
    """The audit part of the mechanism `name` (None: the default mechanism)."""
    return mechanism(name).part("audit")
