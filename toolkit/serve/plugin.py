"""The serve stage's hookspec: what it needs of an exposure mechanism (kvir.spec.mechanism).

A mechanism's serve part (kvir.mechanisms.<m>.serve.PART) has every member below; registration checks
it. The serve stage reaches a mechanism only through `serve_part(name)`, never by its name.
"""
from __future__ import annotations

from typing import Protocol

from kvir.spec.mechanism import mechanism


class ServePart(Protocol):
    """What the serve stage calls on the case's mechanism."""


def serve_part(name: str | None) -> ServePart:
    """The serve part of the mechanism `name` (None: the default mechanism)."""
    return mechanism(name).part("serve")
