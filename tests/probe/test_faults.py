"""A failing endpoint: 5xx, hanging, rate limiting. The probe ends within its budget (requests and
seconds) and says inconclusive: never a false "not exposed". The fake server records every request."""
from __future__ import annotations

import time
from collections import defaultdict

import pytest

import kvir

from .conftest import AppThread
from .fakes import fake_app

BUDGET = dict(max_requests=12, timeout_s=0.5, retries=1, backoff_s=0.05, deadline_s=8.0, progress=False, context=256)


def run(mode: str, paths=("/v1/completions",), **kw):
    app = fake_app(mode, paths)
    with AppThread(app) as srv:
        t = time.perf_counter()
        r = kvir.probe(srv.url, **{**BUDGET, **kw})
        wall = time.perf_counter() - t
    return r, app.state.log, wall


def test_healthy_fake_is_not_exposed_by_length():
    """The control: the same fake, healthy, passes the length check (context 256 from /v1/models)."""
    r, log, _ = run("ok", max_requests=60, checks=("length",))
    assert r.verdict == "not exposed", r.reason
    # the fake names no engine: the set is around its context (no SGLang length for an unknown engine)
    assert {i["sent_tokens"]: i["http_status"] for i in r.check("length").items} == {255: 200, 256: 400, 257: 400}


@pytest.mark.parametrize("mode, paths", [("5xx", ("/v1/completions",)), ("5xx", ("*",)), ("hang", ("/v1/completions",)),
                                         ("hang", ("*",)), ("429", ("/v1/completions",))])
def test_failing_endpoint_is_inconclusive_within_budget(mode, paths):
    r, log, wall = run(mode, paths)
    assert r.verdict == "inconclusive", (r.verdict, r.reason)
    assert all(c.verdict == "inconclusive" for c in r.checks)
    assert r.sent <= BUDGET["max_requests"] and len(log) <= BUDGET["max_requests"]
    assert wall < BUDGET["deadline_s"] + BUDGET["timeout_s"] + 3.0
    assert r.exit_code == 3


def test_429_waits_for_retry_after():
    r, log, _ = run("429", max_requests=40, deadline_s=20.0, checks=("length",))
    assert r.verdict == "inconclusive"
    attempts = defaultdict(list)
    for t, path, rid, status in log:
        if path == "/v1/completions":
            attempts[rid].append(t)
    retried = [ts for ts in attempts.values() if len(ts) > 1]
    assert retried, "the probe never retried a 429"
    for ts in retried:
        assert all(b - a >= 0.95 for a, b in zip(ts, ts[1:])), "a retry came before Retry-After (1 s)"


def test_a_streamed_refusal_as_http_200_with_an_error_event_counts_as_refused(keys):
    """SGLang answers a refused streamed request with HTTP 200 and an SSE error event carrying code 400."""
    app = fake_app("ok", sse_errors=True)
    with AppThread(app) as srv:
        r = kvir.probe(srv.url, progress=False, max_requests=80, engine="vllm", **keys)
        unknown = kvir.probe(srv.url, progress=False, max_requests=80, checks=("canary",), **keys)
    assert r.check("canary").verdict == "not exposed", r.check("canary").reason
    streamed = [e for e in r.requests if e["stream"] and e["purpose"] == "over-limit"]
    assert streamed and {e["http_status"] for e in streamed} == {400}
    assert r.verdict == "not exposed"
    # engine unknown: 250-255 tokens lie where only SGLang refuses; served there without a canary is undecided
    assert unknown.verdict == "inconclusive" and "--engine" in unknown.check("canary").reason
