"""kvir serve: the replay engine behind an OpenAI-compatible API, one tenant per API key, so that a
leaking build visibly returns another tenant's text and a fixed build refuses with HTTP 400.

    from kvir.serve import ServeConfig, ServerThread
    with ServerThread(ServeConfig(build="0.5.19", pool=4096, context=8192)) as srv:
        ...  # srv.url, srv.records (whose KV each response read)

    builds     the one table: SGLang build name -> replay policy (resolve_build)
    tokenizer  the byte-level tokenizer (/tokenize is exact) and the chat template
    engine     ServeEngine: one PDPair on one worker thread, pools kept across requests
    app        the FastAPI routes
    run        serve() on uvicorn, ServerThread for tests and notebooks
"""
from __future__ import annotations

from kvir.serve.builds import ALIASES, BUILDS, Build, resolve_build
from kvir.serve.engine import ServeConfig, ServeEngine
from kvir.serve.run import ServerThread, serve

__all__ = ["ALIASES", "BUILDS", "Build", "resolve_build", "ServeConfig", "ServeEngine", "ServerThread", "serve"]
