"""The typed results of a triage: its options and its headline counts.

`TriageSummary` is the one row of the case table triage_summary (queries/triage/summary.sql), typed: what
`kvir triage` prints, what summary.json holds and what every report states (kvir.report reads it back with
`TriageSummary.from_case`, never restating a count). `TriageOptions` gathers the settings of one triage
(the keyword arguments of kvir.triage) so the CLI and notebooks pass one typed value.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, fields
from typing import Any

# the columns of triage_summary the documents state (queries/report/headline.sql reads them)
COUNT_COLUMNS = ("requests_total", "in_scope", "affected", "affected_accounts", "customer_accounts",
                 "labelled_accounts", "affected_customer", "affected_labelled", "affected_unknown_account",
                 "excluded", "rejected", "failed", "aborted", "undecidable", "other_rule_adds", "other_rule_drops",
                 "affected_with_conflicts", "first_affected", "last_affected", "prefill_nodes", "decode_nodes")
_TIMES = ("first_affected", "last_affected")


@dataclass(frozen=True)
class TriageOptions:
    """How to read the inputs and run the questions (kvir.triage's keyword arguments)."""

    format: str = "auto"
    source_tz: str | None = None
    served_model: str | None = None
    year: int | None = None
    max_bad_lines: int | None = None
    keep_raw: bool = False
    hash: str = "auto"
    progress: bool = False
    memory_limit: str | None = None
    threads: int | None = None
    startup: tuple[str, ...] = ()
    inventory: str | None = None
    join_tolerance_s: float | None = None
    max_line_bytes: int | None = None
    query_engine: str = "duckdb"      # duckdb or spark: what runs the queries (not the serving engine)
    spark_master: str | None = None
    spark_conf: dict[str, str] | None = None

    @classmethod
    def of(cls, **kw: Any) -> "TriageOptions":
        names = {f.name for f in fields(cls)}
        bad = sorted(set(kw) - names)
        if bad:
            raise TypeError(f"unknown triage option(s): {', '.join(bad)}")
        if kw.get("startup") is not None:
            kw["startup"] = tuple(str(p) for p in kw["startup"])
        else:
            kw.pop("startup", None)
        if kw.get("inventory") is not None:
            kw["inventory"] = str(kw["inventory"])
        return cls(**kw)


@dataclass(frozen=True)
class TriageSummary:
    """The headline counts, as `kvir triage` printed them (table triage_summary)."""

    requests_total: int
    in_scope: int | None            # None: not counted (columnar input read in place)
    affected: int
    affected_accounts: int          # distinct known accounts: customers + labelled accounts
    customer_accounts: int          # affected accounts that incident.toml does not label
    labelled_accounts: int          # accounts incident.toml labels (a researcher's, the provider's tests)
    affected_customer: int          # responses to customer accounts
    affected_labelled: int          # responses to labelled accounts
    affected_unknown_account: int   # responses whose account is unknown (engine logs only)
    excluded: int
    rejected: int
    failed: int
    aborted: int
    undecidable: int
    other_rule_adds: int
    other_rule_drops: int
    affected_with_conflicts: int
    first_affected: dt.datetime | None
    last_affected: dt.datetime | None
    prefill_nodes: int
    decode_nodes: int
    query: str = "queries/triage/summary.sql"

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "TriageSummary":
        def value(k: str):
            v = row.get(k)
            if k in _TIMES:
                return None if v is None else _utc(v)
            if k == "in_scope":
                return None if v is None else int(v)
            return int(v or 0)
        return cls(**{k: value(k) for k in COUNT_COLUMNS})

    @property
    def per_million(self) -> float | None:
        """Affected responses per million requests to the model in the window."""
        return self.affected / self.in_scope * 1e6 if self.in_scope else None


def _utc(v: Any) -> dt.datetime:
    if isinstance(v, str):
        v = dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    return v if v.tzinfo else v.replace(tzinfo=dt.timezone.utc)
