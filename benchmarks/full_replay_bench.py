"""Full-size replay of every affected response of the demo case (issue 39), on CPU or CUDA.

    python benchmarks/full_replay_bench.py [--device cpu|cuda] [--limit N] [--json FILE]

The case is `kvir demo`'s before its replay (30,000 requests, seed 7: 155 affected responses), built once in
benchmarks/data/demo-case (or --case DIR). Two variants, each in a fresh process started by this small one
(so that each one's peak RSS is its own): the demo's own scale, 1/64 (full-size placement, the decode
attention over 1 in 64 pages), as the baseline, and full size (every attention over the whole row). Both must
name the same source accounts and requests and each the same tokens in each response, or the run fails.
Printed per variant: wall time, peak RSS, peak device memory (CUDA), the verdicts and sources, and the load
average before and after (the figures of a loaded machine say so).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = """
import sys
from pathlib import Path
import kvir, kvir.audit
root = Path(sys.argv[1])
kvir.simulate(root / "fleet", requests=30_000, seed=7)
tri = kvir.triage(root / "fleet" / "incident.toml", out=root / "case")
assert tri.summary["affected"] == 155, tri.summary["affected"]
tri.case.close()
kvir.audit.audit(sorted((root / "fleet").glob("engine/*/server.log")), inventory=root / "fleet" / "inventory.toml",
                 case=root / "case")
"""
REPLAY = """
import hashlib, json, resource, sys, time
from kvir.replay import replay_case
case, scale, device, limit = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
t0 = time.perf_counter()
run = replay_case(case, scale=scale, device=device, limit=None if limit == "all" else int(limit))
seconds = time.perf_counter() - t0
e = run.exposure
pairs = sorted(f"{r}|{s}|{t}" for r, s, t in zip(e.reader_request_id, e.source_request_id, e.tokens))
out = {"seconds": seconds, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
       "device": run.summary["device"], "replayed": run.summary["replayed"],
       "verdicts": {k: run.summary[k] for k in ("exposed", "served_unwritten", "not_reproduced", "inconclusive")},
       "rejected_by_first_fixed": run.summary["rejected_by_first_fixed"],
       "source_accounts": run.summary["source_accounts"], "source_requests": run.summary["source_requests"],
       "exposure_rows": len(pairs), "attribution_sha256": hashlib.sha256("\\n".join(pairs).encode()).hexdigest()}
if device == "cuda":
    import torch
    out["peak_device_mb"] = torch.cuda.max_memory_allocated() / 2**20
print("RESULT " + json.dumps(out))
"""


def _python(code: str, *args: str, timeout: float) -> str:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)
    if proc.returncode:
        sys.exit(f"full_replay_bench: child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def demo_case(where: Path | None) -> Path:
    """The demo's case before its replay, built once."""
    root = where or ROOT / "benchmarks" / "data" / "demo-case"
    case = root / "case"
    if not (case / "case.duckdb").exists():
        shutil.rmtree(root, ignore_errors=True)
        print(f"# building the demo case in {root} (simulate 30,000 requests, triage, audit)", flush=True)
        _python(BUILD, str(root), timeout=1800)
    return case


def variant(case: Path, scale: float, device: str, limit: str, timeout: float) -> dict:
    """One replay of a copy of the case in a fresh process, with the load average around it."""
    with tempfile.TemporaryDirectory(prefix="kvir-full-replay-") as tmp:
        copy = Path(tmp) / "case"
        shutil.copytree(case, copy)
        before = _load()
        t0 = time.perf_counter()
        line = [x for x in _python(REPLAY, str(copy), repr(scale), device, limit, timeout=timeout).splitlines()
                if x.startswith("RESULT ")][-1]
        out = json.loads(line[len("RESULT "):])
        out.update(scale=scale, process_seconds=time.perf_counter() - t0, load_before=before, load_after=_load())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--limit", default="all", help="replay only the first N affected responses (default: all 155)")
    ap.add_argument("--case", type=Path, default=None, help="where the demo case is (built there when missing)")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per variant")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = ap.parse_args(argv)
    case = demo_case(args.case)
    cores = os.cpu_count()
    print(f"# full_replay_bench: {platform.processor() or platform.machine()}, {cores} core(s), device "
          f"{args.device}, limit {args.limit}, load average {_load()} (1, 5, 15 min)", flush=True)
    runs = {}
    for name, scale in (("demo scale 1/64", 1 / 64), ("full size", 1.0)):
        r = runs[name] = variant(case, scale, args.device, args.limit, args.timeout)
        dev = f", device peak {r['peak_device_mb']:.0f} MiB" if "peak_device_mb" in r else ""
        print(f"{name:>16}: {r['seconds']:7.1f} s replay ({r['process_seconds']:.1f} s process), peak RSS "
              f"{r['peak_rss_mb']:.0f} MiB{dev}; {r['replayed']} replayed, {r['verdicts']}, "
              f"{r['source_accounts']} source accounts, {r['source_requests']} source requests; "
              f"load {r['load_before']} -> {r['load_after']}", flush=True)
    base, full = runs["demo scale 1/64"], runs["full size"]
    same = all(base[k] == full[k] for k in ("attribution_sha256", "verdicts", "source_accounts", "source_requests"))
    print(f"full size / demo scale: {full['seconds'] / base['seconds']:.2f}x time, "
          f"{full['peak_rss_mb'] / base['peak_rss_mb']:.2f}x peak RSS; same sources: {same}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"device": args.device, "limit": args.limit, "cores": cores,
                                         "python": platform.python_version(), "runs": runs,
                                         "same_sources": same}, indent=2) + "\n")
        print(f"figures: {args.json}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
