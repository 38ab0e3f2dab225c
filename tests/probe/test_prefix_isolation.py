"""kvir probe --checks prefix-isolation against kvir serve's prefix cache (it must fail on `unsalted` and
pass on `salted`), on a server without a prefix cache (inconclusive: the control cannot hit), and against
a fake endpoint that reports no cached tokens (the timing fallback: statistics, never a verdict).

Expected cached tokens, worked out by hand: a 96-token prompt (<s> + 95 bytes) in 16-token blocks can hit
min(96, 95) // 16 * 16 = 80 tokens; a fresh prompt shares only <s> and "probe " (7 tokens): 0."""
from __future__ import annotations

import json
import re

import pytest

import kvir
from kvir.serve import ServeConfig, ServerThread

from .conftest import AppThread
from .fakes import fake_app

OPTS = dict(checks=("prefix-isolation",), prefix_tokens=96, progress=False)


def _run(mode: str, salt: str, keys: dict, **kw):
    with ServerThread(ServeConfig(build="fixed", pool=2048, context=4096, prefix_cache=mode)) as srv:
        r = kvir.probe(srv.url, cache_salt=salt, **OPTS, **kw, **keys)
        return r, srv.records


@pytest.mark.parametrize("salt", ["per-tenant", "none"])
def test_unsalted_cache_is_exposed(salt, keys):
    r, records = _run("unsalted", salt, keys)
    c = r.check("prefix-isolation")
    assert (r.verdict, r.exit_code, c.verdict) == ("exposed", 1, "exposed")
    assert [i["outcome"] for i in c.items] == ["exposed", "exposed"]
    assert [(i["baseline_cached_tokens"], i["control_cached_tokens"], i["cross_cached_tokens"]) for i in c.items] == [
        (0, 80, 80)] * 2
    f = c.findings[0]
    assert f.rule_id == "KVIR-P008" and f.evidence["salted"] is (salt == "per-tenant")
    # the server's ledger agrees: B's copy read blocks that A's priming request wrote
    ledger = {rec["rid"]: rec for rec in records}
    cross = ledger[c.items[0]["cross_request_id"].join(["cmpl-", ""])]
    assert cross["cache_sources"] == ["cmpl-" + c.items[0]["prime_request_id"]] and cross["cached_tokens"] == 80


def test_salted_cache_is_not_exposed(keys, tmp_path):
    r, records = _run("salted", "per-tenant", keys, case=tmp_path / "case", max_requests=60)
    c = r.check("prefix-isolation")
    assert (r.verdict, r.exit_code, c.verdict) == ("not exposed", 0, "not exposed"), c.reason
    assert [(i["control_cached_tokens"], i["cross_cached_tokens"]) for i in c.items] == [(80, 0)] * 2
    assert not any(rec["cache_read_from"] for rec in records)
    assert c.stats["cache_salt"] == "per-tenant" and c.stats["cached_tokens_reported"]
    # salts go out in bodies, never into the log or the case: only the field's name
    doc = json.dumps(r.as_json())
    assert not re.search(r"kvir-probe-tenant-[ab]-[0-9a-f]{16}", doc) and {tuple(e["extra_fields"]) for e in r.requests} == {("cache_salt",)}
    import duckdb

    con = duckdb.connect(str(tmp_path / "case" / "case.duckdb"), read_only=True)
    assert con.execute("SELECT list(cached_tokens ORDER BY seq) FROM probe_events WHERE purpose = 'cross'").fetchone()[0] == [0, 0]


def test_salted_cache_without_salts_is_exposed(keys):
    """The same salted server, both tenants sending no salt: nothing keeps them apart."""
    r, _ = _run("salted", "none", keys)
    assert r.check("prefix-isolation").verdict == "exposed"


def test_no_prefix_cache_is_inconclusive(keys):
    r, _ = _run("off", "per-tenant", keys)
    c = r.check("prefix-isolation")
    assert (r.verdict, c.verdict) == ("inconclusive", "inconclusive")
    assert c.reason.startswith("the server reports no cached tokens; paired timing")    # kvir serve: no details


@pytest.mark.parametrize("cache, finding", [("shared", True), ("tenant", False)])
def test_timing_fallback_when_no_cached_tokens_are_reported(cache, finding, keys):
    with AppThread(fake_app("ok", cache=cache)) as srv:
        r = kvir.probe(srv.url, checks=("prefix-isolation",), prefix_tokens=64, prefix_rounds=1, timing_pairs=6,
                       alpha=0.05, seed=1, progress=False, **keys)
    c = r.check("prefix-isolation")
    assert c.verdict == "inconclusive" and r.verdict == "inconclusive"
    assert c.stats["judged_by"].startswith("paired timing") and c.stats["pairs"] == 6
    assert bool([f for f in c.findings if f.rule_id == "KVIR-P005"]) is finding


def test_options_are_checked_and_planned(keys):
    from kvir.core.errors import KvirError

    with pytest.raises(KvirError, match="--cache-salt"):
        kvir.probe("http://127.0.0.1:9", checks=("prefix-isolation",), cache_salt="mine", progress=False, **keys)
    r = kvir.probe("http://127.0.0.1:9", checks=("prefix-isolation",), cache_salt="per-tenant", prefix_rounds=3,
                   dry_run=True, progress=False, **keys)
    phase = next(p for p in r.plan["phases"] if p["phase"] == "prefix-isolation")
    assert phase["requests"] == 12 and "its own cache_salt" in phase["what"] and r.sent == 0
