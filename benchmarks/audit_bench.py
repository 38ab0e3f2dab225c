"""kvir audit over a fleet's engine logs, against baselines in the same run.

    python benchmarks/audit_bench.py [--copies 10] [--repeat 3] [--triage-size 10000000] [--data benchmarks/data]

The reference fleet (kvir simulate, 50,000 requests) has eight engine server.log files (start-up blocks,
text request lines on five nodes, runtime ERROR lines). --copies replicates them under new node names
to make a larger fleet. Then, warm and in this process, the median of --repeat runs of
  (a) grep: `grep -h -e max_total_num_tokens= -e context_len=` over the same files (the minimum any
      tool pays to find the pool lines; it parses nothing);
  (b) bare DuckDB: read every line with read_csv and regexp_extract pool and context from the pool
      lines (what an analyst would write; no rank dedup, no starts, no evidence, no rules);
  (c) kvir.audit.audit(...) with every table, finding and the exposure view.
Pool in effect, on the Parquet reference fleet of --triage-size requests (kvir simulate --format
parquet, cached in --data; its nodes and restarts are those of the native fleet, whose start-up logs
are used): kvir triage with one global pool vs with --startup, and, inside one case, the query
triage/hits against triage/hits_pool_in_effect (the ASOF-style window over the in-scope requests).
Prints ratios and MB/s and writes benchmarks/results/audit.json.
"""
from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BARE_SQL = """
SELECT count(*) AS pool_lines,
       count(DISTINCT regexp_extract(line, 'max_total_num_tokens=(\\d+)', 1) || '/' ||
                      regexp_extract(line, 'context_len=(\\d+)', 1)) AS distinct_configs
FROM read_csv($files, columns = {'line': 'VARCHAR'}, header = false, delim = '\\x1f', quote = '', escape = '',
              auto_detect = false, ignore_errors = true)
WHERE line LIKE '%max_total_num_tokens=%'
"""


def timed(fn, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def make_fleet(data: Path, copies: int) -> tuple[Path, list[Path]]:
    from kvir.sim.fleet import simulate

    base = data / "audit-fleet"
    if not (base / "ground_truth" / "summary.json").exists():
        simulate(base)
    logs = sorted((base / "engine").glob("*/server.log"))
    big = data / f"audit-logs-x{copies}"
    if not big.exists():
        for k in range(copies):
            for p in logs:
                d = big / f"{p.parent.name}-c{k}"
                d.mkdir(parents=True, exist_ok=True)
                shutil.copy(p, d / "server.log")
    return base, sorted(big.glob("*/server.log"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--triage-size", type=int, default=10_000_000)
    ap.add_argument("--data", type=Path, default=HERE / "data")
    a = ap.parse_args()
    import duckdb

    from kvir.audit import audit

    base, files = make_fleet(a.data, a.copies)
    size = sum(p.stat().st_size for p in files)
    lines = sum(1 for p in files for _ in open(p, "rb"))
    print(f"{len(files)} files, {size / 1e6:.1f} MB, {lines:,} lines", file=sys.stderr)

    t_grep, _ = timed(lambda: subprocess.run(["grep", "-h", "-e", "max_total_num_tokens=", "-e", "context_len=",
                                              *map(str, files)], capture_output=True, check=True), a.repeat)

    def bare():
        con = duckdb.connect()
        return con.execute(BARE_SQL, {"files": [str(p) for p in files]}).fetchall()

    t_bare, bare_rows = timed(bare, a.repeat)
    t_kvir, res = timed(lambda: audit(files, source_tz="America/Chicago"), a.repeat)
    assert len(res.node_configs) == 12 * a.copies, len(res.node_configs)

    from kvir.case.store import open_case
    from kvir.spec.model import load_spec
    from kvir.triage.run import triage

    pq_fleet = a.data / f"fleet-{a.triage_size}"
    if not (pq_fleet / "ground_truth" / "summary.json").exists():
        from kvir.sim.fleet import simulate

        simulate(pq_fleet, requests=a.triage_size, format="parquet")
    out = a.data / "audit-bench-case"

    def tri(startup):
        r = triage(pq_fleet / "incident.toml", out=out, startup=startup,
                   inventory=base / "inventory.toml" if startup else None)
        r.case.close()
        return r.summary["affected"]

    t_global, n_global = timed(lambda: tri(None), a.repeat)
    t_pie, n_pie = timed(lambda: tri([base / "engine"]), a.repeat)
    assert n_global == n_pie == 155, (n_global, n_pie)
    spec = load_spec(pq_fleet / "incident.toml")
    params = {**spec.query_params(), **spec.params.query_params()}     # the shared values and the trigger's
    m = spec.mech.folder
    with open_case(out) as case:      # the last run was with --startup: node_configs is there
        t_q_global, _ = timed(lambda: case.run("triage/hits", params, mechanism=m), a.repeat)
        t_q_pie, _ = timed(lambda: case.run("triage/hits_pool_in_effect", params, mechanism=m), a.repeat)

    result = {
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "duckdb": duckdb.__version__},
        "files": len(files), "bytes": size, "lines": lines, "node_starts": int(len(res.node_configs)),
        "triage_requests": a.triage_size,
        "seconds": {"grep": t_grep, "bare_duckdb": t_bare, "kvir_audit": t_kvir,
                    "triage_global": t_global, "triage_pool_in_effect": t_pie,
                    "query_hits": t_q_global, "query_hits_pool_in_effect": t_q_pie},
        "ratios": {"kvir_audit_vs_bare_duckdb": t_kvir / t_bare, "kvir_audit_vs_grep": t_kvir / t_grep,
                   "triage_pool_in_effect_vs_global": t_pie / t_global,
                   "query_hits_pool_in_effect_vs_hits": t_q_pie / t_q_global},
        "mb_per_s": {"kvir_audit": size / 1e6 / t_kvir, "bare_duckdb": size / 1e6 / t_bare},
        "bare_rows": bare_rows,
    }
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "audit.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("files", "bytes", "lines", "triage_requests", "seconds", "ratios",
                                             "mb_per_s")}, indent=2))


if __name__ == "__main__":
    main()
