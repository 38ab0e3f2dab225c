"""The triage stage's hookspec: what it needs of an exposure mechanism (kvir.spec.mechanism).

A mechanism's triage part (kvir.mechanisms.<m>.triage.PART) has every member below; registration checks
it. The triage stage reaches a mechanism only through `triage_part(name)`, never by its name.

What is shared and what is the mechanism's (kvir.triage.run runs them in this order, each query found by
name in the mechanism's queries/mechanisms/<folder>/ first, else in queries/: kvir.core.sql.load):

    part.queries(pool_in_effect)  its questions over the requests: they make triage_hits (one row per judged
                                  request, with `category`), then triage/listed (shared: the columns every
                                  report reads, written once), affected, excluded, accounts, nodes and its
                                  own tables; on Spark too when part.spark
    triage/summary                the headline (shared: kvir.triage.summary.TriageSummary)
    part.summary_queries          its own counts, added to triage_summary
    part.summary(...)             its typed part of summary.json, under the key Mechanism.folder
    part.present(...)             what `kvir triage` shows of it, between the shared counts
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kvir.spec.mechanism import mechanism

if TYPE_CHECKING:
    from kvir.case.store import Case
    from kvir.rules.engines import EngineChoice
    from kvir.spec.model import IncidentSpec


class TriageRule(Protocol):
    """A mechanism's rule bound to the case's serving engine: when a served response counts as exposed."""

    def describe(self) -> str:
        """The rule in words, with its formula: the `rule` column of affected, the summary, the manifest."""

    def other(self) -> str | None:
        """The rule counted beside it, in words (triage_summary's other_rule_adds / drops); None: none."""

    def query_params(self) -> dict[str, Any]:
        """The values its own queries bind, beside the shared ones (models, window, rule_text, listed)."""


@dataclass(frozen=True)
class Table:
    """A table of a mechanism's own for the terminal (kvir.cli.present renders it)."""

    title: str
    columns: tuple[str | tuple[str, str], ...]      # a name, or (name, "right")
    rows: list[list[Any]]
    rest: str = ""                                  # the file holding every row, when only the first are shown


@dataclass(frozen=True)
class Shown:
    """What `kvir triage` shows of a mechanism: its rows of the headline table (label, value), after the
    counts every mechanism has and before the times and joins, then its own tables."""

    rows: list[tuple[str, Any]]
    tables: list[Table] = field(default_factory=list)


class TriagePart(Protocol):
    """What the triage stage calls on the case's mechanism."""

    spark: bool                  # its queries run on Spark (kvir.triage.transpile) with --engine spark
    listed: tuple[str, ...]      # the triage_hits categories that `affected` (and `excluded`) list
    summary_queries: tuple[str, ...]   # run after triage/summary: its own counts, added to triage_summary
    exports: tuple[str, ...]     # its own case tables, written as <table>.csv beside the shared ones

    def queries(self, pool_in_effect: bool) -> tuple[str, ...]:
        """Its questions over the requests, in order (see the module docstring); `pool_in_effect`: the
        start-up logs gave each node's pool over time (node_configs is in the case)."""

    def rule(self, spec: IncidentSpec, engine: EngineChoice) -> TriageRule:
        """The spec's rule bound to the serving engine; a rule that needs an engine the case cannot name
        is refused here (kvir.core.errors.InputError naming the spec key)."""

    def summary(self, case: Case, rule: Any, pool_in_effect: bool) -> Any:
        """Its typed part of the summary (a dataclass, read from its tables once the queries ran)."""

    def present(self, summary: dict[str, Any], own: Any) -> Shown:
        """What `kvir triage` shows of it, from the summary (summary.json's) and its own typed part."""


def triage_part(name: str | None) -> TriagePart:
    """The triage part of the mechanism `name` (None: the default mechanism)."""
    return mechanism(name).part("triage")
