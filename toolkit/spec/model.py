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
from kvir.rules.engines import NAMES as ENGINE_NAMES
from kvir.spec.mechanism import Mechanism, SpecContext, mechanism as mechanism_named, parse_mechanism, sections

UTC = dt.timezone.utc
ROLES = ("prefill", "decode", "mixed")
# what a [[sources]] entry may declare: an engine node's role, or gateway (client-facing: its records name what the
# client got, and it is joined to the engine's requests by JOIN_KEYS)
SOURCE_ROLES = ROLES + ("gateway",)
JOIN_KEYS = ("id", "time")
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
    # how its requests join the engine's (a gateway's: role = "gateway", or a client-facing format): id (its
    # request_id is the engine's id, or the X-Request-Id vLLM logs as chatcmpl-<id>), time (start times within
    # the tolerance), or both (the default)
    join: tuple[str, ...] = ()


@dataclass(frozen=True)
class IncidentSpec:
    id: str
    title: str
    models: tuple[str, ...]
    window_start: dt.datetime
    window_end: dt.datetime
    mechanism: str                                             # its name (kvir.spec.mechanism registry)
    params: Any                                                # its section, typed (the mechanism's spec part)
    accounts: tuple[AccountRule, ...] = ()
    events: tuple[HandEvent, ...] = ()
    sources: tuple[SourceSpec, ...] = ()
    awareness_time: dt.datetime | None = None
    disclosure: dict[str, Any] = field(default_factory=dict)
    defect: dict[str, Any] = field(default_factory=dict)      # [defect]: the engine defect, as declared
    path: Path | None = None
    declared_engine: str | None = None                         # incident.engine, or the mechanism section's

    @property
    def mech(self) -> Mechanism:
        """The registered mechanism the spec names."""
        return mechanism_named(self.mechanism)

    @property
    def engine(self) -> str | None:
        """The engine the spec declares (None: let the evidence say)."""
        return self.declared_engine

    @property
    def base_dir(self) -> Path:
        return self.path.parent if self.path else Path.cwd()

    @property
    def model(self) -> str:
        """The display name: the first alias."""
        return self.models[0]

    @property
    def model_names(self) -> tuple[str, ...]:
        """Every name a record may carry for the incident's model: each alias, and an alias written with a
        gateway's provider prefix (LiteLLM's `hosted_vllm/org/name`) also without it. Only a name of three or
        more parts loses its first: `openai/gpt-oss-20b` is a model id, kept whole."""
        out = list(self.models)
        for m in self.models:
            parts = m.split("/")
            if len(parts) >= 3 and all(parts):
                out.append("/".join(parts[1:]))
        return tuple(dict.fromkeys(out))

    def query_params(self) -> dict[str, Any]:
        """The values every triage query binds (never pasted into SQL); the mechanism's own are its triage part's."""
        return {"models": list(self.model_names), "window_start": self.window_start, "window_end": self.window_end}


# --------------------------------------------------------------------------------------------- parsing

_TOP_KEYS = {"incident", "accounts", "events", "sources", "disclosure", "defect"}   # and each mechanism's section
_INCIDENT_KEYS = {"id", "title", "models", "window_start", "window_end", "awareness_time", "mechanism", "engine"}
# [defect]: the engine defect the responders declare (kvir.report.defect reads it; `kvir init` shows it)
DEFECT_KEYS = {"package", "ecosystem", "vendor", "repo", "title", "description", "introduced_version",
               "fixed_version", "fixed_release_date", "fixed_source", "references", "cwe", "workaround"}
_ACCOUNT_KEYS = {"id", "label", "reason", "exclude"}
_EVENT_KEYS = {"ts", "title", "actor", "category", "description", "visibility"}
_SOURCE_KEYS = {"path", "format", "source_tz", "served_model", "node", "role", "year", "columns", "join"}


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

    owners = sections()                           # spec table -> the mechanism it belongs to
    _no_unknown(data, _TOP_KEYS | set(owners), "", err)
    inc = _table(data, "incident", err)
    _no_unknown(inc, _INCIDENT_KEYS, "incident.", err)
    mech = parse_mechanism(inc.get("mechanism"), err)
    engine = inc.get("engine")
    if engine is not None and engine not in ENGINE_NAMES:
        raise err("incident.engine", f"expected one of {', '.join(ENGINE_NAMES)}, got {engine!r}")
    for section, owner in owners.items():
        if section in data and owner != mech.name:
            raise err(section, f'[{section}] belongs to mechanism = "{owner}" (this spec\'s is "{mech.name}")')
    part = mech.spec
    params = part.parse(data.get(part.section) if part.section else None, SpecContext(err, engine))
    engine = engine or part.engine(params)

    models = inc.get("models")
    if isinstance(models, str):
        models = [models]
    if not isinstance(models, list) or not models or not all(isinstance(m, str) and m.strip() for m in models):
        raise err("incident.models", 'expected a non-empty list of model names, e.g. ["my-org/my-model", "my-model"]')
    start = _utc(inc, "window_start", "incident.", err, required=True)
    end = _utc(inc, "window_end", "incident.", err, required=True)
    if end < start:
        raise err("incident.window_end", f"window_end ({end.isoformat()}) is before window_start ({start.isoformat()})")

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
    moved = sorted(k for k in disclosure if k in _MOVED_TO_DEFECT)
    if moved:
        raise err("disclosure." + moved[0], f"the engine defect is declared in [defect] now ({_MOVED_TO_DEFECT[moved[0]]}); "
                                            "see `kvir init`")
    defect = data.get("defect", {})
    if not isinstance(defect, dict):
        raise err("defect", "expected a table")
    _no_unknown(defect, DEFECT_KEYS, "defect.", err)

    return IncidentSpec(
        id=_str(inc, "id", "incident.", err, required=True),
        title=_str(inc, "title", "incident.", err, required=True),
        models=tuple(m.strip() for m in models),
        window_start=start,
        window_end=end,
        mechanism=mech.name,
        params=params,
        declared_engine=engine,
        accounts=accounts,
        events=tuple(sorted(events, key=lambda e: e.ts)),
        sources=sources,
        awareness_time=_utc(inc, "awareness_time", "incident.", err, required=False),
        disclosure=disclosure,
        defect=defect,
        path=path,
    )


# [disclosure] keys of earlier kvir versions that described the engine bug: now [defect] keys
_MOVED_TO_DEFECT = {"engine": "package", "engine_vendor": "vendor", "engine_repo": "repo",
                    "introduced_version": "introduced_version", "fixed_version": "fixed_version",
                    "fixed_release_date": "fixed_release_date", "upstream_issue": "references", "cwe": "cwe",
                    "workaround": "workaround"}


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
    if role is not None and role not in SOURCE_ROLES:
        raise err(prefix + "role", f"expected one of {', '.join(SOURCE_ROLES)}")
    join = s.get("join", [])
    join = [join] if isinstance(join, str) else join
    if not isinstance(join, list) or not all(k in JOIN_KEYS for k in join):
        raise err(prefix + "join", f"expected {' or '.join(JOIN_KEYS)}, or a list of them")
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
    if not isinstance(cols, dict) or not all(isinstance(v, str) or (isinstance(v, list) and v and all(
            isinstance(x, str) for x in v)) for v in cols.values()):
        raise err(prefix + "columns", "expected a table mapping kvir fields to column names (JSON Lines: a dotted "
                                      "path, or a list of paths tried in order)")
    for k in cols:
        if k not in MAPPABLE_FIELDS and k != "ts_unit":
            raise err(prefix + "columns." + k, f"unknown field; mappable fields: {', '.join(MAPPABLE_FIELDS)}")
    fmt = s.get("format")
    if fmt is not None and not (isinstance(fmt, str) and re.fullmatch(r"[a-z0-9-]+", fmt)):
        raise err(prefix + "format", "expected a format name (see `kvir formats`)")
    return SourceSpec(path=_str(s, "path", prefix, err, True), format=fmt, source_tz=tz,
                      served_model=s.get("served_model"), node=s.get("node"), role=role, year=year,
                      columns=dict(cols), join=tuple(dict.fromkeys(join)))

