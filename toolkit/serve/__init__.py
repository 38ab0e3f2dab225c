"""kvir serve: the replay engine behind an OpenAI-compatible API, one tenant per API key, so that a target
set up to leak visibly serves one tenant another tenant's KV, and a fixed one does not.

    from kvir.serve import ServeConfig, ServerThread
    with ServerThread(ServeConfig(pool=4096, context=8192, build="0.5.19")) as srv:   # build: a mechanism's option
        ...  # srv.url, srv.records (whose KV each response read)

    config     ServeConfig: the engine's settings and the mechanisms' target modes (their options)
    plugin     what a mechanism's serve part gives (ServePart: options, a ServeTarget per server)
    tokenizer  the byte-level tokenizer (/tokenize is exact) and the chat template
    engine     ServeEngine: one PDPair on one worker thread, pools kept across requests
    app        the FastAPI routes
    run        serve() on uvicorn, ServerThread for tests and notebooks

Each mechanism's target mode is its serve part's (kvir.mechanisms.<m>.serve); `kvir serve --help` lists
their options.
"""
from __future__ import annotations

from kvir.serve.config import ServeConfig
from kvir.serve.engine import ServeEngine
from kvir.serve.run import ServerThread, serve

__all__ = ["ServeConfig", "ServeEngine", "ServerThread", "serve"]
