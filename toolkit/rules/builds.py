"""What each published SGLang build does, from toolkit/rules/builds.toml (read from the wheels): the one
place kvir keeps build knowledge. Audit, replay, serve and the reports ask this module.

    from kvir.rules.builds import TABLE
    TABLE.over_long("0.5.20").outcome        # 'retired-after-forward'
    TABLE.first_fixed                        # '0.5.20': the first build that never transfers the stub
    TABLE.first_door_reject                  # '0.5.21': the first build that rejects it at the door
    TABLE.infer(shape="dict", keys={...}, complete=True)   # -> BuildRange('0.5.19', '0.5.19', ...)

Versions compare as SGLang's releases do (0.5.12 < 0.5.12.post1 < 0.5.13; rc/dev before the release).
A version newer than the newest build read (`newest_read`) is taken to behave like the last row, and
every answer about it says `assumed`.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Iterable

PATH = Path(__file__).with_name("builds.toml")
OUTCOMES = ("forwarded-transferred", "retired-after-forward", "rejected-at-door")
SHAPES = ("repr", "dict", "dict-redacted")
_VERSION = re.compile(r"^\s*(?:sglang[-=\s]*)?v?(\d+)\.(\d+)(?:\.(\d+))?(?:[.-]?(post|rc|dev|a|b|alpha|beta|pre)\.?(\d*))?"
                      r"(?:\+\S*)?\s*$", re.I)


def version_key(v: str | None) -> tuple[int, int, int, int, int] | None:
    """(major, minor, patch, stage, n): stage 0 = pre-release (rc/dev/a/b), 1 = release, 2 = post."""
    if v is None:
        return None
    m = _VERSION.match(str(v))
    if not m:
        return None
    stage = {"post": 2, None: 1}.get(m.group(4).lower() if m.group(4) else None, 0)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), stage, int(m.group(5) or 0))


def normalise(v: str | None) -> str | None:
    """'v0.5.21' / 'sglang==0.5.21' -> '0.5.21'; None when it is not a version."""
    if version_key(v) is None:
        return None
    m = _VERSION.match(str(v))
    assert m
    base = ".".join(x for x in m.group(1, 2, 3) if x is not None)
    return base + (f".{m.group(4).lower()}{m.group(5)}" if m.group(4) else "")


@dataclass(frozen=True)
class Evidence:
    file: str = ""
    function: str = ""
    quote: str = ""
    pr: str = ""

    def text(self) -> str:
        """'file (function)' and, when the public record names one, the PR."""
        out = self.file + (f" ({self.function})" if self.function else "")
        return out + (f"; upstream {self.pr}" if self.pr else "")


@dataclass(frozen=True)
class Row:
    """One fact over a range of builds [first, last] (last None: also every build after newest_read)."""

    first: str
    last: str | None
    values: dict[str, Any]
    evidence: Evidence

    def covers(self, v: str) -> bool:
        k = version_key(v)
        return k is not None and version_key(self.first) <= k and (self.last is None or k <= version_key(self.last))

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def label(self) -> str:
        return f"{self.first}–{self.last}" if self.last and self.last != self.first else (
            self.first if self.last else f">= {self.first}")


@dataclass(frozen=True)
class BuildRange:
    """What the evidence says about a node's build: the published builds it can be (`lo`..`hi`, `open`:
    also builds after the newest read), or one exact version, and why."""

    lo: str | None
    hi: str | None
    open: bool = False
    exact: str | None = None
    evidence: tuple[str, ...] = ()

    @property
    def known(self) -> bool:
        return self.lo is not None or self.exact is not None

    @property
    def text(self) -> str:
        if self.exact:
            return self.exact
        if self.lo is None:
            return "unknown"
        if self.open:
            return f">= {self.lo}"
        return self.lo if self.lo == self.hi else f"{self.lo}–{self.hi}"


def _row(d: dict[str, Any]) -> Row:
    ev = Evidence(d.get("file", ""), d.get("function", ""), d.get("quote", ""), d.get("pr", ""))
    vals = {k: v for k, v in d.items() if k not in ("first", "last", "file", "function", "quote", "pr")}
    return Row(str(d["first"]), str(d["last"]) if "last" in d else None, vals, ev)


class BuildTable:
    def __init__(self, data: dict[str, Any], path: Path | None = None):
        self.path = path
        src = data["sources"]
        self.read: tuple[str, ...] = tuple(src["read"])
        self.newest_read: str = src["newest_read"]
        self.fewest_dump_fields: int = int(src.get("fewest_dump_fields", 0))
        self.how: str = src.get("how", "")
        self.pr_source: str = src.get("pr_source", "")
        self.vendor: str = src.get("vendor", "")
        self.repo: str = src.get("repo", "")
        self.over_long_rows = tuple(_row(d) for d in data["over_long_pd"])
        self.dump_rows = tuple(_row(d) for d in data["settings_dump"])
        self.fields = {d["name"]: _row(d) for d in data["field"]}
        self.env_rows = tuple(_row(d) for d in data["env"])
        self.log_lines = {d["kind"]: _row(d) for d in data["log_line"]}
        self.intake_rows = tuple(_row(d) for d in data.get("intake", []))
        self.allocator_rows = tuple(_row(d) for d in data.get("allocator", []))
        self._check()

    def _check(self) -> None:
        keys = [version_key(v) for v in self.read]
        assert None not in keys and keys == sorted(keys), "sources.read must be sorted versions"
        for rows in (self.over_long_rows, self.dump_rows):
            for v in self.read:
                hits = [r for r in rows if r.covers(v)]
                assert len(hits) == 1, f"{v}: {len(hits)} rows cover it"
        assert all(r.outcome in OUTCOMES for r in self.over_long_rows)
        assert all(r.shape in SHAPES for r in self.dump_rows)

    # ------------------------------------------------------------------ lookups
    def assumed(self, version: str) -> bool:
        """True when `version` is none of the builds read (newer, older, or in between)."""
        n = normalise(version)
        return n is None or n not in self.read

    def _one(self, rows: Iterable[Row], version: str) -> Row | None:
        k = version_key(version)
        if k is None:
            return None
        for r in rows:
            if r.covers(version):
                return r
        return None

    def over_long(self, version: str) -> Row | None:
        """The over-long-prompt row of a version (None: unreadable, or older than every build read)."""
        return self._one(self.over_long_rows, version)

    def dump_shape(self, version: str) -> str | None:
        r = self._one(self.dump_rows, version)
        return r.shape if r else None

    def env_default(self, name: str, version: str) -> str | None:
        r = self._one([e for e in self.env_rows if e.name == name], version)
        return r.default if r else None

    def has_field(self, name: str, version: str) -> bool | None:
        f = self.fields.get(name)
        return None if f is None else f.covers(version)

    def policy_row(self, policy: str) -> Row:
        for r in self.over_long_rows:
            if r.policy == policy:
                return r
        raise KeyError(policy)

    @cached_property
    def first_fixed(self) -> str:
        """The first build read whose code never transfers the over-long stub (the evidence's fix)."""
        return next(v for v in self.read if not self.over_long(v).transferred)

    @cached_property
    def first_door_reject(self) -> str:
        return next(v for v in self.read if self.over_long(v).outcome == "rejected-at-door")

    @cached_property
    def leaking_policy(self) -> str:
        return self.over_long_rows[0].policy

    def policy_for(self, version: str | None) -> str | None:
        r = self.over_long(version) if version else None
        return r.policy if r else None

    def transfers(self, version: str) -> bool | None:
        r = self.over_long(version)
        return None if r is None else bool(r.transferred)

    # ------------------------------------------------------------------ inference
    def candidates(self) -> list[str]:
        """Every build read, plus 'later' (a build after newest_read)."""
        return list(self.read) + ["later"]

    def _has(self, field_row: Row, b: str) -> bool:
        if b == "later":
            return field_row.last is None
        return field_row.covers(b)

    def _shape_of(self, b: str) -> str:
        return self.dump_rows[-1].shape if b == "later" else self.dump_shape(b)

    def infer(self, *, shape: str | tuple[str, ...] | None = None, keys: Iterable[str] | None = None, complete: bool = False,
              lines: Iterable[str] = ()) -> BuildRange:
        """The builds a start's evidence allows. shape: the dump's shape (SHAPES; several when a cut dump
        cannot tell them apart); keys: its top-level keys
        (those of a cut dump too); complete: the dump is whole (not cut, and at least fewest_dump_fields
        keys long: not an excerpt), so an absent field is absent; lines: kinds of log lines seen in the
        start (log_line rows: each proves its build is at least `first`)."""
        cands = self.candidates()
        why: list[str] = []
        seen = False                       # any evidence at all (a dump, a build-specific line)

        def narrow(keep, reason: str) -> None:
            nonlocal cands
            kept = [b for b in cands if keep(b)]
            if len(kept) < len(cands):
                why.append(reason)
            cands = kept

        if shape is not None:
            shapes = (shape,) if isinstance(shape, str) else tuple(shape)
            if not set(shapes) <= set(SHAPES):
                raise ValueError(f"unknown dump shape {shape!r}")
            seen = True
            rows = [r for r in self.dump_rows if r.shape in shapes]
            narrow(lambda b: self._shape_of(b) in shapes,
                   f"server_args dump shaped {' or '.join(shapes)} ({', '.join(r.label for r in rows)})")
        if keys is not None:
            ks = set(keys)
            for name, f in self.fields.items():
                if name in ks:
                    narrow(lambda b, f=f: self._has(f, b), f"has {name} ({f.label})")
                elif complete:
                    narrow(lambda b, f=f: not self._has(f, b), f"no {name} in the whole dump ({f.label} has it)")
        for kind in sorted(set(lines)):
            row = self.log_lines.get(kind)
            if row is None:
                continue
            seen = True
            narrow(lambda b, row=row: b == "later" or version_key(b) >= version_key(row.first),
                   f"prints the {kind} line (from {row.first})")
        if not seen or not cands:
            note = () if not why else tuple(why) + ("no published build has all of these",)
            return BuildRange(None, None, False, None, note)
        opened = "later" in cands
        known = [b for b in cands if b != "later"]
        lo = known[0] if known else self.newest_read
        hi = known[-1] if known else self.newest_read
        return BuildRange(lo, hi, opened, None, tuple(why))

    def outcomes(self, rng: BuildRange) -> set[str]:
        """The over-long outcomes of every build a range allows."""
        if rng.exact:
            r = self.over_long(rng.exact)
            return {r.outcome} if r else set()
        if rng.lo is None:
            return set()
        out = {r.outcome for r in self.over_long_rows
               if any(r.covers(b) for b in self.read
                      if version_key(rng.lo) <= version_key(b) <= version_key(rng.hi))}
        if rng.open:
            out.add(self.over_long_rows[-1].outcome)
        return out

    def in_range(self, rng: BuildRange) -> list[str]:
        """The builds read that a range allows ('later' too when it is open)."""
        if rng.exact:
            return [rng.exact]
        if rng.lo is None:
            return []
        out = [b for b in self.read if version_key(rng.lo) <= version_key(b) <= version_key(rng.hi)]
        return out + (["later"] if rng.open else [])

    def env_default_of(self, name: str, rng: BuildRange) -> str | None:
        """The default of an environment variable over every build a range allows; None when they differ
        or the range is unknown."""
        vals = {self.env_default(name, self.newest_read if b == "later" else b) for b in self.in_range(rng)}
        return vals.pop() if len(vals) == 1 else None


@lru_cache(maxsize=1)
def load(path: str | None = None) -> BuildTable:
    p = Path(path) if path else PATH
    with open(p, "rb") as f:
        return BuildTable(tomllib.load(f), p)


TABLE = load()

__all__ = ["TABLE", "BuildTable", "BuildRange", "Evidence", "Row", "OUTCOMES", "SHAPES", "load", "normalise",
           "version_key"]
