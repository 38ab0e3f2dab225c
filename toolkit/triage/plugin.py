"""The triage stage's hookspec: what it needs of an exposure mechanism (kvir.spec.mechanism).

A mechanism's triage part (kvir.mechanisms.<m>.triage.PART) has every member below; registration checks
it. The triage stage reaches a mechanism only through `triage_part(name)`, never by its name.
"""
from __future__ import annotations

from typing import Protocol

from kvir.spec.mechanism import mechanism


class TriagePart(Protocol):
    """What the triage stage calls on the case's mechanism."""


def triage_part(name: str | None) -> TriagePart:
    """The triage part of the mechanism `name` (None: the default mechanism)."""
    return mechanism(name).part("triage")
