"""The replay stage's hookspec: what it needs of an exposure mechanism (kvir.spec.mechanism).

A mechanism's replay part (kvir.mechanisms.<m>.replay.PART) has every member below; registration checks
it. The replay stage reaches a mechanism only through `replay_part(name)`, never by its name.
"""
from __future__ import annotations

from typing import Protocol

from kvir.spec.mechanism import mechanism


class ReplayPart(Protocol):
    """What the replay stage calls on the case's mechanism."""


def replay_part(name: str | None) -> ReplayPart:
    """The replay part of the mechanism `name` (None: the default mechanism)."""
    return mechanism(name).part("replay")
