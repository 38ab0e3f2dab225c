#!/usr/bin/env bash
# One command for a GPU machine: the replay engine's GPU tests, its kernel benchmark, and a full-size replay
# of all 155 demo responses (benchmarks/full_replay_bench.py), on CUDA.
#
#   bash benchmarks/gpu_check.sh [--device cuda|cpu] [--steps tests,kernels,full-replay] [OUT_DIR]
#
# Needs a CUDA build of torch and triton (CUDA wheels of torch ship it; else `pip install 'kvir[triton]'`).
# `--device cpu` runs the same steps without a GPU (the GPU tests then skip; the kernel benchmark runs three
# lengths, three repeats), to check the script itself. FULL_REPLAY_LIMIT=N replays only the first N responses.
# Runs offline. Writes OUT_DIR/replay_gpu_tests.txt, OUT_DIR/replay_bench_DEVICE.json and
# OUT_DIR/full_replay_DEVICE.json (default OUT_DIR: $OUT, else benchmarks/out) and prints them.
# Budget on an H200: tests ~1-2 min including Triton compiles, kernel benchmark ~1 min; the full replay has
# not run on a GPU yet (on the 2-core CPU VM: see benchmarks/README.md "Replay"), so give it its own call
# (--steps full-replay) when a run's time is short.
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICE=cuda
STEPS=tests,kernels,full-replay
while [ $# -gt 0 ]; do
  case "$1" in
    --device) DEVICE="${2:?--device needs cuda or cpu}"; shift 2 ;;
    --steps) STEPS="${2:?--steps needs a list}"; shift 2 ;;
    *) break ;;
  esac
done
case "$DEVICE" in cuda|cpu) ;; *) echo "gpu_check: --device is cuda or cpu, not $DEVICE" >&2; exit 2 ;; esac
OUT_DIR="${1:-${OUT:-benchmarks/out}}"
mkdir -p "$OUT_DIR"
step() { [[ ",$STEPS," == *",$1,"* ]]; }

if [ "$DEVICE" = cuda ]; then
python - <<'PY'
import sys, torch
if not torch.cuda.is_available():
    sys.exit("gpu_check: no CUDA device visible to torch " + torch.__version__)
try:
    import triton
except ImportError:
    sys.exit("gpu_check: triton is not installed (pip install 'kvir[triton]')")
print(f"gpu_check: {torch.cuda.get_device_name()} | torch {torch.__version__} | triton {triton.__version__}")
PY
fi
# kvir importable from this checkout (editable, offline: no build isolation, no dependency downloads)
python -c "import kvir.replay" 2>/dev/null || pip install -q --no-deps --no-build-isolation -e .

status=0
if step tests; then
  rc=0
  timeout 240 python -m pytest -q -m gpu tests/replay -p no:cacheprovider 2>&1 | tee "$OUT_DIR/replay_gpu_tests.txt" || rc=$?
  # on cpu the GPU tests skip at collection: pytest's 5 (no test ran) is what is expected there
  if [ "$rc" -ne 0 ] && ! { [ "$DEVICE" = cpu ] && [ "$rc" -eq 5 ]; }; then status=$rc; fi
fi
if step kernels; then
  if [ "$DEVICE" = cuda ]; then kernel_args=(--repeat 20); else kernel_args=(--repeat 3 --lengths 4096,65536,1048576); fi
  timeout 200 python benchmarks/replay_bench.py --device "$DEVICE" "${kernel_args[@]}" \
    --json "$OUT_DIR/replay_bench_$DEVICE.json" || status=$?
fi
if step full-replay; then
  timeout 1500 python benchmarks/full_replay_bench.py --device "$DEVICE" --limit "${FULL_REPLAY_LIMIT:-all}" \
    --json "$OUT_DIR/full_replay_$DEVICE.json" || status=$?
fi
echo "gpu_check: exit $status on $DEVICE (steps $STEPS; figures in $OUT_DIR)"
exit "$status"
