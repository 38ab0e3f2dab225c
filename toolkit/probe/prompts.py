"""Prompts of exact token counts, counted by the server's own /tokenize (or a local tokenizer.json).

A prompt is a short prefix, n copies of a filler unit and a few pad characters. Two counts calibrate tokens per
unit; then each target is built, counted and adjusted (units for large differences, pads for small ones)
until the count is the target or the tries run out (the prompt is then marked inexact and its real count
used). What is sent is always the counted text: `tokens` is the server's count of exactly that text,
with the special tokens the completion route adds (vLLM and SGLang count BOS in both).
"""
from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from typing import Any

from kvir.probe.config import ProbeOptions
from kvir.probe.http import Client

UNIT = " the"
PAD = "."
MAX_TRIES = 8


@dataclass
class Prompt:
    text: str
    tokens: int | None          # the tokenizer's count of `text` as sent (None: could not be counted)
    target: int | None = None
    exact: bool = False

    def body(self, api: str, model: str | None) -> dict[str, Any]:
        b: dict[str, Any] = {"messages": [{"role": "user", "content": self.text}]} if api == "chat" else {"prompt": self.text}
        if model:
            b["model"] = model
        return b


class Counter:
    """Counts tokens of a prompt text as the completion (or chat) route will see it."""

    def __init__(self, opts: ProbeOptions, client: Client | None, model: str | None):
        self.opts, self.client, self.model = opts, client, model
        self.local = _local(opts.tokenizer) if opts.tokenizer else None
        self.failure: str | None = None

    @property
    def source(self) -> str:
        return f"local tokenizer {self.opts.tokenizer}" if self.local else "the server's /tokenize"

    async def count(self, text: str) -> int | None:
        if self.local is not None:
            return len(self.local.encode(text).ids)
        assert self.client is not None
        body: dict[str, Any] = ({"messages": [{"role": "user", "content": text}], "add_generation_prompt": True}
                                if self.opts.api == "chat" else {"prompt": text})
        if self.model:
            body["model"] = self.model
        rep = await self.client.call("POST", "/tokenize", body=body, tenant=self.opts.tenant_a)
        n = rep.body.get("count") if rep.ok and isinstance(rep.body, dict) else None
        if not isinstance(n, int) and rep.ok and isinstance(rep.body, dict) and isinstance(rep.body.get("tokens"), list):
            n = len(rep.body["tokens"])
        if not isinstance(n, int):
            self.failure = rep.error or f"/tokenize answered HTTP {rep.status} without a count"
            return None
        return n


def _local(path: str):
    try:
        from tokenizers import Tokenizer
    except ImportError:
        from kvir.core.errors import KvirError

        raise KvirError("--tokenizer needs the `tokenizers` package (pip install tokenizers)") from None
    return Tokenizer.from_file(path)


class PromptBuilder:
    def __init__(self, counter: Counter, tag: str, like: "PromptBuilder | None" = None):
        """`like`: reuse another builder's calibration (same prefix length, another tag)."""
        self.counter = counter
        self.prefix = f"probe {tag}:"
        self._per: float | None = like._per if like else None
        self._base: float | None = like._base if like else None
        self._cache: dict[int, Prompt] = {}

    @staticmethod
    def _text(prefix: str, units: int, dots: int = 0) -> str:
        return prefix + UNIT * max(0, units) + PAD * dots

    async def _calibrate(self) -> bool:
        if self._per is not None:
            return True
        a = await self.counter.count(self._text(self.prefix, 64))
        b = await self.counter.count(self._text(self.prefix, 192)) if a is not None else None
        if a is None or b is None or b <= a:
            return False
        self._per = (b - a) / 128
        self._base = a - 64 * self._per
        return True

    async def build(self, target: int) -> Prompt:
        """A prompt of `target` tokens (or the closest found, marked inexact; tokens None if uncountable)."""
        if target in self._cache:
            return self._cache[target]
        if not await self._calibrate():
            return Prompt("", None, target)
        assert self._per is not None and self._base is not None
        per = self._per
        units, dots = max(0, math.floor((target - self._base) / per)), 0
        best: Prompt | None = None
        for _ in range(MAX_TRIES):
            text = self._text(self.prefix, units, dots)
            n = await self.counter.count(text)
            if n is None:
                break
            if best is None or (abs(n - target), n > target) < (abs((best.tokens or 0) - target), (best.tokens or 0) > target):
                best = Prompt(text, n, target, n == target)
            diff = target - n
            if diff == 0:
                break
            if abs(diff) >= per:                       # whole units first
                units += math.floor(diff / per) if diff > 0 else -math.ceil(-diff / per)
            elif diff > 0:
                dots += diff                           # then single pad characters
            elif dots:
                dots = max(0, dots + diff)
            else:
                units -= 1
        best = best or Prompt("", None, target)
        self._cache[target] = best
        return best


def new_tag() -> str:
    """A short random tag, so each run's prompts differ (none is served from the cache of an earlier run)."""
    return secrets.token_hex(3)
