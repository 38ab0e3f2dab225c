"""The [disclosure] keys of incident.toml: who publishes, whom to credit, what to cite, regulatory dates.

Every key is optional. A key that is missing and that a document needs is shown in that document as
a visible placeholder and listed in reports/index.html, never guessed. Nothing here describes an engine:
the engine defect is [defect]'s (kvir.report.defect), or a defect kvir's build table matches on the
evidence, or nothing.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any

from kvir.core.errors import KvirError
from kvir.spec.model import parse_utc

UTC = dt.timezone.utc
PLACEHOLDER_NAMESPACE = "https://example.invalid"
NIL_ORG_ID = "00000000-0000-4000-8000-000000000000"
TLP_LABELS = ("WHITE", "GREEN", "AMBER", "RED")
CSAF_STATUSES = ("draft", "interim", "final")
# key -> what it is (documented in spec.TEMPLATE and tested to match)
KEYS: dict[str, str] = {
    "provider": "the inference provider: publisher of the reports, processor in the notices",
    "provider_namespace": "the provider's web address (CSAF publisher namespace)",
    "contact": "security contact for customers and the engine's users",
    "dpo_contact": "data-protection officer or contact point (GDPR Art. 33(3)(b))",
    "reporter": "who reported the bug (credited in every public document)",
    "reporter_channel": "how it was reported, e.g. a bug-bounty platform",
    "reported_at": "when the report arrived (UTC)",
    "awareness_time": "when the provider became aware (defaults to [incident] awareness_time)",
    "notified_at": "when the supervisory authority was notified (UTC); unset = not yet",
    "delay_reason": "why the Art. 33 notification came after 72 hours",
    "lead_supervisory_authority": "the lead supervisory authority (GDPR Art. 56)",
    "gdpr_role": "processor (default: API customers are the controllers) or controller",
    "advisory_id": "id of the advisory (default: the incident id)",
    "cve_id": "CVE id, once assigned",
    "ghsa_id": "GitHub security advisory id, once assigned",
    "cna_org_id": "the CNA's organisation UUID (CVE providerMetadata.orgId)",
    "tlp": "TLP label of the CSAF documents: WHITE, GREEN, AMBER (default) or RED",
    "csaf_status": "CSAF tracking status: draft (default), interim or final",
    "public_report_url": "where the public incident report is published",
    "advisory_url": "where the advisory is published (the human-readable page)",
    "csaf_base_url": "https:// folder of the provider's CSAF documents for this TLP (their canonical URLs: "
                     "<csaf_base_url>/<year>/<file name>, CSAF 2.0 §7.1)",
    "cvss_v3": "the analyst's CVSS v3.x base vector of the engine bug (scores are computed from it)",
    "published_at": "when the documents were first published (UTC): their release date; unset = the render time",
    "traffic_gap_minutes": "shortest pause in customer traffic read as the model being private (default 30)",
    "timeline_tolerance_minutes": "largest hand-vs-data difference not shown as a conflict (default 5)",
    "data_exposed": "list: categories of data that were exposed",
    "data_not_exposed": "list: categories of data that were not exposed",
    "action_items": "list of tables {title, type, owner, bug} for the post-mortem",
    "went_well": "list: post-mortem lessons, what went well",
    "went_wrong": "list: post-mortem lessons, what went wrong",
    "lucky": "list: post-mortem lessons, where we got lucky",
}

DEFAULT_NOT_EXPOSED = [
    "account data, API keys, credentials and billing data (never held in the KV cache)",
    "request metadata of other customers (ids, times, sizes are not part of the KV cache)",
]


@dataclass(frozen=True)
class ActionItem:
    title: str
    type: str = "prevent"
    owner: str = ""
    bug: str = ""


@dataclass(frozen=True)
class Disclosure:
    provider: str = ""
    provider_namespace: str = ""
    contact: str = ""
    dpo_contact: str = ""
    reporter: str = ""
    reporter_channel: str = ""
    reported_at: dt.datetime | None = None
    awareness_time: dt.datetime | None = None
    notified_at: dt.datetime | None = None
    delay_reason: str = ""
    lead_supervisory_authority: str = ""
    gdpr_role: str = "processor"
    advisory_id: str = ""
    cve_id: str = ""
    ghsa_id: str = ""
    cna_org_id: str = ""
    tlp: str = "AMBER"
    csaf_status: str = "draft"
    public_report_url: str = ""
    advisory_url: str = ""
    csaf_base_url: str = ""
    cvss_v3: str = ""
    published_at: dt.datetime | None = None
    traffic_gap_minutes: float = 30.0
    timeline_tolerance_minutes: float = 5.0
    data_exposed: tuple[str, ...] = ()   # unset: what the mechanism exposes (its story's data_exposed)
    data_not_exposed: tuple[str, ...] = tuple(DEFAULT_NOT_EXPOSED)
    action_items: tuple[ActionItem, ...] = ()
    went_well: tuple[str, ...] = ()
    went_wrong: tuple[str, ...] = ()
    lucky: tuple[str, ...] = ()
    unknown_keys: tuple[str, ...] = ()
    missing: tuple[str, ...] = field(default=())

    @property
    def cvss(self):
        """The CVSS v3.x score of cvss_v3 (kvir.report.cvss.CvssV3), or None when the key is not set."""
        from kvir.report.cvss import parse_vector

        return parse_vector(self.cvss_v3) if self.cvss_v3 else None

    @property
    def namespace(self) -> str:
        return self.provider_namespace or PLACEHOLDER_NAMESPACE

    @property
    def provider_name(self) -> str:
        return self.provider or "the provider"

    @property
    def org_id(self) -> str:
        return self.cna_org_id or NIL_ORG_ID


_DATETIMES = {"reported_at", "awareness_time", "notified_at", "published_at"}
_LISTS = {"data_exposed", "data_not_exposed", "went_well", "went_wrong", "lucky"}
_NUMBERS = {"traffic_gap_minutes", "timeline_tolerance_minutes"}
# keys a document needs; missing ones are listed in the index (placeholders in the documents)
NEEDED = ("provider", "provider_namespace", "contact", "dpo_contact", "reporter", "awareness_time",
          "lead_supervisory_authority", "cna_org_id", "csaf_base_url", "cvss_v3")


def parse_disclosure(raw: dict[str, Any], incident_id: str) -> Disclosure:
    """Typed [disclosure] from the case's `disclosure` table (JSON values). Bad values raise KvirError
    naming the key; unknown keys are kept aside and reported as warnings."""
    names = {f.name for f in fields(Disclosure)} - {"unknown_keys", "missing"}
    unknown = tuple(sorted(k for k in raw if k not in names))
    d = Disclosure(**{k: _value(k, v) for k, v in raw.items() if k in names})
    _check(d)
    missing = tuple(k for k in NEEDED if not getattr(d, k))
    return replace(d, advisory_id=d.advisory_id or incident_id, unknown_keys=unknown, missing=missing)


def _err(key: str, msg: str) -> KvirError:
    return KvirError(msg, key=f"disclosure.{key}")


def _value(k: str, v: Any) -> Any:
    """One key's value, typed by the kind of key it is."""
    if k in _DATETIMES:
        return parse_utc(v, lambda m: _err(k, m))
    if k in _LISTS:
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise _err(k, "expected a list of strings")
        return tuple(v)
    if k in _NUMBERS:
        if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
            raise _err(k, f"expected a non-negative number of minutes, got {v!r}")
        return float(v)
    if k == "action_items":
        if not isinstance(v, list) or not all(isinstance(x, dict) and isinstance(x.get("title"), str) for x in v):
            raise _err(k, "expected an array of tables with at least a title: [[disclosure.action_items]]")
        return tuple(ActionItem(str(x["title"]), str(x.get("type", "prevent")), str(x.get("owner", "")),
                                str(x.get("bug", ""))) for x in v)
    if not isinstance(v, str):
        raise _err(k, f"expected a string, got {v!r}")
    return v.strip()


_UUID4 = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}")


def _check(d: Disclosure) -> None:
    """The values that must be one of a few, a URL or an id of a given form (each key's own error)."""
    if d.tlp not in TLP_LABELS:
        raise _err("tlp", f"expected one of {', '.join(TLP_LABELS)}")
    if d.csaf_status not in CSAF_STATUSES:
        raise _err("csaf_status", f"expected one of {', '.join(CSAF_STATUSES)}")
    if d.gdpr_role not in ("processor", "controller"):
        raise _err("gdpr_role", "expected processor or controller")
    if d.provider_namespace and not re.match(r"^https?://[^\s/]+", d.provider_namespace):
        raise _err("provider_namespace", "expected an http(s) URL, e.g. https://inference.example.com")
    if d.cna_org_id and not _UUID4.fullmatch(d.cna_org_id):
        raise _err("cna_org_id", "expected a version-4 UUID (the CVE schema requires one)")
    for k in ("public_report_url", "advisory_url"):
        if getattr(d, k) and not re.match(r"^https?://\S+$", getattr(d, k)):
            raise _err(k, "expected an http(s) URL")
    if d.csaf_base_url and not re.match(r"^https://[^\s/]+(/\S*)?$", d.csaf_base_url):
        raise _err("csaf_base_url", "expected an https:// URL (CSAF canonical URLs must use https), e.g. "
                                    "https://inference.example.com/.well-known/csaf/amber/")
    if d.cvss_v3:
        from kvir.report.cvss import parse_vector

        try:
            parse_vector(d.cvss_v3)
        except ValueError as e:
            raise _err("cvss_v3", str(e)) from None
