"""What a case's documents may say from `kvir confirm`, typed: the reader the report stage calls.

    if (c := read_confirmation(case)) is not None:
        c.responses["req-1"].verdict        # 'confirmed foreign content' | 'corruption without foreign content'
                                            # | 'not confirmed' | 'cannot decide'
        c.accounts["tenant-a"].confirmed    # responses of that tenant that carried another tenant's content
        c.accounts["tenant-b"].content_reached_responses   # its content in others' responses

None when the case was never confirmed: then no document may state a confirmation either way (every
verdict is metadata's). The contract of the tables (queries/confirm/verdicts.sql, accounts.sql, needles.sql):
one `confirmations` row per affected or possibly affected response, one `confirmation_sources` row per
(response, source request) over the threshold, one `confirmation_accounts` row per tenant that received an
affected response or whose content reached one, one `confirm_needle_results` row per needle.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from kvir.case.store import Case

VERDICTS = ("confirmed foreign content", "corruption without foreign content", "not confirmed", "cannot decide")
DETECTORS = ("replacement", "noise", "repetition", "script shift")


@dataclass(frozen=True)
class Source:
    """A source request whose text a response shares beyond the threshold."""

    request_id: str
    tenant: str
    parts: tuple[str, ...]         # prompt and/or response: which of its texts matched
    score: float                   # weighted shared windows
    overlap: float                 # share of the response's fingerprints matched
    matched_bytes: int             # bytes of the response its matched spans cover (an estimate from windows)
    rank: int                      # 1: the best score (ties share it)
    same_instance: bool | None     # None: one of the two names no node


@dataclass(frozen=True)
class ResponseConfirmation:
    request_id: str
    ts: dt.datetime
    account_id: str | None
    instance: str | None
    triage_verdict: str            # affected | possibly affected
    verdict: str                   # one of VERDICTS
    reason: str
    sources: tuple[Source, ...]    # best first
    corruption: tuple[str, ...]    # the DETECTORS that fired
    candidates: int | None         # earlier requests of other tenants that could have been the source
    candidates_with_text: int | None

    @property
    def source_tenants(self) -> tuple[str, ...]:
        return tuple(sorted({s.tenant for s in self.sources}))


@dataclass(frozen=True)
class AccountConfirmation:
    account_id: str
    responses: int                 # affected responses it received
    confirmed: int
    corruption: int
    not_confirmed: int
    cannot_decide: int
    content_reached_responses: int  # responses of other tenants that carried its content
    content_reached_tenants: int
    content_source_requests: int


@dataclass(frozen=True)
class NeedleResult:
    needle_id: int
    kind: str                      # needle | probe canary
    label: str
    planted_by: str | None
    responses: int
    tenants: tuple[str, ...]
    request_ids: tuple[str, ...]


@dataclass(frozen=True)
class Confirmation:
    responses: dict[str, ResponseConfirmation]
    accounts: dict[str, AccountConfirmation]
    needles: tuple[NeedleResult, ...]
    run: dict[str, Any]            # the manifest's `confirm` summary: window, thresholds, key's SHA-256, counts

    def count(self, verdict: str) -> int:
        return sum(1 for r in self.responses.values() if r.verdict == verdict)

    def counts(self) -> dict[str, int]:
        """Responses per verdict, every verdict named (0 where none): the split a post-mortem and a GDPR
        draft state."""
        return {v: self.count(v) for v in VERDICTS}


def read_confirmation(case: Case) -> Confirmation | None:
    if not case.has("confirmations"):
        return None
    con = case.con
    by_response: dict[str, list[Source]] = {}
    for row in con.execute(
            "SELECT request_id, source_request_id, source_tenant, source_parts, score, overlap, matched_bytes, rank, "
            "instance FROM confirmation_sources ORDER BY request_id, rank, source_request_id").fetchall():
        by_response.setdefault(row[0], []).append(
            Source(row[1], row[2], tuple(row[3]), float(row[4]), float(row[5]), int(row[6] or 0), int(row[7]),
                   None if row[8] == "unknown" else True))
    responses = {}
    for r in con.execute(
            "SELECT request_id, ts, account_id, instance, triage_verdict, verdict, reason, corruption, candidates, "
            "candidates_with_text FROM confirmations ORDER BY ts, request_id").fetchall():
        responses[r[0]] = ResponseConfirmation(r[0], r[1], r[2], r[3], r[4], r[5], r[6], tuple(by_response.get(r[0], ())),
                                               tuple(r[7] or ()), _int(r[8]), _int(r[9]))
    accounts = {a[0]: AccountConfirmation(*a) for a in con.execute(
        "SELECT account_id, responses, confirmed, corruption, not_confirmed, cannot_decide, content_reached_responses, "
        "content_reached_tenants, content_source_requests FROM confirmation_accounts ORDER BY account_id").fetchall()}
    needles = tuple(NeedleResult(n[0], n[1], n[2], n[3], n[4], tuple(n[5]), tuple(n[6])) for n in con.execute(
        "SELECT needle_id, kind, label, planted_by, responses, tenants, request_ids FROM confirm_needle_results "
        "ORDER BY needle_id").fetchall()) if case.has("confirm_needle_results") else ()
    run = case.manifest.get("confirm") or {}
    return Confirmation(responses, accounts, needles, json.loads(json.dumps(run, default=str)))


def _int(v: Any) -> int | None:
    return None if v is None else int(v)
