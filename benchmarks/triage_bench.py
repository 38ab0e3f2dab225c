"""Triage over 10^7 and 10^8 requests of the reference fleet (Parquet), against baselines in the same run.

    python benchmarks/triage_bench.py [--sizes 1e7,1e8] [--data benchmarks/data] [--repeat 3]

For each size: `kvir simulate --format parquet` writes the fleet (cached in --data); then, in this
process and warm, the median of --repeat runs of
  (a) bare DuckDB: the SQL a skilled analyst would write for "affected responses and distinct accounts"
      (counts), and the same filter returning the affected rows themselves (a list);
  (b) kvir.triage(...) with all its outputs (case, Parquet/CSV exports, manifest; default --hash auto);
  (c) a plain pandas version (read the needed columns, filter, count) at 10^7 only;
and, in a fresh subprocess, kvir triage's peak RSS. kvir_fixed_s: the median triage's seconds outside its
scan (the triage/hits query, timed in the case's manifest): the per-case fixed costs. Prints ratios and rows/s and writes
benchmarks/results/triage.json. Figures go to benchmarks/README.md by hand (with the machine).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BARE_SQL = """
SELECT count(*) AS affected, count(DISTINCT account_id) AS accounts
FROM read_parquet($glob, hive_partitioning = true)
WHERE model IN ('@cf/zai-org/glm-5.3', 'zai-org/GLM-5.3')
  AND ts BETWEEN TIMESTAMPTZ '2026-08-27 00:00:00+00' AND TIMESTAMPTZ '2026-09-09 19:40:00+00'
  AND prompt_tokens > 681280 AND http_status = 200
"""


LIST_SQL = """
SELECT request_id, ts, account_id, model, prompt_tokens, http_status, prefill_node, decode_node
FROM read_parquet($glob, hive_partitioning = true)
WHERE model IN ('@cf/zai-org/glm-5.3', 'zai-org/GLM-5.3')
  AND ts BETWEEN TIMESTAMPTZ '2026-08-27 00:00:00+00' AND TIMESTAMPTZ '2026-09-09 19:40:00+00'
  AND prompt_tokens > 681280 AND http_status = 200
"""


def fleet(data: Path, n: int) -> Path:
    import kvir

    out = data / f"fleet-{n}"
    if not (out / "ground_truth" / "summary.json").exists():
        t = time.perf_counter()
        kvir.simulate(out, requests=n, seed=7, format="parquet", progress=True)
        print(f"  simulated {n:,} requests in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return out


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def bare(root: Path):
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    return con.execute(BARE_SQL, {"glob": str(root / "requests" / "**" / "*.parquet")}).fetchall()[0]


def bare_list(root: Path):
    """The same question answered with the rows themselves (what a responder needs to notify anyone)."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    rows = con.execute(LIST_SQL, {"glob": str(root / "requests" / "**" / "*.parquet")}).fetchall()
    return len(rows), len({r[2] for r in rows})


FIXED: list[float] = []      # per run: the triage's seconds outside its scan (triage/hits)


def triage(root: Path, case: Path):
    import kvir

    t = time.perf_counter()
    r = kvir.triage(root / "incident.toml", out=case)
    total = time.perf_counter() - t
    s = r.summary
    r.case.close()
    scan = sum(q["seconds"] for q in json.loads((case / "manifest.json").read_text())["queries"]
               if q["query"] == "queries/mechanisms/oversized_prompt/triage/hits.sql")
    FIXED.append(total - scan)
    return s["affected"], s["affected_accounts"]


def pandas_version(root: Path):
    import pandas as pd

    df = pd.read_parquet(root / "requests", columns=["ts", "account_id", "model", "prompt_tokens", "http_status"])
    m = (df["model"].isin(["@cf/zai-org/glm-5.3", "zai-org/GLM-5.3"])
         & (df["ts"] >= pd.Timestamp("2026-08-27 00:00:00", tz="UTC"))
         & (df["ts"] <= pd.Timestamp("2026-09-09 19:40:00", tz="UTC"))
         & (df["prompt_tokens"] > 681280) & (df["http_status"] == 200))
    hit = df[m]
    return len(hit), hit["account_id"].nunique()


def peak_rss_mb(root: Path, case: Path) -> float:
    """kvir triage's peak RSS in a fresh process, as benchmarks/volume_bench.py measures it: a tiny wrapper
    forks it and reports that process's own wait4() rusage. (Spawned from this process, a child's
    ru_maxrss starts at this process's size, warm after the timed runs; RUSAGE_CHILDREN is the largest
    child so far, e.g. a fleet simulation's worker.)"""
    from volume_bench import run_one

    code = ("import kvir; r = kvir.triage(%r, out=%r); r.case.close()" % (str(root / "incident.toml"), str(case)))
    return run_one([sys.executable, "-c", code])["rss_mb"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1e7,1e8")
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pandas-max", type=float, default=1e7)
    args = ap.parse_args()
    results = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                           "platform": platform.platform()}, "runs": []}
    for size in (int(float(x)) for x in args.sizes.split(",")):
        root = fleet(args.data, size)
        case = args.data / f"case-{size}"
        bare(root)                                            # warm the page cache
        t_bare, r_bare = timed(lambda: bare(root), args.repeat)
        t_list, r_list = timed(lambda: bare_list(root), args.repeat)
        FIXED.clear()
        t_kvir, r_kvir = timed(lambda: triage(root, case), args.repeat)
        assert tuple(r_bare) == tuple(r_kvir) == tuple(r_list), (r_bare, r_kvir, r_list)   # same answer, or no timing
        row = {"rows": size, "affected": r_kvir[0], "accounts": r_kvir[1], "bare_duckdb_s": round(t_bare, 3),
               "bare_list_s": round(t_list, 3), "kvir_triage_s": round(t_kvir, 3),
               "triage_over_bare": round(t_kvir / t_bare, 2), "triage_over_bare_list": round(t_kvir / t_list, 2),
               "kvir_rows_per_s": round(size / t_kvir),
               # what a case costs whatever its size: staging, spec, sources, small queries, exports, swap
               "kvir_fixed_s": round(statistics.median(FIXED), 3), "load_average": os.getloadavg()}
        if size <= args.pandas_max:
            t_pd, r_pd = timed(lambda: pandas_version(root), max(1, args.repeat - 1))
            assert tuple(r_pd) == tuple(r_kvir), (r_pd, r_kvir)
            row.update({"pandas_s": round(t_pd, 3), "pandas_over_triage": round(t_pd / t_kvir, 2),
                        "pandas_over_bare": round(t_pd / t_bare, 2)})
        row["kvir_peak_rss_mb"] = round(peak_rss_mb(root, args.data / f"case-rss-{size}"), 1)
        results["runs"].append(row)
        print(json.dumps(row), flush=True)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "triage.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
