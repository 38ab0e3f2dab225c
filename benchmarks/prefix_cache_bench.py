"""Prefix-cache triage against baselines in the same process (benchmarks/README.md "Prefix-cache triage").

    python benchmarks/prefix_cache_bench.py --rows 1e5 --tenants 50 --instances 4 [--lifetime 600]

A synthetic request log (generic Parquet: random tenants, instances, prompt lengths and block-aligned cached
counts over one day, seed 0) is triaged (a) with the prefix-cache mechanism, (b) with the oversized-prompt
mechanism on the same file (the same ingest, exports and case: the cost of everything but the rule), and
(c) bare DuckDB: the cache hits counted from the Parquet file. Ratios are (a)/(b) and (a)/(c); the verdict
counts are printed so a change of answers shows. Results: benchmarks/results/prefix_cache.json.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import kvir

SPEC = '''[incident]
id = "BENCH"
title = "bench"
models = ["m"]
window_start = 2026-11-01T00:00:00Z
window_end = 2026-11-02T00:00:00Z
'''


def make_log(path: Path, n: int, tenants: int, instances: int) -> None:
    rng = np.random.default_rng(0)
    ts = np.datetime64("2026-11-01T00:00:00", "ms") + np.sort(rng.integers(0, 86_400_000, n)).astype("timedelta64[ms]")
    prompt = rng.integers(50, 8000, n)
    cached = np.minimum(rng.integers(0, 8000, n), prompt - 1) // 16 * 16
    pq.write_table(pa.table({
        "request_id": [f"r{i}" for i in range(n)], "ts": pa.array(ts).cast(pa.timestamp("ms", tz="UTC")),
        "account_id": [f"t{i}" for i in rng.integers(0, tenants, n)], "model": ["m"] * n,
        "prompt_tokens": prompt, "cached_tokens": cached, "http_status": [200] * n,
        "prefill_node": [f"n{i}" for i in rng.integers(0, instances, n)]}), path)


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=float, default=1e5)
    ap.add_argument("--tenants", type=int, default=50)
    ap.add_argument("--instances", type=int, default=4)
    ap.add_argument("--lifetime", type=int, default=None)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kvir-pc-bench-") as tmp:
        d = Path(tmp)
        log = d / "requests.parquet"
        make_log(log, int(a.rows), a.tenants, a.instances)
        pc = SPEC + 'mechanism = "prefix-cache"\n' + (f"[prefix_cache]\nlifetime_s = {a.lifetime}\n" if a.lifetime else "")
        (d / "pc.toml").write_text(pc)
        (d / "op.toml").write_text(SPEC + "[trigger]\npool_tokens = 7000\ncontext_tokens = 8192\n")
        bare, hits = timed(lambda: duckdb.sql("SELECT count(*) FROM read_parquet($p) WHERE cached_tokens > 0",
                                              params={"p": str(log)}).fetchall()[0][0])
        t_op, r_op = timed(lambda: kvir.triage(d / "op.toml", [log], out=d / "op", format="generic-parquet"))
        r_op.case.close()
        t_pc, r_pc = timed(lambda: kvir.triage(d / "pc.toml", [log], out=d / "pc", format="generic-parquet"))
        s = r_pc.summary
        r_pc.case.close()
    out = {"rows": int(a.rows), "tenants": a.tenants, "instances": a.instances, "lifetime_s": a.lifetime,
           "cache_hits": hits, "affected": s["affected"], "possibly_affected": s["possibly_affected"],
           "bare_s": round(bare, 3), "oversized_triage_s": round(t_op, 3), "prefix_triage_s": round(t_pc, 3),
           "prefix_over_oversized": round(t_pc / t_op, 2), "prefix_over_bare": round(t_pc / bare, 1)}
    print(json.dumps(out, indent=1))
    res = Path(__file__).parent / "results" / "prefix_cache.json"
    runs = json.loads(res.read_text()) if res.exists() else []
    res.write_text(json.dumps(runs + [out], indent=1) + "\n")


if __name__ == "__main__":
    main()
