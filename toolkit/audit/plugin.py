"""The audit stage's hookspec: what it needs of an exposure mechanism (kvir.spec.mechanism).

A mechanism's audit part (kvir.mechanisms.<m>.audit.PART) has every member below; registration checks
it. The audit stage reaches a mechanism only through `audit_part(name)` / `audit_parts()`, never by its name.

The audit runs in three steps, and a mechanism joins two of them:

    shared     start-up logs -> audit_lines -> node_configs (one row per node start) and each start's
               build (kvir.audit.start_builds); runtime_indicators; an empty `findings` (its columns:
               queries/audit/findings_table.sql)
    annotate   EVERY registered mechanism adds its own columns to node_configs (`start_columns`): what it
               judges each start on. node_configs therefore has the same columns whatever the incident's
               mechanism, so a case audited once serves any report.
    findings   the INCIDENT's mechanism alone inserts its rules' findings (one row per failed or
               undecidable check); another mechanism's rules add nothing (kvir preflight runs every
               mechanism's: a deployment is checked against every mechanism before it serves).

Beside the three steps: `signals` (the lines and counters kvir detect turns into rules) and `configuration`
(what a per-deployment VEX statement says of a start).
"""
from __future__ import annotations

from typing import Any, Protocol

import duckdb

from kvir.audit.rules import Rule
from kvir.audit.signals import Configuration, Signals
from kvir.core.sql import QueryLog
from kvir.spec.mechanism import mechanism, mechanisms


class AuditPart(Protocol):
    """What the audit stage calls on a mechanism."""

    rules: tuple[Rule, ...]          # its rules (ids unique across mechanisms; each .mechanism its name)
    start_columns: tuple[str, ...]   # the node_configs columns `annotate` adds (none: it adds none)
    signals: Signals                 # what the engines print and count when its path is taken (kvir detect)

    def annotate(self, con: duckdb.DuckDBPyConnection, log: QueryLog) -> None:
        """Add `start_columns` to node_configs and fill them, one value per start (NULL: unknown)."""

    def findings(self, con: duckdb.DuckDBPyConnection, params: Any, log: QueryLog) -> None:
        """Insert its findings into `findings` (its columns: queries/audit/findings_table.sql), judged with the
        incident's typed params of this mechanism (None: no spec says; its defaults, never assumed safe)."""

    def start_settings(self, start: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
        """(label, value) of what `kvir audit`'s table shows of one node start (a node_configs row) for this
        mechanism; True / False / None are shown on / off / ?."""

    def configuration(self, start: dict[str, Any]) -> Configuration:
        """Whether one node start (a node_configs row) runs the configuration in which this mechanism's defect
        can be triggered (a VEX statement's known_affected vs not_affected, with its justification)."""


def audit_part(name: str | None) -> AuditPart:
    """The audit part of the mechanism `name` (None: the default mechanism)."""
    return mechanism(name).part("audit")


def audit_parts() -> dict[str, AuditPart]:
    """Every registered mechanism's audit part, by name, in registration order."""
    return {m.name: m.part("audit") for m in mechanisms()}
