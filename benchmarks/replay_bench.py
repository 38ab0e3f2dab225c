"""Replay kernel benchmark: paged decode attention (patched and unpatched) against dense SDPA over the same KV.

    python benchmarks/replay_bench.py                           # CPU, 4 K .. 1 M tokens, both configs
    python benchmarks/replay_bench.py --device cuda --json out.json

For each context length L one request's KV lives on randomly permuted pages of a pool (page 64, 10 % spare
pages); the dense baseline is torch's scaled_dot_product_attention over the same values gathered into
contiguous [1, Hkv, L, D] tensors (the gather is not timed). The patched kernel runs the full owner/epoch
check on every slot of a request that owns all of them (a legitimate request: nothing is masked, the check
is the cost). Variants are interleaved and repeated; the figures are the median and the best of the
repeats, as ratios against dense in the same run (targets: paged patched <= 1.5 x dense, patched <= 1.1 x
unpatched). On CUDA it also measures a device-to-device copy in the same run and reports the kernels'
achieved bandwidth (K and V bytes read / time) against it.

Configs: `recall` is what case replays run (1 KV head, head_dim 16, fp32: 128 B per token); `gqa` is a
larger attention layer (8 query heads over 2 KV heads, head_dim 64, fp32: 1 KiB per token).
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from kvir.replay.kernels import OwnerCheck, paged_decode_attention
from kvir.replay.page_table import PageTable

CONFIGS = {"recall": dict(hq=1, hkv=1, d=16), "gqa": dict(hq=8, hkv=2, d=64)}
PAGE = 64


def build(L: int, hq: int, hkv: int, d: int, device: torch.device, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    n = -(-L // PAGE)
    pool_pages = n + max(8, n // 10)
    pages = torch.randperm(pool_pages, generator=g)[:n] + 1
    slots = (pool_pages + 1) * PAGE
    k = torch.randn(slots, hkv, d, generator=g).to(device)
    v = torch.randn(slots, hkv, d, generator=g).to(device)
    q = torch.randn(1, hq, d, generator=g).to(device)
    table = PageTable.from_rows([pages], [L], PAGE).to(device)
    s = table.slots(0)
    kd = k[s].permute(1, 0, 2).unsqueeze(0).contiguous()          # [1, Hkv, L, D]
    vd = v[s].permute(1, 0, 2).unsqueeze(0).contiguous()
    # a legitimate owner: every page is its, every slot written in the current tenancy
    owner = torch.full((pool_pages + 1,), 7, dtype=torch.int32, device=device)
    epoch = torch.arange(pool_pages + 1, dtype=torch.int32, device=device) + 1
    stamp = (torch.arange(slots, device=device) // PAGE).to(torch.int32) + 1
    fresh = torch.full((pool_pages + 1,), PAGE, dtype=torch.int32, device=device)    # pool.py page_fresh
    check = OwnerCheck(owner, epoch, stamp, torch.tensor([7], device=device), "mask", fresh)
    return q, k, v, table, kd, vd, check


def timer(device: torch.device):
    if device.type == "cuda":
        def run(fn) -> float:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            torch.cuda.synchronize()
            return a.elapsed_time(b) / 1e3
    else:
        def run(fn) -> float:
            t = time.perf_counter()
            fn()
            return time.perf_counter() - t
    return run


def copy_bandwidth(device: torch.device, nbytes: int = 1 << 30, repeat: int = 10) -> float:
    """Device-to-device copy bandwidth in bytes/s (read + write counted), best of `repeat`."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).normal_()
    dst = torch.empty_like(src)
    t = timer(device)
    dst.copy_(src)
    best = min(t(lambda: dst.copy_(src)) for _ in range(repeat))
    return 2 * nbytes / best


def bench_length(L: int, cfg: dict, device: torch.device, repeat: int, impl: str) -> dict:
    q, k, v, table, kd, vd, check = build(L, cfg["hq"], cfg["hkv"], cfg["d"], device)
    scale = 1 / math.sqrt(cfg["d"])
    hq, hkv = cfg["hq"], cfg["hkv"]
    fns = {
        "dense": lambda: F.scaled_dot_product_attention(q.view(1, hq, 1, -1), kd, vd, scale=scale, enable_gqa=hq != hkv),
        "unpatched": lambda: paged_decode_attention(q, k, v, table, scale, impl=impl),
        "patched": lambda: paged_decode_attention(q, k, v, table, scale, check=check, impl=impl),
    }
    ref = fns["dense"]().view(hq, -1).float()
    for name in ("unpatched", "patched"):
        err = (fns[name]().out[0].float() - ref).abs().max().item()
        if err > 1e-3:
            raise AssertionError(f"L={L} {name}: differs from dense by {err}")
    t = timer(device)
    times: dict[str, list[float]] = {n: [] for n in fns}
    for _ in range(2):                       # warm-up (Triton compiles on first use)
        for fn in fns.values():
            fn()
    for _ in range(repeat):
        for n, fn in fns.items():            # interleaved: a noisy neighbour hits every variant alike
            times[n].append(t(fn))
    kv_bytes = 2 * L * hkv * cfg["d"] * k.element_size()
    row = {"L": L, "kv_bytes": kv_bytes}
    for n, ts in times.items():
        row[f"{n}_median_s"] = statistics.median(ts)
        row[f"{n}_best_s"] = min(ts)
    for stat in ("median", "best"):
        row[f"patched_over_dense_{stat}"] = row[f"patched_{stat}_s"] / row[f"dense_{stat}_s"]
        row[f"patched_over_unpatched_{stat}"] = row[f"patched_{stat}_s"] / row[f"unpatched_{stat}_s"]
        row[f"unpatched_over_dense_{stat}"] = row[f"unpatched_{stat}_s"] / row[f"dense_{stat}_s"]
    for n in fns:
        row[f"{n}_GBps_best"] = kv_bytes / row[f"{n}_best_s"] / 1e9
    return row


def machine(device: torch.device) -> dict:
    info = {"python": platform.python_version(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "cpu": platform.processor() or platform.machine()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        info["cores"] = len([x for x in Path("/proc/cpuinfo").read_text().splitlines() if x.startswith("processor")])
    except OSError:
        pass
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--lengths", default="4096,16384,65536,262144,1048576",
                    help="comma-separated context lengths (tokens)")
    ap.add_argument("--configs", default="recall,gqa", help=f"comma-separated, from {', '.join(CONFIGS)}")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--impl", default="auto", choices=["auto", "torch", "triton"])
    ap.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    ap.add_argument("--json", type=Path, default=None, help="write all figures here")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    out = {"machine": machine(device), "device": str(device), "page_size": PAGE, "repeat": args.repeat, "results": {}}
    if device.type == "cuda":
        out["copy_GBps"] = copy_bandwidth(device) / 1e9
    print(f"# replay_bench on {out['machine'].get('gpu', out['machine']['cpu'])}, torch {torch.__version__}, "
          f"{out['machine']['threads']} thread(s), page {PAGE}, {args.repeat} repeats"
          + (f", device copy {out['copy_GBps']:.0f} GB/s" if "copy_GBps" in out else ""))
    for name in args.configs.split(","):
        cfg = CONFIGS[name]
        print(f"\n## {name}: {cfg['hq']} query head(s) over {cfg['hkv']} KV head(s), head_dim {cfg['d']}, fp32")
        head = f"{'L':>9} {'dense ms':>9} {'unpatched':>10} {'patched':>9} {'patched/dense':>14} {'patched/unpatched':>18}"
        if device.type == "cuda":
            head += f" {'patched GB/s':>13} {'% of copy':>10}"
        print(head + "   (median; best in brackets)")
        rows = []
        for L in [int(x) for x in args.lengths.split(",")]:
            r = bench_length(L, cfg, device, args.repeat, args.impl)
            rows.append(r)
            line = (f"{L:>9} {r['dense_median_s'] * 1e3:>9.3f} {r['unpatched_median_s'] * 1e3:>10.3f} "
                    f"{r['patched_median_s'] * 1e3:>9.3f} {r['patched_over_dense_median']:>6.2f} ({r['patched_over_dense_best']:.2f})"
                    f" {r['patched_over_unpatched_median']:>10.2f} ({r['patched_over_unpatched_best']:.2f})")
            if device.type == "cuda":
                line += f" {r['patched_GBps_best']:>13.0f} {100 * r['patched_GBps_best'] / out['copy_GBps']:>9.0f}%"
            print(line, flush=True)
        out["results"][name] = rows
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2) + "\n")
        print(f"\nfigures: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
