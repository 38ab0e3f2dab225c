"""The OpenAI-compatible API over ServeEngine (FastAPI): /v1/completions, /v1/chat/completions (both also
streamed), /tokenize, /get_server_info (and /server_info), /v1/models, /version, /health.

One tenant per API key (`Authorization: Bearer KEY`): a configured key names its tenant, otherwise every
distinct key is its own tenant, named by a SHA-256 prefix of the key. Generation and /tokenize need a key;
the read-only info routes do not. Errors have SGLang's shape: {"object": "error", "message", "type",
"param", "code"}. Nothing here logs or keeps prompt or output text.

Every handler is a module-level function of the request; what they share (the config, the engine, the
request ids in use) is one `ServeState` on `app.state.serve`. The pure steps (tenant, body, prompt ids,
max_tokens, salt, the response body) are plain functions, tested alone (tests/probe/test_serve_app.py).
"""
from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from kvir.serve.config import ServeConfig
from kvir.serve.engine import Generation, ServeEngine
from kvir.serve.tokenizer import Detokenizer, decode, encode, encode_chat, valid_ids

MAX_BODY_BYTES = 32 * 2 ** 20          # a 1M-token prompt is ~1 MB of text or ~8 MB of ids
MAX_SALT_CHARS = 128                   # vLLM's validate_cache_salt: non-empty, <= 128 chars, no @ / \\ NUL
SALT_FORBIDDEN = set("@/\\\0")
ERROR_TYPES = {400: "BadRequestError", 401: "AuthenticationError", 404: "NotFoundError", 413: "BadRequestError",
               503: "ServiceUnavailableError"}


class BadRequest(Exception):
    """A request the API refuses: status, message, and the parameter it blames."""

    def __init__(self, status: int, message: str, param: str | None = None):
        super().__init__(message)
        self.status, self.message, self.param = status, message, param


class RequestIds:
    """Response ids in use, unique among the last `keep` (older ones are forgotten, so the set never grows
    without bound on a long-running server)."""

    def __init__(self, keep: int = 100_000):
        self._order: deque[str] = deque()
        self._set: set[str] = set()
        self._n = itertools.count(1)
        self.keep = keep

    def __len__(self) -> int:
        return len(self._set)

    def new(self, prefix: str, base: str | None) -> str:
        rid = f"{prefix}-{base or uuid.uuid4().hex[:16]}"
        if rid in self._set:
            rid = f"{rid}-{next(self._n)}"
        self._order.append(rid)
        self._set.add(rid)
        while len(self._order) > self.keep:
            self._set.discard(self._order.popleft())
        return rid


@dataclass
class ServeState:
    cfg: ServeConfig
    engine: ServeEngine
    ids: RequestIds = field(default_factory=RequestIds)


def error(status: int, message: str, param: str | None = None) -> JSONResponse:
    return JSONResponse({"object": "error", "message": message, "type": ERROR_TYPES.get(status, "InternalServerError"),
                         "param": param, "code": status}, status_code=status)


def key_tenant(key: str) -> str:
    return "key-" + hashlib.sha256(key.encode()).hexdigest()[:12]


def tenant_of(cfg: ServeConfig, authorization: str | None) -> str | None:
    """The tenant of an Authorization header (None: no key, or a key not configured)."""
    auth = authorization or ""
    key = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
    if not key:
        return None
    if cfg.tenants:
        return cfg.tenants.get(key)
    return key_tenant(key)


def parse_body(raw: bytes) -> dict:
    """A JSON object, or BadRequest (never a 500: a nesting too deep for the parser is the client's error)."""
    try:
        body = json.loads(raw)
    except RecursionError:
        raise BadRequest(400, "The request body is nested too deeply.") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BadRequest(400, "The request body must be a JSON object.") from None
    if not isinstance(body, dict):
        raise BadRequest(400, "The request body must be a JSON object.")
    return body


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> dict:
    size = request.headers.get("content-length")
    if size and size.isdigit() and int(size) > limit:
        raise BadRequest(413, f"The request body is larger than {limit:,} bytes.")
    chunks, n = [], 0
    async for chunk in request.stream():
        n += len(chunk)
        if n > limit:
            raise BadRequest(413, f"The request body is larger than {limit:,} bytes.")
        chunks.append(chunk)
    return parse_body(b"".join(chunks))


def prompt_ids(body: dict, chat: bool, vocab: int) -> list[int]:
    """Token ids of the request (one prompt per request)."""
    if chat:
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs or not all(isinstance(m, dict) for m in msgs):
            raise BadRequest(400, "messages must be a non-empty list of objects", "messages")
        return encode_chat(msgs)
    p = body.get("prompt")
    if isinstance(p, list) and len(p) == 1 and isinstance(p[0], str):
        p = p[0]
    if isinstance(p, str):
        return encode(p, bool(body.get("add_special_tokens", True)))
    if isinstance(p, list) and p and valid_ids(p, vocab):
        return [int(t) for t in p]
    raise BadRequest(400, "prompt must be a string or a list of token ids (one prompt per request)", "prompt")


def max_tokens_of(body: dict, chat: bool, default: int) -> int:
    v = body.get("max_completion_tokens" if chat and "max_completion_tokens" in body else "max_tokens")
    if v is None:
        return default
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise BadRequest(400, "max_tokens must be a positive integer", "max_tokens")
    return v


def salt_of(body: dict) -> str | None:
    """vLLM's `cache_salt` (validate_cache_salt's rule)."""
    s = body.get("cache_salt")
    if s is None:
        return None
    if not isinstance(s, str) or not s or len(s) > MAX_SALT_CHARS or SALT_FORBIDDEN & set(s):
        raise BadRequest(400, "Parameter 'cache_salt' must be a non-empty string of at most 128 characters "
                              "without '@', '/', '\\' or NUL.", "cache_salt")
    return s


def usage_of(g: Generation, prompt_tokens: int, extra: dict[str, Any]) -> dict:
    """OpenAI's usage, plus what the mechanisms' targets add (ServeEngine.usage)."""
    return {"prompt_tokens": prompt_tokens, "completion_tokens": len(g.tokens),
            "total_tokens": prompt_tokens + len(g.tokens), **extra}


def completion_body(g: Generation, rid: str, created: int, model: str, chat: bool, usage: dict) -> dict:
    text = decode(g.tokens)
    if chat:
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}
    else:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": "length"}
    return {"id": rid, "object": "chat.completion" if chat else "text_completion", "created": created, "model": model,
            "choices": [choice], "usage": usage}


def _state(request: Request) -> ServeState:
    return request.app.state.serve


async def generate(request: Request, chat: bool) -> Response:
    st = _state(request)
    cfg, eng = st.cfg, st.engine
    tenant = tenant_of(cfg, request.headers.get("authorization"))
    if tenant is None:
        return error(401, "Missing or unknown API key (Authorization: Bearer KEY).")
    try:
        body = await read_body(request)
        model = body.get("model")
        if model not in (None, cfg.model):
            raise BadRequest(404, f"The model `{model}` does not exist.", "model")
        ids = prompt_ids(body, chat, eng.vocab)
        n = max_tokens_of(body, chat, cfg.default_max_tokens)
        salt = salt_of(body)
    except BadRequest as e:
        return error(e.status, e.message, e.param)
    base = request.headers.get("x-request-id") or body.get("request_id") or body.get("rid")
    rid = st.ids.new("chatcmpl" if chat else "cmpl", base if isinstance(base, str) else None)
    g: Generation = await asyncio.wrap_future(eng.submit(tenant, ids, n, rid, salt=salt))
    if g.http_status != 200:
        return error(g.http_status, g.message or "Request failed.")
    usage = usage_of(g, eng.reported_prompt_tokens(g), eng.usage(g))
    created = int(time.time())
    if body.get("stream"):
        opts = body.get("stream_options")
        include_usage = bool(opts.get("include_usage")) if isinstance(opts, dict) else False
        return StreamingResponse(_sse(g, rid, created, cfg.model, chat, usage, include_usage),
                                 media_type="text/event-stream")
    return JSONResponse(completion_body(g, rid, created, cfg.model, chat, usage))


async def completions(request: Request) -> Response:
    return await generate(request, chat=False)


async def chat_completions(request: Request) -> Response:
    return await generate(request, chat=True)


async def tokenize(request: Request) -> Response:
    st = _state(request)
    if tenant_of(st.cfg, request.headers.get("authorization")) is None:
        return error(401, "Missing or unknown API key (Authorization: Bearer KEY).")
    try:
        body = await read_body(request)
        ids = prompt_ids(body, "messages" in body, st.engine.vocab)
    except BadRequest as e:
        return error(e.status, e.message, e.param)
    return JSONResponse({"count": len(ids), "max_model_len": st.cfg.context, "tokens": ids})


async def server_info(request: Request) -> dict:
    return _state(request).engine.server_info()


async def models(request: Request) -> dict:
    m = _state(request).cfg
    return {"object": "list", "data": [{"id": m.model, "object": "model", "created": 0, "owned_by": "kvir-serve",
                                        "root": m.model, "max_model_len": m.context}]}


async def version(request: Request) -> dict:
    return {"version": _state(request).engine.server_info()["version"]}


async def health(request: Request) -> Response:
    return Response(status_code=200)


ROUTES = (("/v1/completions", completions, "POST"), ("/v1/chat/completions", chat_completions, "POST"),
          ("/tokenize", tokenize, "POST"), ("/get_server_info", server_info, "GET"),
          ("/server_info", server_info, "GET"), ("/v1/models", models, "GET"), ("/version", version, "GET"),
          ("/health", health, "GET"))


def create_app(cfg: ServeConfig, engine: ServeEngine | None = None) -> FastAPI:
    eng = engine or ServeEngine(cfg)
    app = FastAPI(title="kvir serve", version=eng.server_info()["version"], docs_url=None, redoc_url=None)
    app.state.engine = eng
    app.state.serve = ServeState(cfg, eng)
    for path, fn, method in ROUTES:
        app.add_api_route(path, fn, methods=[method])
    return app


async def _sse(g: Generation, rid: str, created: int, model: str, chat: bool, usage: dict, include_usage: bool):
    obj = "chat.completion.chunk" if chat else "text_completion"

    def chunk(piece: str | None, finish: str | None, first: bool = False) -> bytes:
        if chat:
            delta: dict[str, Any] = {"role": "assistant", "content": ""} if first else (
                {"content": piece} if piece is not None else {})
            choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
        else:
            choice = {"index": 0, "text": piece or "", "logprobs": None, "finish_reason": finish}
        return b"data: " + json.dumps({"id": rid, "object": obj, "created": created, "model": model,
                                       "choices": [choice]}).encode() + b"\n\n"

    if chat:
        yield chunk(None, None, first=True)
    d = Detokenizer()
    for i, t in enumerate(g.tokens):
        piece = d.push(t) + (d.flush() if i == len(g.tokens) - 1 else "")
        yield chunk(piece, "length" if i == len(g.tokens) - 1 else None)
        await asyncio.sleep(0)
    if include_usage:
        yield b"data: " + json.dumps({"id": rid, "object": obj, "created": created, "model": model, "choices": [],
                                      "usage": usage}).encode() + b"\n\n"
    yield b"data: [DONE]\n\n"
