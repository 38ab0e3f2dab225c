"""A fake OpenAI-compatible endpoint for the probe's failure paths and its timing check (tests only).

    mode "ok"    a correct small server: byte tokenizer (kvir.serve.tokenizer), context 256, 400 at and
                 above it, 200 below with the exact prompt count
    mode "5xx"   the fault routes answer 503
    mode "hang"  the fault routes never answer (each waits up to 30 s, then gives up: bounded)
    mode "429"   the fault routes answer 429 with Retry-After: 1
    cache        "none", "shared" (a prompt seen before from anyone is fast), "tenant" (fast only for the
                 tenant that sent it before): slow 0.08 s, fast 0.01 s
    clock        a VirtualClock: the cache's latencies advance it instead of sleeping (deterministic timing)
    tokenizer    a tokenizer.json path: prompts are counted with it and /tokenize answers 404 (the probe
                 must count locally)
    require      (header, value): every request without it gets 401 (a gateway)
    sse_errors   a refused streamed request gets HTTP 200 and an SSE error event with code 400 (as SGLang does)
Every request is recorded: (monotonic time, path, X-Request-Id, status).
"""
from __future__ import annotations

import asyncio
import hashlib
import threading
import time

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from kvir.serve.tokenizer import encode

CONTEXT = 256


class VirtualClock:
    """Time that passes only when the fake says so (a cached or an uncached answer's latency): installed as
    kvir.probe.http.clock, it makes the timing check's measurements exact whatever the machine's load."""

    def __init__(self) -> None:
        self.t = 0.0
        self.lock = threading.Lock()

    def __call__(self) -> float:
        with self.lock:
            return self.t

    def advance(self, seconds: float) -> None:
        with self.lock:
            self.t += seconds


def fake_app(mode: str = "ok", fault_paths: tuple[str, ...] = ("/v1/completions",), cache: str = "none",
             tokenizer: str | None = None, require: tuple[str, str] | None = None, sse_errors: bool = False,
             clock: "VirtualClock | None" = None) -> FastAPI:
    app = FastAPI()
    if tokenizer:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(tokenizer)
        count = lambda text: len(tok.encode(text).ids)       # noqa: E731
    else:
        count = lambda text: len(encode(text))               # noqa: E731
    app.state.log = []
    seen: set[str] = set()
    lock = threading.Lock()

    @app.middleware("http")
    async def faults(request: Request, call_next):
        t = time.monotonic()
        path = request.url.path
        rid = request.headers.get("x-request-id")
        if require and request.headers.get(require[0]) != require[1]:
            app.state.log.append((t, path, rid, 401))
            return JSONResponse({"error": {"message": "gateway: missing header", "code": 401}}, status_code=401)
        if tokenizer and path == "/tokenize":
            app.state.log.append((t, path, rid, 404))
            return JSONResponse({"detail": "Not Found"}, status_code=404)
        if mode != "ok" and (path in fault_paths or "*" in fault_paths):
            if mode == "5xx":
                resp = JSONResponse({"error": {"message": "upstream unavailable", "code": 503}}, status_code=503)
            elif mode == "429":
                resp = JSONResponse({"error": {"message": "rate limited", "code": 429}}, status_code=429,
                                    headers={"Retry-After": "1"})
            else:                                   # hang, bounded
                try:
                    await asyncio.sleep(30)
                except asyncio.CancelledError:
                    app.state.log.append((t, path, rid, None))
                    raise
                resp = Response(status_code=504)
            app.state.log.append((t, path, rid, resp.status_code))
            return resp
        resp = await call_next(request)
        app.state.log.append((t, path, rid, resp.status_code))
        return resp

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": "fake", "max_model_len": CONTEXT}]}

    @app.post("/tokenize")
    async def tokenize(request: Request):
        body = await request.json()
        ids = encode(body.get("prompt") or "")
        return {"count": len(ids), "tokens": ids, "max_model_len": CONTEXT}

    @app.post("/v1/completions")
    async def completions(request: Request):
        body = await request.json()
        prompt = body.get("prompt") or ""
        n = count(prompt)
        if n >= CONTEXT and body.get("stream") and sse_errors:
            from fastapi.responses import StreamingResponse

            async def refused():
                yield (b'data: {"error": {"message": "The input is longer than the model\'s context length.", '
                       b'"code": 400}}\n\n')
                yield b"data: [DONE]\n\n"
            return StreamingResponse(refused(), media_type="text/event-stream")
        if n >= CONTEXT:
            return JSONResponse({"error": {"message": f"This model's maximum context length is {CONTEXT} tokens.",
                                           "type": "BadRequestError", "param": "input_tokens", "code": 400}},
                                status_code=400)
        if cache != "none":
            tenant = request.headers.get("authorization", "")
            key = hashlib.sha256(((tenant if cache == "tenant" else "") + "\0" + prompt).encode()).hexdigest()
            with lock:
                hit = key in seen
                seen.add(key)
            if clock is not None:
                clock.advance(0.01 if hit else 0.08)      # no real delay: the probe reads this clock
            else:
                await asyncio.sleep(0.01 if hit else 0.08)
        return {"id": "cmpl-fake", "object": "text_completion", "model": "fake",
                "choices": [{"index": 0, "text": "ok", "finish_reason": "length"}],
                "usage": {"prompt_tokens": n, "completion_tokens": 1, "total_tokens": n + 1}}

    return app
