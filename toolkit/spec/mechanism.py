"""The exposure mechanisms (how KV crossed tenants) as plugins: the `Mechanism` interface and its registry.

kvir's stages (spec, triage, audit, replay, report, probe, serve) are shared machinery that names no
mechanism: each asks this registry for the case's mechanism and calls that mechanism's part for its stage.
A mechanism is one package, kvir.mechanisms.<folder> (toolkit/mechanisms/<folder>/, its SQL in
queries/mechanisms/<folder>/, its templates in templates/mechanisms/<folder>/), whose __init__.py holds one
`Mechanism` named MECHANISM. The shipped mechanisms register exactly as a new one does: their packages are
listed in DEFAULT_MECHANISMS; another package's are found under the entry-point group "kvir.mechanisms"
(as Datasette finds its plugins).

    m = mechanism("prefix-cache")
    m.part("triage")           # what the triage stage calls (its hookspec: kvir.triage.plugin.TriagePart)

Each stage declares what it needs of a mechanism as a Protocol (a hookspec, listed in STAGES); registration
imports every part and checks it against its stage's hookspec, so a missing member fails when the mechanism
registers, never when a report is rendered. Parts import heavy machinery (torch) inside their functions:
`kvir triage` registers every mechanism and must not pay for the replay engine.
"""
from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Callable, Protocol

from kvir.core.errors import KvirError, SpecError

# The packages of the mechanisms kvir ships; the first is the default of a spec that names none.
DEFAULT_MECHANISMS = ("kvir.mechanisms.oversized_prompt", "kvir.mechanisms.prefix_cache")
ENTRY_POINT_GROUP = "kvir.mechanisms"

# stage -> its hookspec ("module:Protocol"): the members every mechanism's part for that stage must have.
STAGES: dict[str, str] = {
    "spec": "kvir.spec.mechanism:SpecPart",
    "triage": "kvir.triage.plugin:TriagePart",
    "audit": "kvir.audit.plugin:AuditPart",
    "replay": "kvir.replay.plugin:ReplayPart",
    "report": "kvir.report.plugin:ReportPart",
    "probe": "kvir.probe.plugin:ProbePart",
    "serve": "kvir.serve.plugin:ServePart",
}
_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")


@dataclass(frozen=True)
class SpecContext:
    """What a mechanism's spec part is given to parse its section: the error builder (names the key) and
    the engine incident.engine declares (None: not declared)."""

    err: Callable[[str, str], SpecError]
    engine: str | None = None


class SpecPart(Protocol):
    """The spec stage's hookspec: the mechanism's section of incident.toml, typed, and its place in `kvir init`."""

    section: str | None          # its table in incident.toml (e.g. "prefix_cache"); None: it has none
    template: str                # the commented section `kvir init --mechanism` writes after [incident]
    title_example: str           # the example incident title of its template
    sources_example: str         # commented [[sources]] lines its template adds ('' for none)

    def parse(self, table: dict[str, Any] | None, ctx: SpecContext) -> Any:
        """The section (None when absent) as the mechanism's typed params; every key checked (ctx.err)."""

    def engine(self, params: Any) -> str | None:
        """The serving engine the section itself declares (None: it declares none)."""

    def record(self, params: Any) -> dict[str, Any]:
        """The params as JSON-able values: stored once in the case (table incident, key mechanism_params)."""

    def restore(self, record: dict[str, Any]) -> Any:
        """The params back from `record` (a case written by this kvir)."""


@dataclass(frozen=True)
class Mechanism:
    """One exposure mechanism: its name, one line on what it is, and its package, whose module per stage
    (<package>.triage, <package>.report, ...) holds that stage's part as PART."""

    name: str                        # as incident.mechanism writes it, e.g. "prefix-cache"
    summary: str                     # one line: what crossed tenants and how (help texts, `kvir init`)
    package: str                     # e.g. "kvir.mechanisms.prefix_cache"
    _loaded: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def folder(self) -> str:
        """Its folder under toolkit/mechanisms/, queries/mechanisms/ and templates/mechanisms/."""
        return self.name.replace("-", "_")

    def part(self, stage: str) -> Any:
        if stage not in STAGES:
            raise KeyError(f"no stage {stage!r}; stages: {', '.join(STAGES)}")
        if stage not in self._loaded:
            self._loaded[stage] = _import(f"{self.package}.{stage}", "PART", f"mechanism {self.name!r} part {stage!r}")
        return self._loaded[stage]

    @property
    def spec(self) -> SpecPart:
        return self.part("spec")


_REGISTRY: dict[str, Mechanism] = {}
_DEFAULTS_LOADED = False


def hookspec_members(stage: str) -> tuple[str, ...]:
    """The members a part for `stage` must have: its hookspec's annotations, methods and properties."""
    proto = _import(*STAGES[stage].split(":"), f"stage {stage!r} hookspec")
    names: dict[str, None] = {}
    for klass in reversed([k for k in proto.__mro__ if k not in (object, Protocol) and k.__name__ != "Generic"]):
        for n in list(getattr(klass, "__annotations__", {})) + list(vars(klass)):
            if not n.startswith("_"):
                names[n] = None
    return tuple(names)


def register(m: Mechanism) -> Mechanism:
    """Add a mechanism after checking it: a kebab-case name not yet taken, a part for every stage, every
    part holding every member of its stage's hookspec. Returns it."""
    if not _NAME.fullmatch(m.name):
        raise KvirError(f"mechanism name {m.name!r}: expected kebab-case, e.g. 'freed-in-flight'")
    if m.name in _REGISTRY and _REGISTRY[m.name] is not m:
        raise KvirError(f"mechanism {m.name!r} is registered twice ({_REGISTRY[m.name].package}, {m.package})")
    for stage in STAGES:
        part = m.part(stage)
        lacking = [n for n in hookspec_members(stage) if not hasattr(part, n)]
        if lacking:
            raise KvirError(f"mechanism {m.name!r}: its {stage} part ({m.package}.{stage}) lacks "
                            f"{', '.join(lacking)} (hookspec {STAGES[stage]})")
    _REGISTRY[m.name] = m
    return m


def _load_defaults() -> None:
    global _DEFAULTS_LOADED
    if _DEFAULTS_LOADED:
        return
    _DEFAULTS_LOADED = True
    for module in DEFAULT_MECHANISMS:
        register(_import(module, "MECHANISM", "default mechanism"))
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        register(_import(ep.value.split(":")[0], ep.value.split(":")[1] if ":" in ep.value else "MECHANISM",
                         f"entry point {ep.name!r}"))


def names() -> tuple[str, ...]:
    """Every registered mechanism's name, the default first."""
    _load_defaults()
    return tuple(_REGISTRY)


def default() -> Mechanism:
    """The mechanism of a spec that names none: the first of DEFAULT_MECHANISMS."""
    _load_defaults()
    return next(iter(_REGISTRY.values()))


def mechanism(name: str | None) -> Mechanism:
    """The registered mechanism `name` (None: the default); an unknown name is a KvirError listing them."""
    _load_defaults()
    if name is None:
        return default()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KvirError(f"unknown mechanism {name!r}; kvir knows {', '.join(repr(n) for n in _REGISTRY)}") from None


def mechanisms() -> tuple[Mechanism, ...]:
    _load_defaults()
    return tuple(_REGISTRY.values())


def sections() -> dict[str, str]:
    """Spec table -> the mechanism it belongs to, for every registered mechanism that has one."""
    return {m.spec.section: m.name for m in mechanisms() if m.spec.section}


def parse_mechanism(value: Any, err: Callable[[str, str], SpecError]) -> Mechanism:
    if value is None:
        return default()
    if not isinstance(value, str) or value not in names():
        raise err("incident.mechanism", f"expected one of {', '.join(repr(n) for n in names())}, got {value!r}")
    return mechanism(value)


def _import(module: str, attr: str, what: str) -> Any:
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        raise KvirError(f"{what}: cannot import {module} ({e})") from None
    try:
        return getattr(mod, attr)
    except AttributeError:
        raise KvirError(f"{what}: {module} has no {attr}") from None
