"""Canaries: unique high-entropy strings one tenant plants, and an n-gram index that finds any fragment of
any of them in another tenant's output.

A canary is 32 characters of base32 (160 bits from `secrets`). Tenant A's prompt repeats it, separated by
spaces, so a response that returns any stretch of A's KV returns canary text. The index holds every
k-character window (k = fragment_chars, 12 by default: at least 11 canary characters, about 55 bits) of
the cyclic strings "canary " and "canary", so a fragment is found wherever it starts, across repetitions,
and again after whitespace is removed and case folded (an engine or gateway that rewrites spacing).
Overlapping windows are merged into one fragment. A random text matches a window with probability about
(windows / 32^k): negligible. Canary and output text are never returned: hashes, lengths, offsets only.
"""
from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
LENGTH = 32


def new_canary() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))


def digest(text: str) -> str:
    """The one way canary, prompt and output text appear anywhere: a SHA-256 prefix."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def plant_text(canary: str, repeats: int) -> str:
    return " ".join([canary] * max(1, repeats))


@dataclass(frozen=True)
class Planted:
    canary_sha: str
    tenant: str                  # the planting tenant's label
    tenant_key: str | None       # its key's fingerprint
    request_ids: tuple[str, ...]  # the planting requests (the ids the probe sent and the server answered)


@dataclass(frozen=True)
class Hit:
    canary_sha: str
    planted: Planted
    chars: int                   # length of the fragment found
    offset: int                  # where it starts in the output (normalised output when normalised)
    normalised: bool             # found only after removing whitespace and folding case
    fragment_sha: str


class CanaryIndex:
    def __init__(self, k: int = 12):
        self.k = k
        self._raw: dict[str, int] = {}
        self._norm: dict[str, int] = {}
        self._canaries: list[tuple[str, Planted]] = []

    def __len__(self) -> int:
        return len(self._canaries)

    def add(self, canary: str, planted: Planted) -> None:
        i = len(self._canaries)
        self._canaries.append((canary, planted))
        for cyc, table in ((canary + " ", self._raw), (canary.lower(), self._norm)):
            doubled = cyc * (self.k // len(cyc) + 2)
            for s in range(len(cyc)):
                table.setdefault(doubled[s: s + self.k], i)

    def _runs(self, text: str, table: dict[str, int]) -> list[tuple[int, int, int]]:
        """(canary index, start, end) of merged runs of matching windows."""
        k, out = self.k, []
        cur: list[int] | None = None
        for s in range(len(text) - k + 1):
            i = table.get(text[s: s + k])
            if i is not None and cur is not None and cur[0] == i and s <= cur[2]:
                cur[2] = s + k
            else:
                if cur is not None:
                    out.append(tuple(cur))
                cur = [i, s, s + k] if i is not None else None
        if cur is not None:
            out.append(tuple(cur))
        return out  # type: ignore[return-value]

    def scan(self, text: str) -> list[Hit]:
        hits: list[Hit] = []
        found: set[int] = set()
        for i, a, b in self._runs(text, self._raw):
            found.add(i)
            hits.append(self._hit(i, text[a:b], a, False))
        norm = re.sub(r"\s+", "", text).lower()
        for i, a, b in self._runs(norm, self._norm):
            if i not in found:
                hits.append(self._hit(i, norm[a:b], a, True))
        return hits

    def _hit(self, i: int, fragment: str, offset: int, normalised: bool) -> Hit:
        canary, planted = self._canaries[i]
        return Hit(planted.canary_sha, planted, len(fragment), offset, normalised, digest(fragment))
