"""incident.toml: what happened, when, to which model, and which rule says a response was exposed.

The spec is the only hand-written input of an investigation. Every key is checked here; an invalid
spec fails with an error that names the key and what was expected, never with a traceback later.
"""
from __future__ import annotations

import datetime as dt
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvir.core.errors import SpecError
from kvir.rules.trigger import RULES, Trigger

UTC = dt.timezone.utc
ROLES = ("prefill", "decode", "mixed")
# Canonical request fields a generic CSV / JSONL / Parquet source may map its columns onto.
MAPPABLE_FIELDS = (
    "request_id", "ts", "ts_end", "account_id", "model", "prompt_tokens", "cached_tokens",
    "completion_tokens", "http_status", "finish_reason", "prefill_node", "decode_node",
    "prefill_tokens", "bootstrap_room", "latency_s",
)


@dataclass(frozen=True)
class AccountRule:
    """An account the responders know: the reporting researcher, the provider's own tests."""

    account_id: str
    label: str
    reason: str
    exclude: bool = False


@dataclass(frozen=True)
class HandEvent:
    """A timeline event known by hand (not derived from the logs)."""

    ts: dt.datetime
    title: str
    actor: str = ""
    category: str = ""
    description: str = ""
    visibility: str = "internal"


@dataclass(frozen=True)
class SourceSpec:
    """Per-source settings: which files, their format and what the files cannot say themselves."""

    path: str
    format: str | None = None
    source_tz: str | None = None
    served_model: str | None = None
    node: str | None = None
    role: str | None = None
    year: int | None = None
    columns: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class IncidentSpec:
    id: str
    title: str
    models: tuple[str, ...]
    window_start: dt.datetime
    window_end: dt.datetime
    trigger: Trigger
    accounts: tuple[AccountRule, ...] = ()
    events: tuple[HandEvent, ...] = ()
    sources: tuple[SourceSpec, ...] = ()
    awareness_time: dt.datetime | None = None
    disclosure: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None

    @property
    def base_dir(self) -> Path:
        return self.path.parent if self.path else Path.cwd()

    @property
    def model(self) -> str:
        """The display name: the first alias."""
        return self.models[0]

    def query_params(self) -> dict[str, Any]:
        """The values every triage query binds (never pasted into SQL)."""
        return {"models": list(self.models), "window_start": self.window_start, "window_end": self.window_end,
                **self.trigger.query_params()}


# --------------------------------------------------------------------------------------------- parsing

_TOP_KEYS = {"incident", "trigger", "accounts", "events", "sources", "disclosure"}
_INCIDENT_KEYS = {"id", "title", "models", "window_start", "window_end", "awareness_time"}
_TRIGGER_KEYS = {"pool_tokens", "context_tokens", "rule"}
_ACCOUNT_KEYS = {"id", "label", "reason", "exclude"}
_EVENT_KEYS = {"ts", "title", "actor", "category", "description", "visibility"}
_SOURCE_KEYS = {"path", "format", "source_tz", "served_model", "node", "role", "year", "columns"}


def load_spec(path: str | Path) -> IncidentSpec:
    """Read and validate an incident.toml."""
    p = Path(path)
    if not p.exists():
        raise SpecError("incident spec not found", path=str(p), hint="create one with `kvir init`")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"not valid TOML: {e}", path=str(p)) from None
    except UnicodeDecodeError:
        raise SpecError("not UTF-8 text", path=str(p)) from None
    return parse_spec(data, path=p)


def parse_spec(data: dict[str, Any], path: Path | None = None) -> IncidentSpec:
    where = str(path) if path else "incident.toml"

    def err(key: str, msg: str) -> SpecError:
        return SpecError(msg, path=where, key=key)

    _no_unknown(data, _TOP_KEYS, "", err)
    inc = _table(data, "incident", err)
    _no_unknown(inc, _INCIDENT_KEYS, "incident.", err)
    trig = _table(data, "trigger", err)
    _no_unknown(trig, _TRIGGER_KEYS, "trigger.", err)

    models = inc.get("models")
    if isinstance(models, str):
        models = [models]
    if not isinstance(models, list) or not models or not all(isinstance(m, str) and m.strip() for m in models):
        raise err("incident.models", 'expected a non-empty list of model names, e.g. ["@cf/zai-org/glm-5.3", "zai-org/GLM-5.3"]')
    start = _utc(inc, "window_start", "incident.", err, required=True)
    end = _utc(inc, "window_end", "incident.", err, required=True)
    if end < start:
        raise err("incident.window_end", f"window_end ({end.isoformat()}) is before window_start ({start.isoformat()})")

    pool = _positive_int(trig, "pool_tokens", "trigger.", err)
    context = _positive_int(trig, "context_tokens", "trigger.", err)
    rule = trig.get("rule", "public")
    if rule not in RULES:
        raise err("trigger.rule", f'expected "public" (prompt_tokens > pool) or "engine" (SGLang\'s limit), got {rule!r}')

    accounts = tuple(_account(a, i, err) for i, a in enumerate(_array(data, "accounts", err)))
    seen: set[str] = set()
    for a in accounts:
        if a.account_id in seen:
            raise err("accounts", f"account {a.account_id!r} is listed twice")
        seen.add(a.account_id)
    events = tuple(_event(e, i, err) for i, e in enumerate(_array(data, "events", err)))
    sources = tuple(_source(s, i, err) for i, s in enumerate(_array(data, "sources", err)))
    disclosure = data.get("disclosure", {})
    if not isinstance(disclosure, dict):
        raise err("disclosure", "expected a table")

    return IncidentSpec(
        id=_str(inc, "id", "incident.", err, required=True),
        title=_str(inc, "title", "incident.", err, required=True),
        models=tuple(m.strip() for m in models),
        window_start=start,
        window_end=end,
        trigger=Trigger(pool, context, rule),
        accounts=accounts,
        events=tuple(sorted(events, key=lambda e: e.ts)),
        sources=sources,
        awareness_time=_utc(inc, "awareness_time", "incident.", err, required=False),
        disclosure=disclosure,
        path=path,
    )


def _no_unknown(table: dict, allowed: set[str], prefix: str, err) -> None:
    for k in table:
        if k not in allowed:
            raise err(prefix + k, f"unknown key; expected one of {', '.join(sorted(allowed))}")


def _table(data: dict, key: str, err) -> dict:
    v = data.get(key)
    if not isinstance(v, dict):
        raise err(key, f"missing [{key}] table")
    return v


def _array(data: dict, key: str, err) -> list[dict]:
    v = data.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
        raise err(key, f"expected an array of tables ([[{key}]])")
    return v


def _str(t: dict, key: str, prefix: str, err, required: bool = False) -> str:
    v = t.get(key)
    if v is None and not required:
        return ""
    if not isinstance(v, str) or not v.strip():
        raise err(prefix + key, "expected a non-empty string")
    return v


def _positive_int(t: dict, key: str, prefix: str, err) -> int:
    v = t.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise err(prefix + key, f"expected a positive integer number of tokens, got {v!r}")
    return v


def _utc(t: dict, key: str, prefix: str, err, required: bool) -> dt.datetime | None:
    v = t.get(key)
    if v is None:
        if required:
            raise err(prefix + key, "missing; expected a date-time with a UTC offset, e.g. 2026-08-27T00:00:00Z")
        return None
    return parse_utc(v, lambda msg: err(prefix + key, msg))


def parse_utc(v: Any, fail) -> dt.datetime:
    """A TOML offset date-time (or an ISO string with an offset) as an aware UTC datetime."""
    if isinstance(v, str):
        try:
            v = dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            raise fail(f"{v!r} is not an ISO-8601 date-time") from None
    if isinstance(v, dt.date) and not isinstance(v, dt.datetime):
        raise fail("expected a date-time with a UTC offset, not a bare date")
    if not isinstance(v, dt.datetime):
        raise fail(f"expected a date-time with a UTC offset, got {v!r}")
    if v.tzinfo is None:
        raise fail(f"{v.isoformat()} has no UTC offset; write it as {v.isoformat()}Z (times inside kvir are UTC)")
    return v.astimezone(UTC)


def _account(a: dict, i: int, err) -> AccountRule:
    prefix = f"accounts[{i}]."
    _no_unknown(a, _ACCOUNT_KEYS, prefix, err)
    exclude = a.get("exclude", False)
    if not isinstance(exclude, bool):
        raise err(prefix + "exclude", "expected true or false")
    return AccountRule(_str(a, "id", prefix, err, True), _str(a, "label", prefix, err, True),
                       _str(a, "reason", prefix, err, True), exclude)


def _event(e: dict, i: int, err) -> HandEvent:
    prefix = f"events[{i}]."
    _no_unknown(e, _EVENT_KEYS, prefix, err)
    ts = _utc(e, "ts", prefix, err, required=True)
    return HandEvent(ts, _str(e, "title", prefix, err, True), _str(e, "actor", prefix, err),
                     _str(e, "category", prefix, err), _str(e, "description", prefix, err),
                     _str(e, "visibility", prefix, err) or "internal")


def _source(s: dict, i: int, err) -> SourceSpec:
    from kvir.core.timezones import parse_source_tz  # local: keeps spec import light

    prefix = f"sources[{i}]."
    _no_unknown(s, _SOURCE_KEYS, prefix, err)
    role = s.get("role")
    if role is not None and role not in ROLES:
        raise err(prefix + "role", f"expected one of {', '.join(ROLES)}")
    tz = s.get("source_tz")
    if tz is not None:
        try:
            parse_source_tz(tz)
        except ValueError as e:
            raise err(prefix + "source_tz", str(e)) from None
    year = s.get("year")
    if year is not None and (not isinstance(year, int) or not 1990 <= year <= 2100):
        raise err(prefix + "year", "expected a year between 1990 and 2100")
    cols = s.get("columns", {})
    if not isinstance(cols, dict) or not all(isinstance(v, str) for v in cols.values()):
        raise err(prefix + "columns", "expected a table mapping kvir fields to column names")
    for k in cols:
        if k not in MAPPABLE_FIELDS and k != "ts_unit":
            raise err(prefix + "columns." + k, f"unknown field; mappable fields: {', '.join(MAPPABLE_FIELDS)}")
    fmt = s.get("format")
    if fmt is not None and not (isinstance(fmt, str) and re.fullmatch(r"[a-z0-9-]+", fmt)):
        raise err(prefix + "format", "expected a format name (see `kvir formats`)")
    return SourceSpec(path=_str(s, "path", prefix, err, True), format=fmt, source_tz=tz,
                      served_model=s.get("served_model"), node=s.get("node"), role=role, year=year,
                      columns=dict(cols))


TEMPLATE = '''\
# incident.toml: the facts of one KV-cache exposure investigation (read by every kvir command).
# Times are UTC: write them with an offset (Z). Bounds of the window are inclusive.

[incident]
id = "KVIR-2026-0001"
title = "Cross-tenant KV cache exposure on GLM-5.3"
models = ["@cf/zai-org/glm-5.3", "zai-org/GLM-5.3"]   # aliases of one model; matched exactly
window_start = 2026-08-27T00:00:00Z                      # inclusive
window_end = 2026-09-09T19:40:00Z                        # inclusive
# awareness_time = 2026-09-09T13:22:00Z                  # starts the GDPR Art. 33 72-hour clock

[trigger]
pool_tokens = 681280        # the prefill KV pool (max_total_num_tokens) in effect
context_tokens = 1048576    # the served context length (context_len)
rule = "public"             # "public": prompt_tokens > pool_tokens
                            # "engine": prompt_tokens >= min(context-1, pool-1) - 5 (SGLang's real limit)

# Accounts the responders know. Labelled accounts stay in every count and are shown apart;
# exclude = true removes them from the affected set (they are listed in excluded.csv instead).
# [[accounts]]
# id = "acct_researcher"
# label = "reporting researcher"
# reason = "bug-bounty reproduction, 2026-09-08"
# exclude = false

# Timeline events known by hand.
# [[events]]
# ts = 2026-09-09T13:22:00Z
# title = "Incident declared"
# actor = "provider"
# category = "escalation"

# What `kvir report` needs beyond the logs (all optional; a missing one shows as a placeholder).
# [disclosure]
# provider = "Example Inference Co."                # publisher of the reports; processor in the notices
# provider_namespace = "https://inference.example.com"   # the provider's web address (CSAF namespace)
# contact = "security@inference.example.com"        # security contact for customers and users
# dpo_contact = "dpo@inference.example.com"         # GDPR Art. 33(3)(b) contact point
# reporter = "A. Researcher"                        # credited in every public document
# reporter_channel = "a bug-bounty platform"
# reported_at = 2026-09-08T09:00:00Z
# awareness_time = 2026-09-09T13:22:00Z             # defaults to [incident] awareness_time
# notified_at = 2026-09-12T10:00:00Z                # when the supervisory authority was notified
# delay_reason = "..."                              # required when notified_at is after awareness + 72 h
# lead_supervisory_authority = "..."
# gdpr_role = "processor"                           # or "controller"
# engine = "sglang"                                 # the engine bug: PyPI package, maintainers, versions
# engine_vendor = "sgl-project"
# engine_repo = "https://github.com/sgl-project/sglang"
# introduced_version = "0"                          # 0 = every version before the fix
# fixed_version = "0.5.22"
# fixed_release_date = "2026-10-19"
# upstream_issue = "https://github.com/..."
# advisory_id = "KVIR-2026-0001"                    # default: [incident] id
# cve_id = ""                                       # once assigned
# ghsa_id = ""
# cna_org_id = "..."                                # the CNA's UUID (CVE providerMetadata.orgId)
# cwe = "CWE-488"                                   # or CWE-226, CWE-200, CWE-362
# tlp = "AMBER"                                     # CSAF TLP label: WHITE, GREEN, AMBER, RED
# csaf_status = "draft"                             # draft, interim, final
# public_report_url = "https://..."
# advisory_url = "https://..."                     # the advisory's web page
# csaf_base_url = "https://inference.example.com/.well-known/csaf/amber/"   # https folder of your CSAF documents
#                                                   # (canonical URL: <base>/<year>/<file name>; CSAF 6.2.11)
# cvss_v3 = "CVSS:3.1/AV:N/AC:H/PR:L/UI:N/S:C/C:H/I:N/A:N"   # your CVSS v3.x base vector of the engine bug;
#                                                   # kvir computes the score (CSAF, OSV, CVE)
# published_at = 2026-10-26T00:00:00Z               # first publication of the documents (default: render time)
# traffic_gap_minutes = 30          # a pause in customer traffic this long reads as "model private"
# timeline_tolerance_minutes = 5    # larger hand-vs-data differences are shown as timeline conflicts
# data_exposed = ["..."]                            # lists of strings (defaults describe KV-cache text)
# data_not_exposed = ["..."]
# workaround = "..."                                # advisory workaround (default: pool vs context checks)
# went_well = ["..."]                               # post-mortem lessons
# went_wrong = ["..."]
# lucky = ["..."]
# [[disclosure.action_items]]                       # post-mortem action items
# title = "Check KV pool >= context length at every node start"
# type = "prevent"                                  # mitigate, prevent or process
# owner = "serving team"
# bug = "OPS-1234"

# Per-source settings for files that cannot say everything themselves. `path` is a glob relative
# to this file; `format` is a name from `kvir formats`.
# [[sources]]
# path = "logs/engine/*.log"
# format = "sglang-json"
# source_tz = "America/Chicago"     # IANA name or fixed offset (+02:00); engine logs are host-local
# served_model = "zai-org/GLM-5.3"  # when the file has no server_args= line
# role = "decode"
#
# [[sources]]
# path = "exports/requests.parquet"
# format = "generic-parquet"
# [sources.columns]                 # kvir field = column name in the file
# request_id = "id"
# ts = "created_at"
# account_id = "customer"
# model = "model"
# prompt_tokens = "input_tokens"
# http_status = "status"
'''
