"""The OpenAI-compatible API over ServeEngine (FastAPI): /v1/completions, /v1/chat/completions (both also
streamed), /tokenize, /get_server_info (and /server_info), /v1/models, /version, /health.

One tenant per API key (`Authorization: Bearer KEY`): a configured key names its tenant, otherwise every
distinct key is its own tenant, named by a SHA-256 prefix of the key. Generation needs a key; the
read-only routes do not. Errors have SGLang's shape: {"object": "error", "message", "type", "param", "code"}.
Nothing here logs or keeps prompt or output text.
"""
import asyncio
import hashlib
import itertools
import json
import time
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from kvir.serve.engine import Generation, ServeConfig, ServeEngine
from kvir.serve.tokenizer import Detokenizer, decode, encode, encode_chat, valid_ids


def key_tenant(key: str) -> str:
    return "key-" + hashlib.sha256(key.encode()).hexdigest()[:12]


def create_app(cfg: ServeConfig, engine: ServeEngine | None = None):
    eng = engine or ServeEngine(cfg)
    app = FastAPI(title="kvir serve", version=eng.build.name, docs_url=None, redoc_url=None)
    app.state.engine = eng
    ids = itertools.count(1)
    used: set[str] = set()

    def error(status: int, message: str, param: str | None = None, type_: str | None = None) -> JSONResponse:
        t = type_ or {400: "BadRequestError", 401: "AuthenticationError", 404: "NotFoundError",
                      503: "ServiceUnavailableError"}.get(status, "InternalServerError")
        return JSONResponse({"object": "error", "message": message, "type": t, "param": param, "code": status},
                            status_code=status)

    def tenant_of(request: Request) -> str | None:
        auth = request.headers.get("authorization", "")
        key = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
        if not key:
            return None
        if cfg.tenants:
            return cfg.tenants.get(key)
        return key_tenant(key)

    async def body_of(request: Request) -> dict | None:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
        return body if isinstance(body, dict) else None

    def new_id(prefix: str, request: Request, body: dict) -> str:
        base = request.headers.get("x-request-id") or body.get("request_id") or body.get("rid") or uuid.uuid4().hex[:16]
        rid = f"{prefix}-{base}"
        if rid in used:
            rid = f"{rid}-{next(ids)}"
        used.add(rid)
        return rid

    def prompt_ids(body: dict, chat: bool) -> list[int] | str:
        """Token ids of the request, or an error message."""
        if chat:
            msgs = body.get("messages")
            if not isinstance(msgs, list) or not msgs or not all(isinstance(m, dict) for m in msgs):
                return "messages must be a non-empty list of objects"
            return encode_chat(msgs)
        p = body.get("prompt")
        if isinstance(p, list) and len(p) == 1 and isinstance(p[0], str):
            p = p[0]
        if isinstance(p, str):
            return encode(p, bool(body.get("add_special_tokens", True)))
        if isinstance(p, list) and p and valid_ids(p, eng.vocab):
            return [int(t) for t in p]
        return "prompt must be a string or a list of token ids (one prompt per request)"

    def max_tokens_of(body: dict, chat: bool) -> int | str:
        v = body.get("max_completion_tokens" if chat and "max_completion_tokens" in body else "max_tokens")
        if v is None:
            return cfg.default_max_tokens
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            return "max_tokens must be a positive integer"
        return v

    async def generate(request: Request, chat: bool):
        tenant = tenant_of(request)
        if tenant is None:
            return error(401, "Missing or unknown API key (Authorization: Bearer KEY).")
        body = await body_of(request)
        if body is None:
            return error(400, "The request body must be a JSON object.")
        model = body.get("model")
        if model not in (None, cfg.model):
            return error(404, f"The model `{model}` does not exist.", "model")
        ids_ = prompt_ids(body, chat)
        if isinstance(ids_, str):
            return error(400, ids_, "messages" if chat else "prompt")
        n = max_tokens_of(body, chat)
        if isinstance(n, str):
            return error(400, n, "max_tokens")
        rid = new_id("chatcmpl" if chat else "cmpl", request, body)
        g: Generation = await asyncio.wrap_future(eng.submit(tenant, ids_, n, rid))
        if g.http_status != 200:
            return error(g.http_status, g.message or "Request failed.")
        usage = {"prompt_tokens": eng.reported_prompt_tokens(g), "completion_tokens": len(g.tokens),
                 "total_tokens": eng.reported_prompt_tokens(g) + len(g.tokens)}
        created = int(time.time())
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return StreamingResponse(_sse(g, rid, created, cfg.model, chat, usage, include_usage),
                                     media_type="text/event-stream")
        text = decode(g.tokens)
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}
            obj = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": "length"}
            obj = "text_completion"
        return JSONResponse({"id": rid, "object": obj, "created": created, "model": cfg.model,
                             "choices": [choice], "usage": usage})

    @app.post("/v1/completions")
    async def completions(request: Request):
        return await generate(request, chat=False)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        return await generate(request, chat=True)

    @app.post("/tokenize")
    async def tokenize(request: Request):
        body = await body_of(request)
        if body is None:
            return error(400, "The request body must be a JSON object.")
        chat = "messages" in body
        ids_ = prompt_ids(body, chat)
        if isinstance(ids_, str):
            return error(400, ids_)
        return {"count": len(ids_), "max_model_len": cfg.context, "tokens": ids_}

    @app.get("/get_server_info")
    @app.get("/server_info")
    async def server_info():
        return eng.server_info()

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [{"id": cfg.model, "object": "model", "created": 0, "owned_by": "kvir-serve",
                                            "root": cfg.model, "max_model_len": cfg.context}]}

    @app.get("/version")
    async def version():
        return {"version": eng.server_info()["version"]}

    @app.get("/health")
    async def health():
        return Response(status_code=200)

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
