"""DuckDB and Spark (PySpark local[2]) give the same triage over the same canonical Parquet, and both give
the answer worked out independently: the simulator's ground truth for the reference fleet, hand counts
for the edge fixtures. Marked `spark` (a JVM starts once for the module): `python -m pytest -q -m spark`.

Lakes are written by `kvir ingest` as separate machines would: the reference fleet as two shards (the
first week's day files on one machine, the rest on another), the hand fixtures as three shards
(a gateway's window edges, SGLang's hour-granular metrics export, SGLang PD request logs)."""
from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import kvir
from kvir.ingest.export import ingest_shard
from tests.conftest import spec_text
from tests.formats.expected import AFFECTED, COUNTS, FIXTURES, POSSIBLY_AFFECTED

pytestmark = pytest.mark.spark
CHI = "America/Chicago"
TABLES = ("affected", "accounts", "nodes", "excluded")     # ordered by their queries: compared in order


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("no Java on this machine (PySpark needs Java 17+)")
    from kvir.triage.spark import session

    s = session("local[2]", {"spark.driver.memory": "2g"})
    yield s
    s.stop()


def triage_both(spark, spec: Path, lake: Path | str, out: Path, **kw):
    """The same lake triaged by DuckDB and by Spark; every result table equal, rows and order."""
    d = kvir.triage(spec, [lake if isinstance(lake, Path) else Path(lake.removeprefix("file://"))],
                    out=out / "duckdb", **kw)
    s = kvir.triage(spec, [lake], out=out / "spark", query_engine="spark", **kw)
    for t in TABLES:
        q = f"SELECT * FROM {t}"
        assert d.case.con.execute(q).fetchall() == s.case.con.execute(q).fetchall(), t
        assert [c[:2] for c in d.case.con.execute(f"DESCRIBE {t}").fetchall()] == \
               [c[:2] for c in s.case.con.execute(f"DESCRIBE {t}").fetchall()], t
    hits = "SELECT * FROM triage_hits ORDER BY request_id"
    assert d.case.con.execute(hits).fetchall() == s.case.con.execute(hits).fetchall()
    # models_seen needs `requests` in the case, which a lake only Spark reaches leaves out (README)
    skip = ("seconds", "query_engine", "serving_engine", "models_seen")
    same = {k: v for k, v in d.summary.items() if k not in skip}
    assert same == {k: v for k, v in s.summary.items() if k not in skip}
    # the serving engine is the same; where it was read (the lake's sources, start-up logs) may be said differently
    assert d.summary["serving_engine"]["engine"] == s.summary["serving_engine"]["engine"]
    assert (d.summary["query_engine"], s.summary["query_engine"]) == ("duckdb", "spark")
    return d, s


# ----------------------------------------------------------------------------- the reference fleet

@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    kvir.simulate(root / "fleet", requests=30_000, seed=5, format="parquet")
    days = sorted((root / "fleet" / "requests").iterdir())
    spec = root / "fleet" / "incident.toml"
    for shard, part in (("host-a", days[:7]), ("host-b", days[7:])):
        ingest_shard(part, root / "lake", shard=shard, incident=spec)
    truth = json.loads((root / "fleet" / "ground_truth" / "summary.json").read_text())
    gt = pq.read_table(root / "fleet" / "ground_truth" / "affected.parquet").to_pylist()
    return root, truth, gt


def _spec(fleet_root: Path, name: str, old: str, new: str) -> Path:
    text = (fleet_root / "fleet" / "incident.toml").read_text()
    assert old in text
    p = fleet_root / "fleet" / name
    p.write_text(text.replace(old, new))
    return p


def _nodes(rows) -> dict[tuple, int]:
    c = Counter()
    for r in rows:
        c[(r["prefill_node"], "prefill")] += 1
        c[(r["decode_node"], "decode")] += 1
    return dict(c)


def test_reference_fleet_parquet_on_both_engines_equals_the_ground_truth(spark, fleet, tmp_path):
    root, truth, gt = fleet
    spec = root / "fleet" / "incident.toml"
    laptop = kvir.triage(spec, out=tmp_path / "laptop")          # the raw Parquet, no lake: the laptop's answer
    d, s = triage_both(spark, spec, root / "lake", tmp_path)
    for r in (laptop, d, s):
        assert set(r.affected["request_id"]) == {g["request_id"] for g in gt} and len(r.affected) == 155
        assert dict(zip(r.accounts["account_id"], r.accounts["affected"])) == truth["per_account"]
        got = {(n, role): k for n, role, k in zip(r.nodes["node"], r.nodes["role"], r.nodes["affected"])}
        assert got == _nodes(gt)
        labels = dict(zip(r.accounts["account_id"], r.accounts["label"]))
        assert labels[truth["researcher_account"]] == "reporting researcher"        # labelled: still counted
        assert r.summary["affected_labelled"] == truth["researcher_affected"] + truth["provider_affected"]
        assert r.summary["requests_total"] == truth["requests"]
        assert r.summary["other_rule_adds"] == truth["engine_only"] == 7
    # the laptop's rows too (a one-file Parquet source is named by its folder, so source_file differs)
    rows = "SELECT * EXCLUDE (source_file) FROM affected"
    assert laptop.case.con.execute(rows).fetchall() == s.case.con.execute(rows).fetchall()
    for t in ("accounts", "nodes"):
        assert laptop.case.df(t).equals(s.case.df(t)), t
    # every input of both shards accounted for: read = parsed + quarantined; the shard names the machine
    assert {x["label"].split(":")[0] for x in s.sources} == {"host-a", "host-b"}
    assert sum(x["read"] for x in s.sources) == truth["requests"]
    assert all(x["read"] == x["parsed"] + x["quarantined"] for x in s.sources)
    # the manifest records the engine and the Spark SQL that ran, with its parameters bound, not pasted
    m = json.loads((tmp_path / "spark" / "manifest.json").read_text())
    assert m["query_engine"]["name"] == "spark" and m["query_engine"]["master"] == "local[2]"
    hits = next(q for q in m["queries"] if q["query"] == "queries/mechanisms/oversized_prompt/triage/hits.sql")
    assert hits["engine"] == "spark" and ":pool_tokens" in hits["compiled_sql"] and "681280" not in hits["compiled_sql"]
    assert hits["params"]["pool_tokens"] == 681280
    assert [q["query"] for q in m["queries"] if q.get("engine") == "spark"] == [
        "queries/mechanisms/oversized_prompt/triage/hits.sql", "queries/triage/listed.sql",
        "queries/mechanisms/oversized_prompt/triage/affected.sql", "queries/triage/excluded.sql",
        "queries/triage/accounts.sql", "queries/triage/nodes.sql"]
    # reports read the Spark case unchanged (requests: a view over the lake's files)
    s.case.close()
    from kvir.report import report

    rep = report(tmp_path / "spark", only=["public-report"], format="md")
    assert rep.model.counts.affected == 155 and rep.model.counts.requests_total == truth["requests"]
    assert any(a.path.endswith(".md") for a in rep.artifacts)

def test_rule_switch_on_both_engines(spark, fleet, tmp_path):
    root, truth, gt = fleet
    spec = _spec(root, "incident-engine.toml", 'rule = "public"', 'rule = "engine"')
    engine_only = pq.read_table(root / "fleet" / "ground_truth" / "engine_only.parquet")
    # the lake as a URI: Spark reads its side tables itself (no local-folder shortcut)
    d, s = triage_both(spark, spec, f"file://{root / 'lake'}", tmp_path)
    for r in (d, s):
        assert len(r.affected) == truth["affected_engine_rule"] == 162
        assert set(r.affected["request_id"]) == {g["request_id"] for g in gt} | set(engine_only["request_id"].to_pylist())
        assert dict(zip(r.accounts["account_id"], r.accounts["affected"])) == truth["per_account_engine_rule"]
        assert r.summary["other_rule_drops"] == 7 and r.summary["other_rule_adds"] == 0
    assert s.case.manifest["query_engine"]["requests_in_case"].startswith("not attached")


def test_excluded_accounts_on_both_engines(spark, fleet, tmp_path):
    root, truth, gt = fleet
    researcher = truth["researcher_account"]
    spec = _spec(root, "incident-excluded.toml", 'reason = "bug-bounty reproduction reported 2026-09-08"',
                 'reason = "bug-bounty reproduction reported 2026-09-08"\nexclude = true')
    d, s = triage_both(spark, spec, root / "lake", tmp_path)
    theirs = {g["request_id"] for g in gt if g["account_id"] == researcher}
    assert len(theirs) == truth["researcher_affected"] == 6
    for r in (d, s):
        assert set(r.affected["request_id"]) == {g["request_id"] for g in gt} - theirs
        assert set(r.case.df("excluded")["request_id"]) == theirs and r.summary["excluded"] == 6
        assert researcher not in set(r.accounts["account_id"])


# ----------------------------------------------------------------------------- hand-made edges

GLM, AIR = "@cf/zai-org/glm-5.3", "@cf/zai-org/glm-5.3-air"
# (id, start, prompt tokens, HTTP status, customer, model): the window is [2026-08-27 00:00Z, 2026-09-09 19:40Z]
EDGE = [
    ("e01", "2026-08-26T23:59:59.999999Z", 800000, 200, "cust-a", GLM),   # 1 us before the start: out
    ("e02", "2026-08-27T00:00:00.000000Z", 800000, 200, "cust-a", GLM),   # the start: affected
    ("e03", "2026-08-27T00:00:00.000001Z", 800000, 200, "cust-a", GLM),   # affected
    ("e04", "2026-09-09T19:39:59.999999Z", 800000, 200, "cust-a", GLM),   # affected
    ("e05", "2026-09-09T19:40:00.000000Z", 800000, 200, "cust-a", GLM),   # the end: affected
    ("e06", "2026-09-09T19:40:00.000001Z", 800000, 200, "cust-a", GLM),   # 1 us after the end: out
    ("e07", "2026-08-30T12:00:00Z", 681281, 200, "cust-a", GLM),          # the pool + 1: affected
    ("e08", "2026-08-30T12:01:00Z", 681280, 200, "cust-a", GLM),          # the pool: engine rule only
    ("e09", "2026-08-30T12:02:00Z", 681274, 200, "cust-a", GLM),          # the engine limit: engine rule only
    ("e10", "2026-08-30T12:03:00Z", 681273, 200, "cust-a", GLM),          # below both: not a hit
    ("e11", "2026-08-30T12:04:00Z", 900000, 200, "cust-a", AIR),          # another model: out
    ("e12", "2026-08-30T12:05:00Z", 900000, 400, "cust-a", GLM),          # rejected
    ("e13", "2026-08-30T12:06:00Z", 900000, 503, "cust-a", GLM),          # failed
    ("e14", "2026-08-30T12:07:00Z", None, 200, "cust-a", GLM),            # prompt unknown: undecidable
    ("e15", "2026-08-31T08:00:00Z", 900000, 200, "cust-b", GLM),          # affected, another customer
]
STARTUP = """\
[2026-08-01 00:00:00] server_args=ServerArgs(model_path='zai-org/GLM-5.3', context_length=1048576, served_model_name='zai-org/GLM-5.3', page_size=64, disaggregation_mode='prefill')
[2026-08-01 00:00:05 TP0] max_total_num_tokens=681280, chunked_prefill_size=16384, max_prefill_tokens=16384, max_running_requests=64, context_len=1048576, available_gpu_mem=8.93 GB
[2026-08-27 19:00:00] server_args=ServerArgs(model_path='zai-org/GLM-5.3', context_length=1048576, served_model_name='zai-org/GLM-5.3', page_size=64, disaggregation_mode='prefill')
[2026-08-27 19:00:05 TP0] max_total_num_tokens=2097152, chunked_prefill_size=16384, max_prefill_tokens=16384, max_running_requests=64, context_len=1048576, available_gpu_mem=8.93 GB
"""


@pytest.fixture(scope="module")
def edges(tmp_path_factory):
    root = tmp_path_factory.mktemp("edges")
    gw = root / "gateway" / "gw.ndjson"
    gw.parent.mkdir()
    gw.write_text("".join(json.dumps({
        "id": i, "created_at": ts, "provider": "workers-ai", "model": model, "success": status == 200,
        "status_code": status, "cached": False, "tokens_in": tokens, "tokens_out": 12, "duration": 1500,
        "metadata": json.dumps({"customer_id": cust})}) + "\n" for i, ts, tokens, status, cust, model in EDGE))
    spec = root / "incident.toml"
    spec.write_text(spec_text())
    ingest_shard([gw], root / "lake", shard="gateway", incident=spec)
    ingest_shard([FIXTURES / "sglang_metrics"], root / "lake", shard="metrics", incident=spec, source_tz=CHI, hash="none")
    ingest_shard([FIXTURES / "sglang_json"], root / "lake", shard="pd", incident=spec, source_tz=CHI, hash="none")
    (root / "startup").mkdir()
    (root / "startup" / "prefill-0.log").write_text(STARTUP)
    return root, spec


EDGE_AFFECTED = {"e02", "e03", "e04", "e05", "e07", "e15"}


def _categories(r) -> dict[str, str]:
    return dict(r.case.con.execute("SELECT request_id, category FROM triage_hits").fetchall())


def test_window_edges_hour_granular_times_and_pd_logs_on_both_engines(spark, edges, tmp_path):
    root, spec = edges
    d, s = triage_both(spark, spec, root / "lake", tmp_path)
    for r in (d, s):
        assert set(r.affected["request_id"]) == EDGE_AFFECTED | AFFECTED["sglang_metrics"] | AFFECTED["sglang_json"]
        cat = _categories(r)
        assert {k for k, v in cat.items() if v == "possibly-affected"} == POSSIBLY_AFFECTED
        assert {k: cat.get(k) for k in ("e01", "e06", "e08", "e09", "e10", "e11", "e12", "e13", "e14")} == {
            "e01": None, "e06": None, "e08": "other-rule", "e09": "other-rule", "e10": None, "e11": None,
            "e12": "rejected", "e13": "failed", "e14": "undecidable"}
        assert (cat["d4"], cat["d5"], cat["d6"], cat.get("d8")) == ("rejected", "aborted", "failed", None)
        assert (cat["m3"], cat["m4"]) == ("other-rule", "rejected")
        assert r.summary["other_rule_adds"] == 2 + 2 + 1     # e08 e09; d2 d3; m3 (681,280, inside the window)
        # customers from the gateway; engine logs name none (grouped as unknown)
        acc = dict(zip(r.accounts["account_id"].fillna("?"), r.accounts["affected"]))
        assert acc == {"cust-a": 5, "cust-b": 1, "?": 4}
        nodes = {(n, role): k for n, role, k in zip(r.nodes["node"].fillna("?"), r.nodes["role"], r.nodes["affected"])}
        assert nodes == {("prefill-0", "prefill"): 2, ("decode-0", "decode"): 2, ("decode-1", "decode"): 2,
                         ("?", "unknown"): 6}     # d1 d7 on prefill-0 -> decode-0; m1 m6 on decode-1; the gateway names none
        # the fixtures' own hand counts per file: read = parsed + quarantined survives the lake
        for x in r.sources:
            shard, label = x["label"].split(":", 1)
            if shard != "gateway":
                rel = Path(label).resolve().relative_to(FIXTURES.resolve()).as_posix()
                assert (x["read"], x["requests"], x["skipped"], x["quarantined"]) == COUNTS[rel], rel
        assert {x["label"] for x in r.sources if x["label"].startswith("gateway:")} == {f"gateway:{root / 'gateway' / 'gw.ndjson'}"}


def test_pool_in_effect_on_both_engines(spark, edges, tmp_path):
    """prefill-0 restarted at 2026-08-28 00:00Z with a 2,097,152-token pool: d1 (14:59:59.5Z that day)
    is judged by the new pool (engine limit 1,048,570) and is no longer exposed; d7 (the window start)
    ran on the old pool. Requests without a prefill node (gateway, metrics export, PD requests whose
    prefill copy is not in the logs) keep the global rule."""
    root, spec = edges
    d, s = triage_both(spark, spec, root / "lake", tmp_path, startup=[root / "startup" / "prefill-0.log"], source_tz=CHI)
    for r in (d, s):
        assert r.summary["oversized_prompt"]["threshold"].startswith("pool in effect")
        assert set(r.affected["request_id"]) == EDGE_AFFECTED | AFFECTED["sglang_metrics"] | {"d7"}
        # only d1, d2 and d7 have a prefill copy (rooms 1001, 1002, 1007 in prefill-0.jsonl): d1 and d2 ran
        # after the restart and fall under the new limits; d3-d6 name no prefill node and keep the global rule
        cat = _categories(r)
        assert {k: v for k, v in cat.items() if k.startswith("d")} == {
            "d3": "other-rule", "d4": "rejected", "d5": "aborted", "d6": "failed", "d7": "affected"}
        src = dict(r.case.con.execute("SELECT request_id, threshold_source FROM triage_hits").fetchall())
        assert src["d7"] == "node start" and src["d3"] == src["e02"] == "global: the request names no prefill node"
        pool = dict(r.case.con.execute("SELECT request_id, pool_in_effect FROM triage_hits").fetchall())
        assert (pool["d7"], pool["d3"]) == (681280, 681280)
