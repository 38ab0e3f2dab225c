"""A hostile server (issue #26 item 13 and the fault suite): it echoes the credentials it is sent into its
answers, redirects to another host, sends replies without end, or JSON nested too deep to parse. No key or
header value reaches any output (JSON on stdout, --output, SARIF, the case, the terminal), no key travels to
another host, and the run ends with a verdict (inconclusive where the server gave nothing usable), never a
traceback."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import duckdb
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response, StreamingResponse

import kvir

from .conftest import AppThread
from .fakes import fake_app

KEY_A, KEY_B, GATEWAY = "sk-hostile-echo-key-a-51e0", "sk-hostile-echo-key-b-0c77", "gw-secret-value-93aa"
KVIR = [sys.executable, "-m", "kvir.cli.app"]


def echoing_app() -> FastAPI:
    """The healthy fake, whose model list echoes what each request carried: the Authorization header as a model
    id, the gateway header as another and as a mapping key, and both in its server-info route."""
    app = fake_app("ok")

    @app.middleware("http")
    async def echo(request: Request, call_next):
        auth, gw = request.headers.get("authorization", ""), request.headers.get("x-gateway-key", "")
        if request.url.path == "/v1/models":
            return JSONResponse({"object": "list", "data": [
                {"id": auth, "object": "model", "max_model_len": 256, "owned_by": gw},
                {"id": f"echo:{gw}", "object": "model", "max_model_len": 256, gw: auth}]})
        if request.url.path in ("/get_server_info", "/server_info"):
            return JSONResponse({"version": f"echo {auth}", "context_length": 256, "note": {gw: auth}})
        return await call_next(request)
    return app


def _env() -> dict[str, str]:
    return {**os.environ, "HOSTILE_KEY_A": KEY_A, "HOSTILE_KEY_B": KEY_B, "HOSTILE_GW": GATEWAY}


def _probe_cli(url: str, tmp_path, *more: str) -> subprocess.CompletedProcess:
    return subprocess.run([*KVIR, "probe", "--endpoint", url, "--api-key-env", "HOSTILE_KEY_A", "--tenant-b-key-env",
                           "HOSTILE_KEY_B", "--header-env", "X-Gateway-Key=HOSTILE_GW", "--max-requests", "40",
                           "--timeout", "5", "--deadline", "60", "--checks", "length", "--json", *more],
                          capture_output=True, text=True, env=_env(), timeout=300)


def _case_text(case) -> str:
    con = duckdb.connect(str(case / "case.duckdb"), read_only=True)
    try:
        tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        return "\n".join(str(con.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables)
    finally:
        con.close()


def test_an_echoing_server_gets_no_key_into_any_output(tmp_path):
    with AppThread(echoing_app()) as srv:
        p = _probe_cli(srv.url, tmp_path, "--output", str(tmp_path / "out.json"), "--sarif",
                       str(tmp_path / "out.sarif"), "--case", str(tmp_path / "case"))
    assert p.returncode in (0, 1, 3), p.stderr[-2000:]
    outputs = {"stdout": p.stdout, "stderr": p.stderr, "json": (tmp_path / "out.json").read_text(),
               "sarif": (tmp_path / "out.sarif").read_text(), "case": _case_text(tmp_path / "case"),
               "manifest": (tmp_path / "case" / "manifest.json").read_text()}
    for where, text in outputs.items():
        for secret in (KEY_A, KEY_B, GATEWAY):
            assert secret not in text, (where, secret)
    doc = json.loads(p.stdout)
    assert "[redacted]" in json.dumps(doc["server"]) and doc["options"]["model"] == "Bearer [redacted]"
    assert any("sent back a credential" in n for n in doc["notes"])
    json.loads(outputs["sarif"])                                      # still valid JSON after scrubbing


def test_a_redirect_never_carries_a_key_to_another_host():
    """Every route answers 307 to another server: the probe does not follow, so that server never sees a
    request (or a key), and the run is inconclusive."""
    catcher = FastAPI()
    catcher.state.seen = []

    @catcher.middleware("http")
    async def record(request: Request, call_next):
        catcher.state.seen.append(dict(request.headers))
        return JSONResponse({"data": []})

    with AppThread(catcher) as other:
        redirect = FastAPI()

        @redirect.middleware("http")
        async def away(request: Request, call_next):
            return RedirectResponse(other.url + request.url.path, status_code=307)

        with AppThread(redirect) as srv:
            os.environ["HOSTILE_KEY_A"] = KEY_A
            try:
                r = kvir.probe(srv.url, api_key_env="HOSTILE_KEY_A", max_requests=20, timeout_s=5, deadline_s=30,
                               progress=False, context=256, checks=("length",))
            finally:
                del os.environ["HOSTILE_KEY_A"]
    assert catcher.state.seen == []
    assert r.verdict == "inconclusive" and r.exit_code == 3


def _endless() -> FastAPI:
    app = FastAPI()

    async def forever():
        block = b"[" + b"1," * (1 << 19)
        while True:
            yield block
            await asyncio.sleep(0)          # let the server's loop send it (the fake shares a thread)

    @app.middleware("http")
    async def big(request: Request, call_next):
        media = "text/event-stream" if request.url.path.endswith("completions") else "application/json"
        return StreamingResponse(forever(), media_type=media)
    return app


def _deep() -> FastAPI:
    app = FastAPI()
    body = b"[" * 200_000 + b"]" * 200_000

    @app.middleware("http")
    async def deep(request: Request, call_next):
        if request.url.path.endswith("completions"):
            return Response(b"data: " + body + b"\n\n", media_type="text/event-stream")
        return Response(body, media_type="application/json")
    return app


def _probe_json(url: str) -> tuple[int, dict, str]:
    """The probe as a responder runs it, in its own process (a server in this process that streams without end
    would starve a client sharing its interpreter)."""
    p = subprocess.run([*KVIR, "probe", "--endpoint", url, "--max-requests", "12", "--timeout", "20", "--retries", "0",
                        "--deadline", "60", "--context", "256", "--checks", "length", "--json", "-q"],
                       capture_output=True, text=True, timeout=300)
    return p.returncode, json.loads(p.stdout), p.stderr


def test_a_reply_without_end_is_cut_and_the_run_ends_inconclusive():
    with AppThread(_endless()) as srv:
        rc, doc, err = _probe_json(srv.url)
    assert rc == 3 and doc["verdict"] == "inconclusive" and "Traceback" not in err
    items = doc["checks"][0]["items"]
    assert items and all("over 16 MiB: not read on" in i["note"] for i in items)
    assert set(doc["server"]["answered"].values()) == {None}            # no usable answer in discovery either


def test_json_nested_too_deep_is_no_json_not_a_crash():
    with AppThread(_deep()) as srv:
        rc, doc, err = _probe_json(srv.url)
    assert rc == 3 and doc["verdict"] == "inconclusive" and "Traceback" not in err
