"""Servers the probe tests run against, all on 127.0.0.1 with a free port, stopped by the fixture:
kvir serve (leaking, fixed) and the fake endpoint (tests/probe/fakes.py). Probe runs against kvir serve are
shared per session: each costs a few seconds of CPU."""
from __future__ import annotations

import threading
import time

import pytest

KEY_A, KEY_B = "probe-test-key-tenant-a-7c1f", "probe-test-key-tenant-b-93d2"
POOL, CONTEXT = 4096, 8192
# SGLang's max_req_input_len for this pool and context, worked out by hand: min(8192 - 1, 4096 - 1) - 5
LIMIT = 4090
BOUNDARY = [4089, 4090, 4091, 4096, 8191, 8192, 8193]


class AppThread:
    """Any ASGI app on uvicorn in a thread (loopback, free port)."""

    def __init__(self, app):
        import uvicorn

        self.app = app
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                                    timeout_graceful_shutdown=1))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.servers[0].sockets[0].getsockname()[1]}"

    def __enter__(self):
        self.thread.start()
        t = time.monotonic()
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() - t < 20, "fake server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def keys():
    mp = pytest.MonkeyPatch()
    mp.setenv("KVIR_TEST_KEY_A", KEY_A)
    mp.setenv("KVIR_TEST_KEY_B", KEY_B)
    yield {"api_key_env": "KVIR_TEST_KEY_A", "tenant_b_key_env": "KVIR_TEST_KEY_B"}
    mp.undo()


def _serve(**kw):
    from kvir.serve import ServeConfig, ServerThread

    return ServerThread(ServeConfig(pool=POOL, context=CONTEXT, **kw))


@pytest.fixture(scope="session")
def canaries_seen():
    """Every canary the probe generated in this session (captured, so tests can prove none leaked out)."""
    import kvir.mechanisms.oversized_prompt.probe_canary as ct

    made: list[str] = []
    orig = ct.new_canary

    def capture() -> str:
        c = orig()
        made.append(c)
        return c

    mp = pytest.MonkeyPatch()
    mp.setattr(ct, "new_canary", capture)
    yield made
    mp.undo()


@pytest.fixture(scope="session")
def leaking_run(keys, canaries_seen, tmp_path_factory):
    """kvir serve --build 0.5.19 and one probe run against it (recorded into a case)."""
    import kvir

    case = tmp_path_factory.mktemp("leaking") / "case"
    with _serve(build="0.5.19") as srv:
        t = time.perf_counter()
        result = kvir.probe(srv.url, progress=False, case=case, **keys)
        wall = time.perf_counter() - t
        records = srv.records
    return {"result": result, "records": records, "wall_s": wall, "case": case}


@pytest.fixture(scope="session")
def fixed_run(keys, canaries_seen):
    import kvir

    with _serve(build="fixed") as srv:
        result = kvir.probe(srv.url, progress=False, **keys)
        records = srv.records
    return {"result": result, "records": records}
