"""The probe's HTTP client: one budget for every attempt, a wall-clock deadline, per-attempt timeouts,
retries with exponential backoff for 5xx and transport errors, 429 Retry-After honoured, bounded
concurrency. A reply keeps what the checks need (status, JSON, streamed chunks) in memory only.

A hostile or broken server gets no further: redirects are not followed (a tenant's key never travels to
another host), a reply over MAX_REPLY_BYTES is not read on (no usable answer), and JSON nested too deeply
to parse is no JSON (never a crash). What it echoes is scrubbed from every output (kvir.core.secrets)."""
from __future__ import annotations

import asyncio
import email.utils
import json
import random
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import httpx

from kvir.probe.config import ProbeOptions, Tenant


@dataclass
class Reply:
    method: str
    path: str
    request_id: str                       # the X-Request-Id the probe sent
    status: int | None = None             # None: no HTTP answer (timeout, transport error, not sent)
    body: Any = None                      # parsed JSON (or None)
    chunks: list[dict] | None = None      # parsed SSE events of a streamed 200
    error: str | None = None              # why there is no usable answer
    reached: bool = True                  # False: the last attempt never got a connection (refused, DNS, TLS)
    unusable: bool = False                # an HTTP answer came that could not be read (too big, endless, too deep)
    attempts: int = 0
    statuses: list[int | None] = field(default_factory=list)   # every attempt's status
    latency_s: float | None = None        # of the last attempt
    retry_waits: list[float] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def answered(self) -> bool:
        """A definite answer: 2xx or a 4xx other than 429."""
        return self.status is not None and self.status < 500 and self.status != 429


class Budget:
    """At most `max_requests` HTTP attempts, and nothing started after the deadline."""

    def __init__(self, max_requests: int, deadline_s: float):
        self.max_requests, self.deadline = max_requests, time.monotonic() + deadline_s
        self.sent = 0

    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()

    def take(self) -> str | None:
        if self.sent >= self.max_requests:
            return f"not sent: the request budget ({self.max_requests}) is spent"
        if self.remaining_s() <= 0:
            return "not sent: the deadline passed"
        self.sent += 1
        return None


# What latencies are measured with (a test installs a clock the fake server advances: deterministic timing)
clock = time.monotonic

MAX_REPLY_BYTES = 16 << 20       # the probe's answers are small: an API reply this large is not read on


class Unusable(Exception):
    """A reply the probe does not read on (too large)."""


def retry_after_s(value: str | None) -> float | None:
    """Retry-After as seconds (a number or an HTTP date), None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class Client:
    def __init__(self, opts: ProbeOptions, budget: Budget, on_attempt: Callable[[], None] | None = None,
                 run_id: str = "run"):
        self.opts, self.budget, self.on_attempt = opts, budget, on_attempt or (lambda: None)
        self.base = opts.base_url
        self.sem = asyncio.Semaphore(opts.concurrency)
        self._seq = 0
        self.run_id = run_id
        self.http = httpx.AsyncClient(headers=opts.common_headers(), params=opts.query_params, follow_redirects=False,
                                      timeout=httpx.Timeout(opts.timeout_s),
                                      limits=httpx.Limits(max_connections=max(2, opts.concurrency + 2)))
        self._rng = random.Random()
        self.outcomes: dict[tuple[str, str], int] = {}    # (path, "HTTP 401" or why no answer) -> attempts

    async def close(self) -> None:
        await self.http.aclose()

    def next_id(self) -> str:
        self._seq += 1
        return f"kvir-probe-{self.run_id}-{self._seq:04d}"

    async def call(self, method: str, path: str, *, body: dict | None = None, tenant: Tenant | None = None,
                   stream: bool = False, retry: bool = True) -> Reply:
        rep = Reply(method, path, self.next_id())
        headers = {"X-Request-Id": rep.request_id, **(tenant.headers() if tenant else {})}
        while True:
            why = self.budget.take()
            if why:
                rep.error = why if rep.attempts == 0 else f"{rep.error or 'failed'}; retry {why.removeprefix('not sent: ')}"
                return rep
            rep.attempts += 1
            timeout = max(0.05, min(self.opts.timeout_s, self.budget.remaining_s()))
            status, hdrs = None, {}
            try:
                async with self.sem:
                    t0 = clock()
                    status, hdrs, rep.body, rep.chunks = await asyncio.wait_for(
                        self._once(method, path, body, headers, stream), timeout)
                    rep.latency_s = clock() - t0
                rep.error = None if status < 500 and status != 429 else f"HTTP {status}"
            except (asyncio.TimeoutError, httpx.TimeoutException, httpx.HTTPError) as e:
                rep.error, rep.reached = transport_failure(e, timeout)
                rep.body = rep.chunks = None
            except Unusable as e:          # the server answered, unusably (too big, endless)
                rep.error, status, hdrs, rep.reached, rep.unusable = str(e), None, {}, True, True
                rep.body = rep.chunks = None
            finally:
                self.on_attempt()
            rep.status = status
            if status is not None:
                rep.reached = True
            key = (path, f"HTTP {status}" if status is not None else rep.error or "no answer")
            self.outcomes[key] = self.outcomes.get(key, 0) + 1
            rep.statuses.append(status)
            if rep.answered or not retry or rep.attempts > self.opts.retries:
                return rep
            wait = retry_after_s(hdrs.get("retry-after")) if status == 429 else None
            if wait is None:
                wait = self.opts.backoff_s * 2 ** (rep.attempts - 1) * (0.8 + 0.4 * self._rng.random())
            if wait > self.opts.max_retry_after_s or wait >= self.budget.remaining_s():
                rep.error = f"{rep.error}; the next retry (in {wait:.1f} s) would pass the deadline or --max-retry-after"
                return rep
            rep.retry_waits.append(wait)
            await asyncio.sleep(wait)

    async def _once(self, method: str, path: str, body: dict | None, headers: dict, stream: bool):
        url = self.base + path
        async with self.http.stream(method, url, json=body, headers=headers) as r:
            if not stream or r.status_code != 200 or "text/event-stream" not in r.headers.get("content-type", ""):
                return r.status_code, r.headers, _json(await _read_capped(r)), None
            chunks: list[dict] = []
            async for line in _lines_capped(r):
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                ev = _json(data.encode())
                if isinstance(ev, dict):
                    if isinstance(ev.get("error"), dict) or ev.get("object") == "error":
                        # SGLang (and others) answer a refused streamed request with HTTP 200 and an error
                        # event: the event's code is the real answer.
                        err = ev["error"] if isinstance(ev.get("error"), dict) else ev
                        code = err.get("code")
                        status = code if isinstance(code, int) and 400 <= code < 600 else 500
                        return status, r.headers, {"error": err, "sse_error_event": True}, None
                    chunks.append(ev)
            return r.status_code, r.headers, None, chunks


async def _read_capped(r: httpx.Response) -> bytes:
    buf = bytearray()
    async for block in r.aiter_bytes():
        buf += block
        if len(buf) > MAX_REPLY_BYTES:
            raise Unusable(f"reply of HTTP {r.status_code} over {MAX_REPLY_BYTES >> 20} MiB: not read on")
    return bytes(buf)


async def _lines_capped(r: httpx.Response):
    """The lines of a streamed reply (text), at most MAX_REPLY_BYTES of it in all."""
    seen, rest = 0, b""
    async for block in r.aiter_bytes():
        seen += len(block)
        if seen > MAX_REPLY_BYTES:
            raise Unusable(f"stream over {MAX_REPLY_BYTES >> 20} MiB: not read on")
        *lines, rest = (rest + block).split(b"\n")
        for line in lines:
            yield line.rstrip(b"\r").decode("utf-8", "replace")
    if rest:
        yield rest.rstrip(b"\r").decode("utf-8", "replace")


HINT = {401: "the API key was refused: check --api-key-env, --tenant-b-key-env, --header-env",
        403: "forbidden: check the keys and the gateway's headers (--header-env)",
        404: "not found: check --endpoint (with or without /v1) and --model",
        429: "rate-limited: lower --concurrency, raise --deadline"}


def failed_first(outcomes: dict[tuple[str, str], int]) -> str | None:
    """When no attempt of a run got a 2xx answer: what every attempt got instead, the commonest first
    ('HTTP 401 on 24 of 24 requests (/tokenize, /v1/models, ...): the API key was refused: ...')."""
    total = sum(outcomes.values())
    if not total or any(k[1].startswith("HTTP 2") for k in outcomes):
        return None
    by_what: dict[str, list] = {}
    for (path, what), n in outcomes.items():
        by_what.setdefault(what, []).append((n, path))
    what, hits = max(by_what.items(), key=lambda kv: sum(n for n, _ in kv[1]))
    n = sum(k for k, _ in hits)
    paths = ", ".join(p for _, p in sorted(hits, reverse=True)[:3]) + (", ..." if len(hits) > 3 else "")
    code = int(what[5:]) if what.startswith("HTTP ") else None
    hint = HINT.get(code) or ("server errors" if code and code >= 500 else "")
    return (f"no request was served: {what} on {n} of {total} request{'s' if total != 1 else ''} ({paths})"
            + (f": {hint}" if hint else ""))


def transport_failure(e: BaseException, timeout_s: float) -> tuple[str, bool]:
    """What failed when no HTTP answer came, in the words a person checks first (connection refused, DNS,
    TLS, timeout), and whether a connection was made at all. Read from the exception and its causes
    (httpx wraps the socket's and the ssl module's own errors)."""
    chain, x = [], e
    while x is not None and len(chain) < 8:
        chain.append(x)
        x = x.__cause__ or x.__context__
    for x in chain:
        if isinstance(x, ConnectionRefusedError):
            return "connection refused", False
        if isinstance(x, socket.gaierror):
            return f"DNS: the host name does not resolve ({x.strerror or x})", False
        if isinstance(x, ssl.SSLCertVerificationError):
            return f"TLS: the server's certificate is not trusted ({x.verify_message or x.reason})", False
        if isinstance(x, ssl.SSLError):
            return f"TLS: the handshake failed ({x.reason or x}; plain HTTP on an https:// URL?)", False
    if isinstance(e, httpx.ConnectTimeout):
        return f"timeout: no connection within {timeout_s:.1f} s", False
    if isinstance(e, (asyncio.TimeoutError, httpx.TimeoutException)):
        return f"timeout: connected, but no answer within {timeout_s:.1f} s", True
    if isinstance(e, httpx.RemoteProtocolError):
        return "the server closed the connection without an HTTP answer", True
    if isinstance(e, httpx.ConnectError):
        return f"cannot connect ({' '.join(str(e).split()) or type(e).__name__})", False
    return f"transport error: {type(e).__name__}", True


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):   # RecursionError: nesting too deep to parse
        return None


def output_text(rep: Reply) -> tuple[str, list[str]]:
    """The generated text of a completion or chat reply, and its streamed pieces (one per chunk)."""
    pieces: list[str] = []
    if rep.chunks is not None:
        for ev in rep.chunks:
            for ch in ev.get("choices") or []:
                if not isinstance(ch, dict):
                    continue
                t = ch.get("text")
                if t is None:
                    t = (ch.get("delta") or {}).get("content")
                if isinstance(t, str) and t:
                    pieces.append(t)
        return "".join(pieces), pieces
    body = rep.body if isinstance(rep.body, dict) else {}
    texts = []
    for ch in body.get("choices") or []:
        if isinstance(ch, dict):
            t = ch.get("text")
            if t is None:
                t = (ch.get("message") or {}).get("content")
            if isinstance(t, str):
                texts.append(t)
    return "".join(texts), []


def usage_of(rep: Reply) -> dict:
    """usage of a reply (the last streamed chunk that carries one)."""
    if rep.chunks is not None:
        for ev in reversed(rep.chunks):
            if isinstance(ev.get("usage"), dict):
                return ev["usage"]
        return {}
    body = rep.body if isinstance(rep.body, dict) else {}
    return body.get("usage") if isinstance(body.get("usage"), dict) else {}


def response_id(rep: Reply) -> str | None:
    src = rep.chunks[0] if rep.chunks else rep.body
    rid = src.get("id") if isinstance(src, dict) else None
    return rid if isinstance(rid, str) else None


def error_kind(rep: Reply) -> str | None:
    """What an error body blames, as a word (never the message text): context, input, max_tokens, other."""
    b = rep.body if isinstance(rep.body, dict) else {}
    err = b.get("error") if isinstance(b.get("error"), dict) else b
    msg = str(err.get("message") or "").lower()
    param = str(err.get("param") or "").lower()
    if not msg and not param:
        return None
    if "context length" in msg or param == "input_tokens":
        return "context"
    if "maximum allowed length" in msg or "exceeds the maximum" in msg or "too long" in msg:
        return "input"
    if "max_tokens" in msg or param == "max_tokens":
        return "max_tokens"
    return "other"
