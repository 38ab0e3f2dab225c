"""`kvir ingest`: a shard of canonical requests Parquet, and how triage takes a lake (DuckDB only, no JVM)."""
from __future__ import annotations

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

import kvir
from kvir.core.errors import InputError, KvirError
from kvir.ingest.export import ingest_shard
from kvir.triage.spark import parse_conf
from tests.conftest import spec_text
from tests.formats.expected import AFFECTED, COUNTS, FIXTURES

CHI = "America/Chicago"


@pytest.fixture
def pd_lake(tmp_path):
    spec = tmp_path / "incident.toml"
    spec.write_text(spec_text())
    r = ingest_shard([FIXTURES / "sglang_json"], tmp_path / "lake", shard="01", incident=spec, source_tz=CHI,
                     hash="none")
    return tmp_path, spec, r


def test_a_shard_holds_canonical_requests_by_utc_day_and_every_input_counted(pd_lake):
    tmp_path, spec, r = pd_lake
    lake = tmp_path / "lake"
    # d8 starts 1 us before 2026-08-27 00:00Z, d7 at it; d1..d6 on 2026-08-28 (10:00 CDT = 15:00Z)
    days = sorted(p.name for p in (lake / "requests" / "shard=01").iterdir())
    assert days == ["dt=2026-08-26", "dt=2026-08-27", "dt=2026-08-28"]
    rows = pq.read_table(lake / "requests" / "shard=01").to_pylist()
    assert sorted(x["request_id"] for x in rows) == ["d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8"]   # p1 p2 p7 merged
    assert r.requests == 8 and {x["source_file"].rsplit("/", 1)[1] for x in rows} == {"decode-0.jsonl"}
    d1 = next(x for x in rows if x["request_id"] == "d1")
    assert (d1["prefill_tokens"], d1["prefill_node"], d1["n_records"]) == (1, "prefill-0", 3)
    for s in r.sources:                                        # the fixtures' hand counts, per file
        rel = f"sglang_json/{s['label'].rsplit('/', 1)[1]}"
        assert (s["read"], s["requests"], s["skipped"], s["quarantined"]) == COUNTS[rel]
    q = pq.read_table(lake / "quarantine" / "shard=01").to_pylist()
    assert len(q) == 1 and q[0]["raw"] is None and q[0]["source_file"].endswith("decode-0.jsonl")
    shard = pq.read_table(lake / "shards" / "shard=01").to_pylist()[0]
    assert (shard["requests"], shard["read"], shard["quarantined"], shard["incident"]) == (8, 16, 1, "KVIR-2026-0001")
    manifest = json.loads((lake / "manifests" / "01.json").read_text())
    assert manifest["shard"]["shard"] == "01" and any(e["query"] == "queries/case/requests_merged.sql"
                                                       for e in manifest["queries"])
    assert not (lake / "_staging").exists()


def test_duckdb_triage_of_a_lake_equals_the_triage_of_its_logs(pd_lake):
    tmp_path, spec, _ = pd_lake
    logs = kvir.triage(spec, [FIXTURES / "sglang_json"], out=tmp_path / "logs", source_tz=CHI, hash="none")
    lake = kvir.triage(spec, [tmp_path / "lake"], out=tmp_path / "lakecase")
    assert set(lake.affected["request_id"]) == AFFECTED["sglang_json"]
    for t in ("affected", "accounts", "nodes"):
        assert logs.case.df(t).equals(lake.case.df(t)), t
    # the shard name "01" stays text (DuckDB's hive partitioning would read it as the number 1)
    assert lake.case.con.execute("SELECT DISTINCT shard FROM requests").fetchall() == [("01",)]
    assert lake.summary["requests_total"] == 8 and [s["label"].split(":")[0] for s in lake.sources] == ["01", "01"]


def test_shards_are_written_once_each_and_read_only_when_complete(pd_lake):
    tmp_path, spec, _ = pd_lake
    lake = tmp_path / "lake"
    with pytest.raises(InputError, match="shard 01 already exists"):
        ingest_shard([FIXTURES / "sglang_json"], lake, shard="01", source_tz=CHI)
    again = ingest_shard([FIXTURES / "sglang_json" / "decode-0.jsonl"], lake, shard="01", source_tz=CHI,
                         overwrite=True, hash="none")
    assert [s["label"].rsplit("/", 1)[1] for s in again.sources] == ["decode-0.jsonl"]
    assert len(pq.read_table(lake / "sources" / "shard=01")) == 1          # the old shard is gone
    with pytest.raises(InputError, match="shard name"):
        ingest_shard([FIXTURES / "sglang_json"], lake, shard="../x", source_tz=CHI)
    with pytest.raises(InputError, match="naive host-local"):
        ingest_shard([FIXTURES / "sglang_json"], lake, shard="b")
    (tmp_path / "notalake").mkdir()
    (tmp_path / "notalake" / "x.txt").write_text("x")
    with pytest.raises(InputError, match="not a kvir canonical dataset"):
        ingest_shard([FIXTURES / "sglang_json"], tmp_path / "notalake", source_tz=CHI)
    # a shard whose shards/ row is missing (killed mid-publish) is refused, not read half
    (lake / "shards" / "shard=01" / "part-0.parquet").rename(tmp_path / "row.parquet")
    (lake / "shards" / "shard=01").rmdir()
    (lake / "shards" / "shard=ok").mkdir()
    (tmp_path / "row.parquet").rename(lake / "shards" / "shard=ok" / "part-0.parquet")
    with pytest.raises(InputError, match="shard.s. 01 have requests but no shards/ row"):
        kvir.triage(spec, [lake], out=tmp_path / "c")


def test_engine_choice_and_spark_settings_are_checked_before_any_work(pd_lake):
    tmp_path, spec, _ = pd_lake
    with pytest.raises(InputError, match="--engine must be duckdb or spark"):
        kvir.triage(spec, [tmp_path / "lake"], out=tmp_path / "c", query_engine="trino")
    with pytest.raises(InputError, match="not a kvir canonical dataset"):
        kvir.triage(spec, [FIXTURES / "sglang_json"], out=tmp_path / "c", query_engine="spark")
    with pytest.raises(InputError, match="not both"):
        kvir.triage(spec, [tmp_path / "lake", FIXTURES / "sglang_json"], out=tmp_path / "c")
    assert parse_conf(["spark.executor.memory=8g", "spark.sql.shuffle.partitions = 64"]) == {
        "spark.executor.memory": "8g", "spark.sql.shuffle.partitions": "64"}
    with pytest.raises(KvirError, match="KEY=VALUE"):
        parse_conf(["spark.executor.memory"])
    with pytest.raises(KvirError, match="UTC only"):
        parse_conf(["spark.sql.session.timeZone=America/Chicago"])


def test_kvir_ingest_command(tmp_path):
    spec = tmp_path / "incident.toml"
    spec.write_text(spec_text())
    proc = subprocess.run([sys.executable, "-m", "kvir.cli.app", "ingest", str(FIXTURES / "sglang_metrics"), "-o",
                           str(tmp_path / "lake"), "--shard", "decode-host", "-i", str(spec), "--source-tz", CHI,
                           "--json", "--quiet"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    # m1..m6; m7 (a DST fold), m8 (a file name without its hour) and m9 (truncated) are quarantined
    assert out["shard"] == "decode-host" and out["requests"] == 6
    bad = subprocess.run([sys.executable, "-m", "kvir.cli.app", "triage", "-i", str(spec), "-o", str(tmp_path / "c"),
                          "--engine", "spark", "--spark-conf", "nonsense", str(tmp_path / "lake")],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "KEY=VALUE" in bad.stderr
