"""Ingest benchmark: normalising SGLang JSON request-log lines (NDJSON) into a case, against a bare DuckDB
`read_ndjson` of the same files with the same columns, in the same run.

    python benchmarks/ingest_bench.py --lines 10000000 --files 8 --repeat 3

Data: a PD fleet's request logs, written once under --data (default benchmarks/data/ingest-<lines>):
half the files are prefill nodes, half decode nodes; every request is logged on one prefill and one
decode node, each as a `request.received` and a `request.finished` line (so 4 lines per request), in
SGLang's JSON shape (host-local naive ISO timestamps, bootstrap_room shared by the two copies).

Baseline: `CREATE TABLE base AS SELECT * FROM read_ndjson(files, columns = {...})` into a fresh
database file, the columns being exactly the fields the adapter reads (all leaves VARCHAR, as the
adapter's from_json schema), i.e. parsing and storing, nothing more.

kvir: `kvir.ingest.ingest` into a fresh case: numbered lines (kvir.lines), the adapter (parse, host-local
time -> UTC, outcome, classification, reasons), records + quarantine + per-file counts ("normalise"),
then the PD merge into `requests` ("merge"). Reported: normalise vs baseline (the issue's figure) and the
whole ingest vs baseline. Repeats are interleaved (baseline, kvir, baseline, kvir, ...) so both see the
same machine load; the best of each is compared, and every pair's ratio is listed.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent

COLUMNS = {
    "timestamp": "VARCHAR", "event": "VARCHAR", "rid": "VARCHAR",
    "obj": "STRUCT(rid VARCHAR, bootstrap_room VARCHAR)",
    "out": "STRUCT(meta_info STRUCT(id VARCHAR, prompt_tokens VARCHAR, completion_tokens VARCHAR, "
           "cached_tokens VARCHAR, e2e_latency VARCHAR, finish_reason STRUCT(type VARCHAR, status_code VARCHAR)))",
}

# One SGLang JSON request-log line per row (json.dumps spacing), built by DuckDB: k = 0..3 is the line of
# request r on its prefill node (received, finished) or decode node (received, finished).
_LINE_SQL = r"""
SELECT CASE WHEN k % 2 = 0 THEN
    '{"timestamp": "' || strftime(t0 + to_microseconds(k // 2 * 1000), '%Y-%m-%dT%H:%M:%S.%f') ||
    '", "event": "request.received", "rid": "' || rid || '", "obj": {"rid": "' || rid ||
    '", "stream": true, "bootstrap_host": "10.0.0.' || (r % 250) || '", "bootstrap_port": 8998, "bootstrap_room": ' ||
    room || ', "sampling_params": {"max_new_tokens": 8192, "temperature": 0.7}}}'
ELSE
    '{"timestamp": "' || strftime(t0 + to_microseconds(CAST(lat * 1e6 AS BIGINT)), '%Y-%m-%dT%H:%M:%S.%f') ||
    '", "event": "request.finished", "rid": "' || rid || '", "obj": {"rid": "' || rid ||
    '", "stream": true, "bootstrap_host": "10.0.0.' || (r % 250) || '", "bootstrap_port": 8998, "bootstrap_room": ' ||
    room || ', "sampling_params": {"max_new_tokens": 8192, "temperature": 0.7}}, "out": {"meta_info": {"id": "' || rid ||
    '", "finish_reason": {"type": "length", "length": ' || ntok || '}, "prompt_tokens": ' ||
    CASE WHEN k < 2 THEN CASE WHEN prompt > 681274 THEN 1 ELSE prompt END ELSE prompt END ||
    ', "completion_tokens": ' || ntok || ', "cached_tokens": 0, "e2e_latency": ' || lat || '}}}'
END AS line
FROM (
    SELECT r, k,
        TIMESTAMP '2026-08-27 00:00:00' + to_microseconds(r * 1157407) AS t0,      -- ~2.5 M requests over a month
        md5(CAST(r AS VARCHAR) || CASE WHEN k < 2 THEN 'p' ELSE 'd' END) AS rid,
        hash(r) % 9000000000000000000 AS room,
        CAST((hash(r * 31) % 1048576) AS BIGINT) AS prompt,
        CAST(hash(r * 7) % 2000 AS BIGINT) AS ntok,
        round((hash(r * 13) % 300000) / 1000.0, 3) AS lat
    FROM range($first, $last) AS q(r), range(4) AS kk(k)
    WHERE (k < 2) = $prefill
) ORDER BY r, k
"""


def generate(data: Path, lines: int, files: int) -> list[Path]:
    """Write the fleet's logs once (prefill-i.jsonl / decode-i.jsonl); reuse them when present."""
    data.mkdir(parents=True, exist_ok=True)
    done = data / "DONE"
    paths = sorted(data.glob("*.jsonl"))
    if done.exists() and len(paths) == files:
        return paths
    for p in paths:
        p.unlink()
    requests = lines // 4
    pairs = files // 2
    con = duckdb.connect()
    out = []
    for i in range(pairs):
        first, last = i * requests // pairs, (i + 1) * requests // pairs
        for role, prefill in (("prefill", True), ("decode", False)):
            p = data / f"{role}-{i}.jsonl"
            con.execute(f"COPY ({_LINE_SQL}) TO '{p}' (FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER '\x01')",
                        {"first": first, "last": last, "prefill": prefill})
            out.append(p)
    done.write_text(json.dumps({"lines": lines, "files": files}))
    return sorted(out)


def baseline(paths: list[Path], work: Path, threads: int | None) -> float:
    db = work / "baseline.duckdb"
    for p in (db, Path(str(db) + ".wal")):
        if p.exists():
            p.unlink()
    con = duckdb.connect(str(db))
    if threads:
        con.execute("SET threads = $t", {"t": threads})
    t0 = time.perf_counter()
    con.execute("CREATE TABLE base AS SELECT * FROM read_ndjson($files, columns = $cols)",
                {"files": [str(p) for p in paths], "cols": COLUMNS})
    con.execute("CHECKPOINT")
    seconds = time.perf_counter() - t0
    n = con.execute("SELECT count(*) FROM base").fetchall()[0][0]
    con.close()
    db.unlink()
    assert n > 0
    return seconds


def kvir_ingest(paths: list[Path], work: Path, threads: int | None) -> tuple[float, float, dict]:
    from kvir.case.store import Case
    from kvir.ingest.run import IngestOptions, ingest, plan_sources
    from kvir.spec.model import parse_spec

    spec = parse_spec({"incident": {"id": "BENCH", "title": "ingest benchmark", "models": ["zai-org/GLM-5.3"],
                                    "window_start": "2026-08-27T00:00:00Z", "window_end": "2026-09-26T00:00:00Z"},
                       "trigger": {"pool_tokens": 681280, "context_tokens": 1048576}})
    opts = IngestOptions(source_tz="America/Chicago", served_model="zai-org/GLM-5.3", hash="none")
    sources = plan_sources(list(paths), spec, opts)
    case_dir = work / "case"
    shutil.rmtree(case_dir, ignore_errors=True)
    case = Case.create(case_dir, threads=threads)
    merge = {"s": 0.0}
    import kvir.ingest.run as ing

    build = ing._build_requests

    def timed_build(*a, **k):
        t = time.perf_counter()
        try:
            return build(*a, **k)
        finally:
            merge["s"] += time.perf_counter() - t

    ing._build_requests = timed_build
    try:
        t0 = time.perf_counter()
        counts = ingest(case, sources, opts)
        case.con.execute("CHECKPOINT")
        total = time.perf_counter() - t0
    finally:
        ing._build_requests = build
    read = sum(s["read"] for s in counts["sources"])
    bad = sum(s["quarantined"] for s in counts["sources"])
    requests = case.con.execute("SELECT count(*) FROM requests").fetchall()[0][0]
    case.close()
    shutil.rmtree(case_dir, ignore_errors=True)
    return total - merge["s"], total, {"read": read, "quarantined": bad, "requests": requests}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=10_000_000)
    ap.add_argument("--files", type=int, default=8, help="log files (half prefill, half decode); even")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument("--threads", type=int, default=None, help="DuckDB threads for both sides (default: all cores)")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "ingest.json")
    args = ap.parse_args()
    data = args.data or ROOT / "data" / f"ingest-{args.lines}"
    t0 = time.perf_counter()
    paths = generate(data, args.lines, max(2, args.files - args.files % 2))
    size = sum(p.stat().st_size for p in paths)
    print(f"data: {len(paths)} files, {size / 1e9:.2f} GB, {args.lines:,} lines ({time.perf_counter() - t0:.1f} s to "
          f"write or find)", file=sys.stderr)
    work = data.parent / (data.name + "-work")
    work.mkdir(exist_ok=True)
    base, norm, full, pairs = [], [], [], []
    info: dict = {}
    for i in range(args.repeat):
        b = baseline(paths, work, args.threads)
        n, f, info = kvir_ingest(paths, work, args.threads)
        base.append(b), norm.append(n), full.append(f)
        pairs.append({"baseline_s": round(b, 3), "normalise_s": round(n, 3), "ingest_s": round(f, 3),
                      "ratio_normalise": round(b / n, 3), "ratio_ingest": round(b / f, 3)})
        print(f"run {i + 1}: baseline {b:.2f} s, kvir normalise {n:.2f} s ({b / n:.2f}x), "
              f"whole ingest {f:.2f} s ({b / f:.2f}x)", file=sys.stderr)
    assert info["read"] == args.lines - args.lines % 4 and info["quarantined"] == 0, info
    result = {
        "what": "kvir.ingest of SGLang JSON request logs vs DuckDB read_ndjson of the same files, same columns",
        "lines": info["read"], "files": len(paths), "bytes": size, "requests": info["requests"],
        "best_baseline_s": round(min(base), 3), "best_normalise_s": round(min(norm), 3), "best_ingest_s": round(min(full), 3),
        "ratio_normalise": round(min(base) / min(norm), 3), "ratio_ingest": round(min(base) / min(full), 3),
        "median_pair_ratio_normalise": round(statistics.median(p["ratio_normalise"] for p in pairs), 3),
        "median_pair_ratio_ingest": round(statistics.median(p["ratio_ingest"] for p in pairs), 3),
        "baseline_lines_per_s": round(info["read"] / min(base)),
        "normalise_lines_per_s": round(info["read"] / min(norm)),
        "ingest_lines_per_s": round(info["read"] / min(full)),
        "runs": pairs,
        "machine": {"cpus": os.cpu_count(), "threads": args.threads or os.cpu_count(), "python": platform.python_version(),
                    "duckdb": duckdb.__version__, "platform": platform.platform()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))


if __name__ == "__main__":
    main()
