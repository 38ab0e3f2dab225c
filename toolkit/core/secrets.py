"""Secrets never reach an output, whatever field they come back in.

A server can echo what it was sent: an Authorization header put into a model id, an error message, a
response body. kvir scrubs every output built from such answers (JSON, SARIF, case rows, the terminal) with
one Redactor holding the run's secrets (API keys, gateway header values): each occurrence, in any string
and any mapping key, and in the forms a serializer writes it (JSON-escaped), becomes `[redacted]`.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 4     # shorter values are no credential, and would blank out ordinary words


class Redactor:
    def __init__(self, secrets: list[str] | tuple[str, ...] = ()):
        forms: set[str] = set()
        for s in secrets:
            if s and len(s) >= MIN_SECRET_CHARS:
                forms.add(s)
                forms.add(json.dumps(s)[1:-1])          # as a JSON string holds it (escaped)
        self.forms = sorted(forms, key=len, reverse=True)   # longest first: a key inside a longer secret
        self.count = 0                                       # occurrences replaced so far

    def __bool__(self) -> bool:
        return bool(self.forms)

    def text(self, s: str) -> str:
        for f in self.forms:
            if f in s:
                self.count += s.count(f)
                s = s.replace(f, REDACTED)
        return s

    def obj(self, v: Any) -> Any:
        """A copy of v with every string (and mapping key) scrubbed."""
        if not self.forms:
            return v
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, dict):
            return {self.obj(k): self.obj(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(self.obj(x) for x in v) if isinstance(v, list) else tuple(self.obj(x) for x in v)
        if isinstance(v, (set, frozenset)):
            return type(v)(self.obj(x) for x in v)
        return v

    def scrub(self, v: Any) -> Any:
        """v scrubbed in place where it is a dataclass (each field), else as obj()."""
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            for f in dataclasses.fields(v):
                setattr(v, f.name, self.scrub(getattr(v, f.name)))
            return v
        if isinstance(v, list):
            return [self.scrub(x) for x in v]
        if isinstance(v, dict):
            return {self.obj(k): self.scrub(x) for k, x in v.items()}
        return self.obj(v)
