#!/usr/bin/env bash
# One command for a GPU machine: the replay engine's GPU tests, then its kernel benchmark on CUDA.
#
#   bash benchmarks/gpu_check.sh [OUT_DIR]
#
# Needs a CUDA build of torch and triton (CUDA wheels of torch ship it; else `pip install 'kvir[triton]'`).
# Runs offline. Writes OUT_DIR/replay_gpu_tests.txt and OUT_DIR/replay_bench_cuda.json (default
# OUT_DIR: $OUT, else benchmarks/out) and prints both. Budget: well under 5 minutes on an H200 (tests
# ~1-2 min including Triton compiles, benchmark ~1 min).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${1:-${OUT:-benchmarks/out}}"
mkdir -p "$OUT_DIR"

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
# kvir importable from this checkout (editable, offline: no build isolation, no dependency downloads)
python -c "import kvir.replay" 2>/dev/null || pip install -q --no-deps --no-build-isolation -e .

status=0
timeout 240 python -m pytest -q -m gpu tests/replay -p no:cacheprovider 2>&1 | tee "$OUT_DIR/replay_gpu_tests.txt" || status=$?
timeout 200 python benchmarks/replay_bench.py --device cuda --repeat 20 --json "$OUT_DIR/replay_bench_cuda.json" || status=$?
echo "gpu_check: exit $status (tests: $OUT_DIR/replay_gpu_tests.txt, figures: $OUT_DIR/replay_bench_cuda.json)"
exit "$status"
