"""The probe stage's hookspec: what it needs of an exposure mechanism (kvir.spec.mechanism).

A mechanism's probe part (kvir.mechanisms.<m>.probe.PART) has every member below; registration checks
it. The probe stage reaches a mechanism only through `probe_part(name)`, never by its name.
"""
from __future__ import annotations

from typing import Protocol

from kvir.spec.mechanism import mechanism


class ProbePart(Protocol):
    """What the probe stage calls on the case's mechanism."""


def probe_part(name: str | None) -> ProbePart:
    """The probe part of the mechanism `name` (None: the default mechanism)."""
    return mechanism(name).part("probe")
