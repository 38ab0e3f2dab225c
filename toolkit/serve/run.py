"""Running the API on uvicorn: `serve(...)` in the foreground (the CLI), `ServerThread` in the background
(tests and notebooks: loopback, a free port, stopped on exit)."""
from __future__ import annotations

import threading
import time
from typing import Callable

from kvir.serve.config import ServeConfig
from kvir.serve.engine import ServeEngine


def _server(cfg: ServeConfig, host: str, port: int, log_level: str):
    import uvicorn

    from kvir.serve.app import create_app

    engine = ServeEngine(cfg)
    app = create_app(cfg, engine)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=log_level == "debug",
                            timeout_graceful_shutdown=2, backlog=512, limit_concurrency=None)
    return uvicorn.Server(config), engine


def serve(cfg: ServeConfig, *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info",
          threads: int | None = None, announce: Callable[[ServeEngine], None] | None = None) -> None:
    """Serve until interrupted (Ctrl-C / SIGTERM). Request lines (ids, tenants, counts) go to stderr.
    `threads`: torch's intra-op threads for this process (small requests are fastest on one); `announce`:
    called with the engine once it is made, before the server starts."""
    import logging

    if threads:
        import torch

        torch.set_num_threads(threads)

    log = logging.getLogger("kvir.serve")
    if not log.handlers:
        h = logging.StreamHandler()
        h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(h)
        log.setLevel(logging.INFO if log_level in ("info", "debug", "trace") else logging.WARNING)
    server, engine = _server(cfg, host, port, log_level)
    if announce is not None:
        announce(engine)
    try:
        server.run()
    finally:
        engine.close()


class ServerThread:
    """`with ServerThread(cfg) as srv: srv.url` -- uvicorn on 127.0.0.1 and a free port, in a thread."""

    def __init__(self, cfg: ServeConfig, *, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning"):
        self.server, self.engine = _server(cfg, host, port, log_level)
        self.host = host
        self._thread = threading.Thread(target=self.server.run, name="kvir-serve-uvicorn", daemon=True)

    @property
    def port(self) -> int:
        return self.server.servers[0].sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def records(self) -> list[dict]:
        """The ledger: one record per generation request (ids, tenants, counts)."""
        return list(self.engine.records)

    def __enter__(self) -> "ServerThread":
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("kvir serve did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=15)
        self.engine.close()
