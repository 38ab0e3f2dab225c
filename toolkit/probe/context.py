"""What every check shares while a probe runs: the client, the facts, the prompt builder, the request log,
and the canary index. `send` is the one way a check sends a generation request; it records the request
(ids, lengths, statuses, hashes: never text) in the run's log."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from kvir.probe.canary import CanaryIndex, digest
from kvir.probe.config import ProbeOptions, Tenant
from kvir.probe.http import Client, Reply, error_kind, output_text, response_id, usage_of
from kvir.probe.learn import ServerFacts
from kvir.probe.prompts import Prompt, PromptBuilder


@dataclass
class Sent:
    """One generation request as the checks see it: the reply, and its output (in memory only)."""

    reply: Reply
    prompt: Prompt
    tenant: Tenant
    record: dict
    text: str = ""
    pieces: list[str] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        return [x for x in (self.record.get("response_id"), self.record["request_id"]) if x]


@dataclass
class Context:
    opts: ProbeOptions
    client: Client
    facts: ServerFacts
    builder: PromptBuilder
    model: str | None
    index: CanaryIndex
    log: list[dict] = field(default_factory=list)
    outputs: list[Sent] = field(default_factory=list)      # every generation reply, for the canary scan
    t0: float = field(default_factory=time.monotonic)

    @property
    def path(self) -> str:
        return "/v1/chat/completions" if self.opts.api == "chat" else "/v1/completions"

    async def send(self, check: str, purpose: str, tenant: Tenant, prompt: Prompt, *, max_tokens: int,
                   stream: bool = False, label: str = "", extra: dict[str, Any] | None = None) -> Sent:
        """`extra`: more body fields (a cache_salt); only their names reach the log."""
        body: dict[str, Any] = prompt.body(self.opts.api, self.model)
        body.update({"max_tokens": max_tokens, "temperature": 0, "user": tenant.user, **(extra or {})})
        if stream:
            body.update({"stream": True, "stream_options": {"include_usage": True}})
        t_start = time.monotonic() - self.t0
        rep = await self.client.call("POST", self.path, body=body, tenant=tenant, stream=stream)
        text, pieces = output_text(rep) if rep.ok else ("", [])
        usage = usage_of(rep) if rep.ok else {}
        rec = {
            "seq": len(self.log) + 1, "check": check, "purpose": purpose, "label": label, "tenant": tenant.label,
            "request_id": rep.request_id, "response_id": response_id(rep), "path": self.path, "stream": stream,
            "target_tokens": prompt.target, "sent_tokens": prompt.tokens, "exact": prompt.exact,
            "max_tokens": max_tokens, "http_status": rep.status, "attempts": rep.attempts,
            "statuses": rep.statuses, "error": rep.error, "error_kind": None if rep.ok else error_kind(rep),
            "prompt_tokens": _int(usage.get("prompt_tokens")), "completion_tokens": _int(usage.get("completion_tokens")),
            "cached_tokens": cached_tokens(usage), "extra_fields": sorted(extra or {}),
            "latency_s": None if rep.latency_s is None else round(rep.latency_s, 4),
            "started_s": round(t_start, 3), "prompt_sha256": digest(prompt.text),
            "output_sha256": digest(text) if rep.ok else None, "output_chars": len(text) if rep.ok else None,
            "chunks": len(pieces) if stream and rep.ok else None,
        }
        self.log.append(rec)
        sent = Sent(rep, prompt, tenant, rec, text, pieces)
        self.outputs.append(sent)
        return sent


def cached_tokens(usage: dict) -> int | None:
    """usage.prompt_tokens_details.cached_tokens (OpenAI's shape: vLLM with --enable-prompt-tokens-details,
    SGLang with --enable-cache-report); None when the server does not report it."""
    details = usage.get("prompt_tokens_details")
    return _int(details.get("cached_tokens")) if isinstance(details, dict) else None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None
