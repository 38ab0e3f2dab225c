"""Spark local vs DuckDB: kvir triage over one canonical dataset of 10^8 requests, in the same run.

    python benchmarks/spark_bench.py [--size 1e8] [--data benchmarks/data] [--repeat 3] [--master local[2]]

1. the fleet: `kvir simulate --format parquet` (triage_bench.py's cache in --data: fleet-N, seed 7);
2. the lake: `kvir ingest` of that fleet as one shard (cached in --data as lake-N; time and size reported);
3. in this process, warm, interleaved (DuckDB, Spark, DuckDB, Spark, ...), --repeat times each:
   (a) kvir.triage(query_engine="duckdb") and kvir.triage(query_engine="spark") over the lake, with every output
       (case, Parquet/CSV exports, manifest, compiled SQL);
   (b) the bare analyst query on each engine over the same files (affected count and distinct accounts);
   every variant must say 155 responses and 87 accounts or the run fails; wall seconds and CPU seconds
   (this process, plus the JVM's for Spark) are both kept: the machine is shared, CPU is the steadier;
4. in fresh processes, one triage per engine: peak RSS (Spark: the JVM's high-water mark plus the Python
   driver's) and the cold time (Spark: session start included).
Prints the medians and ratios, writes benchmarks/results/spark.json. Figures go to benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from triage_bench import fleet  # noqa: E402  (the same cached fleets)

WHERE = """model IN ('@cf/zai-org/glm-5.3', 'zai-org/GLM-5.3')
  AND ts BETWEEN TIMESTAMP '2026-08-27 00:00:00' AND TIMESTAMP '2026-09-09 19:40:00'
  AND prompt_tokens > 681280 AND http_status = 200"""
BARE = f"SELECT count(*) AS affected, count(DISTINCT account_id) AS accounts FROM requests WHERE {WHERE}"
EXPECT = (155, 87)


def lake_of(data: Path, n: int) -> tuple[Path, Path, dict]:
    import kvir

    root = fleet(data, n)
    lake = data / f"lake-{n}"
    info = data / f"lake-{n}.json"
    if not info.exists():
        t = time.perf_counter()
        r = kvir.ingest_shard([root / "requests"], lake, shard="bench", incident=root / "incident.toml",
                              overwrite=True, progress=True)
        size = sum(p.stat().st_size for p in (lake / "requests").rglob("*.parquet"))
        info.write_text(json.dumps({"ingest_s": round(time.perf_counter() - t, 1), "requests": r.requests,
                                    "lake_bytes": size, "fleet_bytes": sum(p.stat().st_size for p in
                                                                          (root / "requests").rglob("*.parquet"))}))
    return root, lake, json.loads(info.read_text())


def jvm_pids() -> list[int]:
    """The java processes below this one (PySpark's gateway)."""
    me, out, kids = os.getpid(), [], {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
                kids.setdefault(int(fields[1]), []).append(int(d.name))
            except OSError:
                continue
    todo = list(kids.get(me, []))
    while todo:
        p = todo.pop()
        todo += kids.get(p, [])
        try:
            if (Path("/proc") / str(p) / "comm").read_text().strip() == "java":
                out.append(p)
        except OSError:
            pass
    return out


def jvm_cpu() -> float:
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for p in jvm_pids():
        f = (Path("/proc") / str(p) / "stat").read_text().rsplit(")", 1)[1].split()
        total += (int(f[11]) + int(f[12])) / tick
    return total


def hwm_bytes(pid: int | str = "self") -> int:
    """Peak RSS of one process (VmHWM: reset by exec, unlike getrusage's ru_maxrss, which a child started
    by a big parent inherits)."""
    for line in (Path("/proc") / str(pid) / "status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def jvm_hwm_bytes() -> int:
    return sum(hwm_bytes(p) for p in jvm_pids())


def measured(fn, spark: bool) -> tuple[float, float, object]:
    c0 = time.process_time() + (jvm_cpu() if spark else 0.0)
    t0 = time.perf_counter()
    result = fn()
    wall = time.perf_counter() - t0
    return wall, time.process_time() + (jvm_cpu() if spark else 0.0) - c0, result


def session(master: str, driver_memory: str):
    from kvir.triage.spark import session as kvir_session

    return kvir_session(master, {"spark.driver.memory": driver_memory})


def triage_once(spec: Path, lake: Path, engine: str, out: Path, master: str) -> tuple[int, int]:
    import kvir

    r = kvir.triage(spec, [lake], out=out, query_engine=engine, spark_master=master if engine == "spark" else None)
    got = (int(r.summary["affected"]), int(r.summary["affected_accounts"]))
    r.case.close()
    return got


def bare_duckdb(lake: Path) -> tuple[int, int]:
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    files = [str(p) for p in sorted((lake / "requests").rglob("*.parquet"))]
    con.read_parquet(files).create_view("requests")          # DuckDB quotes the paths itself
    return tuple(con.execute(BARE).fetchone())


def bare_spark(spark, lake: Path) -> tuple[int, int]:
    spark.read.parquet(str(lake / "requests")).createOrReplaceTempView("requests")
    row = spark.sql(BARE).collect()[0]
    return int(row[0]), int(row[1])


def worker(args) -> None:
    """One triage in this fresh process: peak RSS and the cold time (for Spark: session start included)."""
    t0 = time.perf_counter()
    if args.worker == "spark":
        session(args.master, args.driver_memory)
    with tempfile.TemporaryDirectory(dir=args.data) as tmp:
        got = triage_once(Path(args.spec), Path(args.lake), args.worker, Path(tmp) / "case", args.master)
    out = {"engine": args.worker, "cold_s": round(time.perf_counter() - t0, 2), "result": got,
           "python_peak_rss_bytes": hwm_bytes(),
           "jvm_hwm_bytes": jvm_hwm_bytes() if args.worker == "spark" else 0}
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1e8")
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--worker", choices=("duckdb", "spark"))
    ap.add_argument("--spec")
    ap.add_argument("--lake")
    args = ap.parse_args()
    args.data.mkdir(parents=True, exist_ok=True)
    if args.worker:
        return worker(args)
    n = int(float(args.size))
    root, lake, info = lake_of(args.data, n)
    spec = root / "incident.toml"
    print(f"lake: {info['requests']:,} requests, {info['lake_bytes'] / 1e9:.2f} GB "
          f"(fleet {info['fleet_bytes'] / 1e9:.2f} GB), kvir ingest {info['ingest_s']} s", file=sys.stderr)
    t = time.perf_counter()
    spark = session(args.master, args.driver_memory)
    start_s = time.perf_counter() - t
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in ("duckdb", "spark", "bare_duckdb", "bare_spark")}
    first: dict[str, float] = {}
    with tempfile.TemporaryDirectory(dir=args.data) as tmp:
        for i in range(args.repeat + 1):            # the first round warms both engines up (JIT, caches)
            for name, fn, on_spark in (
                    ("duckdb", lambda: triage_once(spec, lake, "duckdb", Path(tmp) / f"d{i}", args.master), False),
                    ("spark", lambda: triage_once(spec, lake, "spark", Path(tmp) / f"s{i}", args.master), True),
                    ("bare_duckdb", lambda: bare_duckdb(lake), False),
                    ("bare_spark", lambda: bare_spark(spark, lake), True)):
                wall, cpu, got = measured(fn, on_spark)
                if tuple(got) != EXPECT:
                    raise SystemExit(f"{name} says {got}, not {EXPECT}")
                if i == 0:
                    first[name] = wall
                else:
                    runs[name].append((wall, cpu))
                print(f"  round {i} {name:12s} {wall:7.2f} s wall {cpu:7.2f} s CPU", file=sys.stderr)
    spark.stop()
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
    rss = {}
    for engine in ("duckdb", "spark"):
        proc = subprocess.run([sys.executable, __file__, "--worker", engine, "--spec", str(spec), "--lake", str(lake),
                               "--data", str(args.data), "--master", args.master,
                               "--driver-memory", args.driver_memory], capture_output=True, text=True)
        if proc.returncode:
            raise SystemExit(proc.stderr[-3000:])
        rss[engine] = json.loads(proc.stdout.strip().splitlines()[-1])
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_avg_after": os.getloadavg()},
        "size": n, "lake": info, "master": args.master, "driver_memory": args.driver_memory, "repeat": args.repeat,
        "spark_session_start_s": round(start_s, 2), "first_round_wall_s": {k: round(v, 2) for k, v in first.items()},
        "median_wall_s": {k: round(v[0], 2) for k, v in med.items()},
        "median_cpu_s": {k: round(v[1], 2) for k, v in med.items()},
        "ratio_spark_over_duckdb": {"triage_wall": round(med["spark"][0] / med["duckdb"][0], 2),
                                    "triage_cpu": round(med["spark"][1] / med["duckdb"][1], 2),
                                    "bare_wall": round(med["bare_spark"][0] / med["bare_duckdb"][0], 2),
                                    "bare_cpu": round(med["bare_spark"][1] / med["bare_duckdb"][1], 2)},
        "ratio_triage_over_bare": {"duckdb": round(med["duckdb"][0] / med["bare_duckdb"][0], 2),
                                   "spark": round(med["spark"][0] / med["bare_spark"][0], 2)},
        "rows_per_s": {k: round(n / v[0]) for k, v in med.items()},
        "fresh_process": rss,
    }
    out = HERE / "results" / "spark.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
