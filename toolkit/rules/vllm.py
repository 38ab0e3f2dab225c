"""The vLLM lines kvir reads, release by release, from toolkit/rules/vllm.toml (read from each release's
wheel): the one place kvir keeps vLLM release knowledge.

    from kvir.rules.vllm import VLLM
    VLLM.forms("aborted", "0.32.0")        # the abort lines 0.32.0 prints (rows)
    VLLM.render(row)                        # its message, from the format string and the example arguments
    VLLM.prefix(row)                        # the logger prefix of the row's first release (an example)

The audit reads the start-up and refusal kinds (queries/audit/startup_lines.sql), the request-log adapter
the request and abort kinds (queries/adapters/vllm.sql); tests/audit/test_vllm_table.py renders every row
and checks its reader reads it. Versions compare as kvir.rules.builds compares them.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from kvir.rules.builds import normalise, version_key

PATH = Path(__file__).with_name("vllm.toml")
READERS = ("audit", "adapter", "none")
_POOL_LINE = {"kv-tokens": "`GPU KV cache size: N tokens` (CPU, XPU ... on other devices)", "v1-blocks": "`# GPU blocks: N`",
              "v0-blocks": "`# GPU blocks: N, # CPU blocks: M`"}
_FIELD = re.compile(r"\{[^{}]*\}")


@dataclass(frozen=True)
class Form:
    """One wording of one kind of line over releases [first, last] (last None: also every later release)."""

    kind: str
    reader: str
    reads: str
    first: str
    last: str | None
    format: str
    args: tuple[Any, ...]
    file: str
    function: str

    def covers(self, version: str) -> bool:
        k = version_key(version)
        return k is not None and version_key(self.first) <= k and (self.last is None or k <= version_key(self.last))

    @property
    def label(self) -> str:
        if self.last is None:
            return f">= {self.first}"
        return self.first if self.first == self.last else f"{self.first}–{self.last}"

    def render(self) -> str:
        """The message the code prints for `args`: %-style formats through %, f-string fields in order."""
        if _FIELD.search(self.format):
            vals = iter(self.args)
            return _FIELD.sub(lambda m: str(next(vals)), self.format)
        return self.format % self.args if self.args else self.format


@dataclass(frozen=True)
class Prefix:
    first: str
    last: str | None
    format: str
    example: str


class VllmTable:
    def __init__(self, data: dict[str, Any], path: Path | None = None):
        self.path = path
        src = data["sources"]
        self.read: tuple[str, ...] = tuple(src["read"])
        self.newest_read: str = src["newest_read"]
        self.how: str = src.get("how", "")
        self.prefixes = tuple(Prefix(str(p["first"]), p.get("last"), p["format"], p["example"]) for p in data["prefix"])
        self.forms = tuple(Form(d["kind"], d["reader"], d["reads"], str(d["first"]), d.get("last"), d["format"],
                                tuple(d.get("args", ())), d["file"], d["function"]) for d in data["line"])
        keys = [version_key(v) for v in self.read]
        assert None not in keys and keys == sorted(keys), "sources.read must be sorted versions"
        assert all(f.reader in READERS for f in self.forms)
        for v in self.read:
            assert sum(1 for p in self.prefixes if self._in(v, p.first, p.last)) == 1, f"{v}: one logger prefix per release"

    @staticmethod
    def _in(v: str, first: str, last: str | None) -> bool:
        k = version_key(v)
        return version_key(first) <= k and (last is None or k <= version_key(last))

    def forms_of(self, kind: str, version: str | None = None) -> list[Form]:
        """The wordings of `kind` (that `version` prints, when given)."""
        return [f for f in self.forms if f.kind == kind and (version is None or f.covers(self._known(version)))]

    def _known(self, version: str) -> str:
        """A version past the newest read is taken to print what the newest prints."""
        n = normalise(version) or version
        k = version_key(n)
        return self.newest_read if k is not None and k > version_key(self.newest_read) else n

    def slug(self, form: Form) -> str:
        """A file-name-safe name of a row: kind, first release and its place among rows of both."""
        same = [f for f in self.forms if (f.kind, f.first) == (form.kind, form.first)]
        return f"{form.kind}-{form.first.replace('.', '_')}-{same.index(form)}"

    def prefix(self, version: str) -> Prefix:
        v = self._known(version)
        return next(p for p in self.prefixes if self._in(v, p.first, p.last))

    def prints(self, version: str) -> set[str]:
        """The kinds of line a release prints (an unknown or unreadable version: none)."""
        if version_key(version) is None or version_key(version) < version_key(self.read[0]):
            return set()
        v = self._known(version)
        return {f.kind for f in self.forms if f.covers(v)}

    def missing_startup(self, version: str, seen: set[str]) -> list[str]:
        """The start-up lines `version` prints that a start's evidence lacks (audit line kinds `seen`): the KV
        pool line, and the concurrency line where the release prints it on a line of its own (0.6.3 to
        0.27.0; from 0.28.0 it is part of the KV cache size line)."""
        printed = self.prints(version)
        out = []
        pool_kinds = [k for k in ("kv-tokens", "v1-blocks", "v0-blocks") if k in printed]
        if pool_kinds and not seen & {"vllm_kv", "vllm_blocks"}:
            out.append("the KV pool line (this release prints " + " or ".join(_POOL_LINE[k] for k in pool_kinds) + ")")
        if "concurrency" in printed and "vllm_concurrency" not in seen:
            out.append("the concurrency line (`Maximum concurrency for N tokens per request: X.XXx`, printed with the pool)")
        return out


@lru_cache(maxsize=1)
def load(path: str | None = None) -> VllmTable:
    p = Path(path) if path else PATH
    with open(p, "rb") as f:
        return VllmTable(tomllib.load(f), p)


VLLM = load()

__all__ = ["VLLM", "Form", "Prefix", "VllmTable", "load"]
