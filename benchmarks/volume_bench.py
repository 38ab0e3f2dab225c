"""Volume benchmark (issue #14): whole `kvir triage` processes against bare DuckDB scripts, in the same run.

    python benchmarks/volume_bench.py [--what gateway,sglang,parquet] [--repeat 3] [--data benchmarks/data]

Every measurement is a fresh process (os.wait4 gives its wall time, CPU time and peak RSS); kvir and its
baseline alternate (baseline, kvir, baseline, kvir, ...) so both see the same machine load, and the
median of --repeat runs of each is compared (every pair's ratio is kept in the JSON too).

  gateway  a paged Cloudflare AI Gateway export: --files one-record NDJSON files in one folder (and a
           tenth as many, for the growth per file): `kvir triage` peak RSS and time.
  sglang   one SGLang JSON request log of --lines lines (a request.received and a request.finished line
           per request, naive UTC stamps; `--source-tz UTC`), in the shape SGLang's request logger writes
           (`[YYYY-MM-DD HH:MM:SS] ` before each JSON object) and without it. Baselines, each a fresh
           `python -c` that imports duckdb, reads the file into a table of a fresh database file and
           counts the affected rows:
             unprefixed (the issue's): read_ndjson with explicit columns timestamp, event, rid and out as
               STRUCT(meta_info STRUCT(id, finish_reason JSON, prompt_tokens, completion_tokens));
             prefixed: read_csv of one VARCHAR column (no quote, escape, comment; strict_mode off) and
               from_json(substr(line, 23), <the same fields>);
           the finished rows' id, time, prompt and completion tokens, finish type and status go into a
           table; the count is of prompt_tokens > 681280, finish stop/length, time inside the window.
           kvir runs once per --hashes value after each baseline run (none: no digest; full: the
           SHA-256 of the input, taken from the bytes the check reads while DuckDB parses).
           Also `kvir triage` peak RSS at --small-lines (the 1 M vs 10 M ratio).
  split    the prefixed log in one file against the same lines split into 8 files (`split -n l/8`):
           one big file must keep both cores as busy as many files do (wall ratio, CPU per wall second).
  parquet  the 10^8-request Parquet fleet of benchmarks/triage_bench.py (`kvir simulate --format
           parquet`, cached under --data): `kvir triage` against the bare count query, each a fresh process.

Results: benchmarks/results/volume.json. Figures go to benchmarks/README.md by hand, with the machine.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import volume_data  # noqa: E402

KVIR = str(Path(sys.executable).with_name("kvir"))
SPEC = """[incident]
id = "BENCH-VOLUME"
title = "volume benchmark"
models = ["@cf/zai-org/glm-5.3", "zai-org/GLM-5.3"]
window_start = 2026-08-27T00:00:00Z
window_end = 2026-09-09T19:40:00Z
[trigger]
pool_tokens = 681280
context_tokens = 1048576
rule = "public"
"""

_BARE_COUNT = """
n = con.execute("SELECT count(*) FROM finished WHERE prompt_tokens > 681280 AND finish_type IN ('stop', 'length') "
                "AND ts BETWEEN TIMESTAMP '2026-08-27 00:00:00' AND TIMESTAMP '2026-09-09 19:40:00'").fetchall()[0][0]
con.close()
print(n)
"""
_FIELDS = ("out.meta_info.id AS id, {t} AS ts, out.meta_info.prompt_tokens AS prompt_tokens, "
           "out.meta_info.completion_tokens AS completion_tokens, out.meta_info.finish_reason ->> 'type' AS finish_type, "
           "TRY_CAST(out.meta_info.finish_reason ->> 'status_code' AS INTEGER) AS status")
BARE_NDJSON = """
import sys, duckdb
con = duckdb.connect(sys.argv[2])
con.execute("SET TimeZone = 'UTC'")
con.execute("SET enable_progress_bar = false")
con.execute('''CREATE TABLE finished AS SELECT """ + _FIELDS.format(t='"timestamp"') + """
FROM read_ndjson($f, columns = {timestamp: 'TIMESTAMP', event: 'VARCHAR', rid: 'VARCHAR',
     out: 'STRUCT(meta_info STRUCT(id VARCHAR, finish_reason JSON, prompt_tokens BIGINT, completion_tokens BIGINT))'})
WHERE event = 'request.finished' ''', {"f": sys.argv[1]})
""" + _BARE_COUNT
BARE_PREFIXED = """
import sys, duckdb
con = duckdb.connect(sys.argv[2])
con.execute("SET TimeZone = 'UTC'")
con.execute("SET enable_progress_bar = false")
con.execute('''CREATE TABLE finished AS
WITH p AS (
    SELECT from_json(substr(line, 23), '{"timestamp": "TIMESTAMP", "event": "VARCHAR", "rid": "VARCHAR",
        "out": {"meta_info": {"id": "VARCHAR", "finish_reason": "JSON", "prompt_tokens": "BIGINT", "completion_tokens": "BIGINT"}}}') AS j
    FROM read_csv($f, columns = {'line': 'VARCHAR'}, header = false, delim = E'\\\\x01', quote = '', escape = '',
                  comment = '', auto_detect = false, strict_mode = false)
), u AS (SELECT unnest(j) FROM p)
SELECT """ + _FIELDS.format(t='"timestamp"') + """ FROM u WHERE event = 'request.finished' ''', {"f": sys.argv[1]})
""" + _BARE_COUNT
BARE_PARQUET = """
import sys, duckdb
con = duckdb.connect()
con.execute("SET TimeZone = 'UTC'")
con.execute("SET enable_progress_bar = false")
print(con.execute('''SELECT count(*), count(DISTINCT account_id) FROM read_parquet($glob, hive_partitioning = true)
WHERE model IN ('@cf/zai-org/glm-5.3', 'zai-org/GLM-5.3')
  AND ts BETWEEN TIMESTAMPTZ '2026-08-27 00:00:00+00' AND TIMESTAMPTZ '2026-09-09 19:40:00+00'
  AND prompt_tokens > 681280 AND http_status = 200''', {"glob": sys.argv[1]}).fetchall()[0])
"""


def run_one(cmd: list[str]) -> dict:
    """One fresh process, measured exactly: a tiny wrapper forks it and reports its own wait4() rusage,
    so each peak RSS is that process's, not the largest of every child so far."""
    wrapper = ("import os, sys, json, time, subprocess, tempfile\n"
               "err = tempfile.TemporaryFile()\n"
               "t = time.perf_counter(); p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=err)\n"
               "out = p.stdout.read(); _, st, ru = os.wait4(p.pid, 0)\n"
               "err.seek(0); sys.stderr.write(err.read().decode()[-3000:])\n"
               "print(json.dumps({'wall_s': time.perf_counter() - t, 'cpu_s': ru.ru_utime + ru.ru_stime,\n"
               "  'rss_mb': ru.ru_maxrss / 1024, 'status': st, 'stdout': out.decode().strip()}))\n")
    r = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    m = json.loads(r.stdout.strip().splitlines()[-1])
    if m["status"]:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... exited with status {m['status']}: {r.stderr[-2000:]}")
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in m.items() if k != "status"}


def kvir_triage(spec: Path, out: Path, inputs: list[Path], *extra: str) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    m = run_one([KVIR, "triage", "-q", "-i", str(spec), "-o", str(out), *extra, *map(str, inputs)])
    m["summary"] = json.loads((out / "summary.json").read_text())["summary"]
    inputs_read = json.loads((out / "manifest.json").read_text())["inputs"]
    m["readers"] = sorted({i.get("reader") or "kvir line reader" for i in inputs_read})   # which reader read them
    shutil.rmtree(out, ignore_errors=True)
    return m


def bare(script: str, *args: str) -> dict:
    return run_one([sys.executable, "-c", script, *args])


def summarise(name: str, base: list[dict], kvir: list[dict]) -> dict:
    med = lambda xs, k: statistics.median(x[k] for x in xs)   # noqa: E731
    return {
        "what": name, "repeat": len(kvir),
        "baseline_wall_s": med(base, "wall_s"), "kvir_wall_s": med(kvir, "wall_s"),
        "ratio_wall": round(med(kvir, "wall_s") / med(base, "wall_s"), 3),
        "median_pair_ratio_wall": round(statistics.median(k["wall_s"] / b["wall_s"] for b, k in zip(base, kvir)), 3),
        "baseline_cpu_s": med(base, "cpu_s"), "kvir_cpu_s": med(kvir, "cpu_s"),
        "ratio_cpu": round(med(kvir, "cpu_s") / med(base, "cpu_s"), 3),
        "baseline_rss_mb": max(x["rss_mb"] for x in base), "kvir_rss_mb": max(x["rss_mb"] for x in kvir),
        "runs": [{"baseline": {k: v for k, v in b.items() if k != "stdout"},
                  "kvir": {k: v for k, v in k_.items() if k not in ("stdout", "summary")}} for b, k_ in zip(base, kvir)],
    }


def bench_gateway(args, work: Path) -> list[dict]:
    rows = []
    for n in (args.files // 10, args.files):
        folder = volume_data.gateway_pages(args.data / "volume" / f"gw-{n}", n)
        runs = [kvir_triage(work / "spec.toml", work / "case-gw", [folder]) for _ in range(args.repeat)]
        s = runs[-1]["summary"]
        assert (s["requests_total"], s["affected"]) == (n, volume_data.gateway_expected(n)), s
        rows.append({"what": f"gateway pages: {n:,} one-record NDJSON files", "files": n,
                     "kvir_wall_s": statistics.median(r["wall_s"] for r in runs),
                     "kvir_cpu_s": statistics.median(r["cpu_s"] for r in runs),
                     "kvir_rss_mb": max(r["rss_mb"] for r in runs)})
        print(json.dumps(rows[-1]), flush=True)
    small, big = rows
    rows.append({"what": "gateway pages: peak RSS growth per file", "kb_per_file": round(
        (big["kvir_rss_mb"] - small["kvir_rss_mb"]) * 1024 / (big["files"] - small["files"]), 2)})
    print(json.dumps(rows[-1]), flush=True)
    return rows


def bench_sglang(args, work: Path) -> list[dict]:
    """Each shape: the bare script, kvir with --hash none and kvir with --hash full (the SHA-256 of every
    input, as the default `auto` takes for a text log), interleaved, --repeat times; every run records the
    machine's load average (the 2 cores are shared)."""
    rows = []
    requests = args.lines // 2
    kv = ("--source-tz", "UTC", "--served-model", "zai-org/GLM-5.3")
    want = volume_data.sglang_expected(requests)
    shapes = {"prefixed": True, "bare": False}
    for shape in args.shapes.split(","):
        prefixed = shapes[shape]
        tag = f"sglang-{args.lines // 10**6}m" + ("-prefixed" if prefixed else "")
        log = volume_data.sglang_log(args.data / "volume" / f"{tag}.log", requests, prefixed)
        script = BARE_PREFIXED if prefixed else BARE_NDJSON
        base, kvir = [], {h: [] for h in args.hashes.split(",")}
        for _ in range(args.repeat):
            db = work / "bare.duckdb"
            for p in (db, Path(str(db) + ".wal")):
                p.unlink(missing_ok=True)
            b = bare(script, str(log), str(db))
            b["load_average"] = os.getloadavg()[0]
            db.unlink(missing_ok=True)
            base.append(b)
            for h, runs in kvir.items():
                k = kvir_triage(work / "spec.toml", work / "case-sglang", [log], *kv, "--hash", h)
                k["load_average"] = os.getloadavg()[0]
                assert int(b["stdout"].split()[-1]) == k["summary"]["affected"] == want, (b["stdout"], k["summary"]["affected"], want)
                runs.append(k)
        for h, runs in kvir.items():
            row = summarise(f"SGLang JSON request log, {args.lines:,} lines, {log.stat().st_size / 1e9:.2f} GB, "
                            + ("with the logger's [time] prefix" if prefixed else "bare JSON lines (the issue's baseline)")
                            + f", --hash {h}", base, runs)
            row.update({"lines": args.lines, "bytes": log.stat().st_size, "affected": want, "hash": h, "shape": shape,
                        "readers": runs[0]["readers"],
                        "load_averages": [[b["load_average"], k["load_average"]] for b, k in zip(base, runs)]})
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "runs"}), flush=True)
    # RSS at a tenth of the lines, in both shapes (the default --hash auto: a full SHA-256 for a text log)
    for shape in args.shapes.split(","):
        prefixed = shapes[shape]
        big = max((r for r in rows if r.get("shape") == shape), key=lambda r: r["kvir_rss_mb"])
        name = f"sglang-{args.small_lines // 10**6}m" + ("-prefixed" if prefixed else "")
        small = volume_data.sglang_log(args.data / "volume" / f"{name}.log", args.small_lines // 2, prefixed)
        runs = [kvir_triage(work / "spec.toml", work / "case-sglang", [small], *kv) for _ in range(args.repeat)]
        small_rss = max(r["rss_mb"] for r in runs)
        rows.append({"what": f"kvir triage peak RSS, {args.lines:,} vs {args.small_lines:,} lines ({shape})",
                     "rss_big_mb": big["kvir_rss_mb"], "rss_small_mb": small_rss,
                     "ratio": round(big["kvir_rss_mb"] / small_rss, 3), "readers": runs[0]["readers"],
                     "small_runs": runs})
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "small_runs"}), flush=True)
    return rows


def bench_split(args, work: Path) -> list[dict]:
    """One big file against the same lines in 8 files (`split -n l/8`): both must keep both cores busy."""
    requests = args.lines // 2
    tag = f"sglang-{args.lines // 10**6}m-prefixed"
    log = volume_data.sglang_log(args.data / "volume" / f"{tag}.log", requests, True)
    parts = args.data / "volume" / f"{tag}-split8"
    if not (parts / ".done").exists():
        shutil.rmtree(parts, ignore_errors=True)
        parts.mkdir(parents=True)
        subprocess.run(["split", "-n", "l/8", "-d", "--additional-suffix=.log", str(log), str(parts / "decode-")], check=True)
        (parts / ".done").write_text("8")
    kv = ("--source-tz", "UTC", "--served-model", "zai-org/GLM-5.3")
    one, eight = [], []
    for _ in range(args.repeat):
        eight.append(kvir_triage(work / "spec.toml", work / "case-split", [parts], *kv))
        one.append(kvir_triage(work / "spec.toml", work / "case-split", [log], *kv))
        assert one[-1]["summary"]["affected"] == eight[-1]["summary"]["affected"]
    row = summarise(f"one {args.lines:,}-line file (kvir) against the same lines in 8 files (kvir, the baseline)",
                    eight, one)
    row["cpu_per_wall_one_file"] = round(statistics.median(r["cpu_s"] / r["wall_s"] for r in one), 2)
    row["cpu_per_wall_eight_files"] = round(statistics.median(r["cpu_s"] / r["wall_s"] for r in eight), 2)
    print(json.dumps({k: v for k, v in row.items() if k != "runs"}), flush=True)
    return [row]


def bench_parquet(args, work: Path) -> list[dict]:
    import kvir

    root = args.data / f"fleet-{args.parquet_rows}"
    if not (root / "ground_truth" / "summary.json").exists():
        kvir.simulate(root, requests=args.parquet_rows, seed=7, format="parquet", progress=True)
    glob = str(root / "requests" / "**" / "*.parquet")
    base, kv = [], []
    for _ in range(args.repeat):
        base.append(bare(BARE_PARQUET, glob))
        kv.append(kvir_triage(root / "incident.toml", work / "case-parquet", []))
        assert base[-1]["stdout"] == str((kv[-1]["summary"]["affected"], kv[-1]["summary"]["affected_accounts"])), \
            (base[-1]["stdout"], kv[-1]["summary"]["affected"])
    row = summarise(f"Parquet fleet, {args.parquet_rows:,} requests (kvir simulate --format parquet, seed 7)", base, kv)
    print(json.dumps({k: v for k, v in row.items() if k != "runs"}), flush=True)
    return [row]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--what", default="gateway,sglang,split,parquet")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--lines", type=int, default=10_000_000)
    ap.add_argument("--small-lines", type=int, default=1_000_000)
    ap.add_argument("--parquet-rows", type=int, default=100_000_000)
    ap.add_argument("--shapes", default="prefixed,bare", help="sglang: prefixed and/or bare")
    ap.add_argument("--hashes", default="none,full", help="sglang: kvir's --hash values to measure")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "volume.json")
    args = ap.parse_args()
    work = args.data / "volume-work"
    work.mkdir(parents=True, exist_ok=True)
    (work / "spec.toml").write_text(SPEC)
    results = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                           "load_average_at_start": os.getloadavg()}, "runs": []}
    for what in args.what.split(","):
        results["runs"] += {"gateway": bench_gateway, "sglang": bench_sglang, "split": bench_split,
                            "parquet": bench_parquet}[what](args, work)
    results["machine"]["load_average_at_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
