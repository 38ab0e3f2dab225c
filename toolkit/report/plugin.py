"""The report stage's hookspec: what it needs of an exposure mechanism (kvir.spec.mechanism).

A mechanism's report part (kvir.mechanisms.<m>.report.PART) has every member below; registration checks
it. The report stage reaches a mechanism only through `report_part(name)`, never by its name.
"""
from __future__ import annotations

from typing import Protocol

from kvir.spec.mechanism import mechanism


class ReportPart(Protocol):
    """What the report stage calls on the case's mechanism."""


def report_part(name: str | None) -> ReportPart:
    """The report part of the mechanism `name` (None: the default mechanism)."""
    return mechanism(name).part("report")
