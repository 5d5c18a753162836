#!/usr/bin/env bash
# The GPU host's smoke test, one command: gpuprobe with -json and -require-gpu
# on the host's backend, then the hardware tests that skip on machines without
# a GPU. It exits 0 only if gpuprobe passed (every scenario ok, the RNG check a
# match) and every hardware test ran and passed: a skip is a failure here,
# since on a GPU host it means the GPU was not used.
#
#   build/gpu-smoke.sh            # cuda (GPU_SMOKE_BACKEND=hip for a ROCm host)
#
# Environment: GPU_SMOKE_BACKEND (cuda, hip; sim only to test this script),
# GPU_SMOKE_OUT (where the report and logs go; default a temporary directory),
# and whatever the backend reads (GPUINIT_CUDA_LIBRARY, GPUINIT_CURAND_LIBRARY,
# LD_LIBRARY_PATH, ...). On hosts where libcurand lives only in the
# nvidia-curand Python wheel, point GPUINIT_CURAND_LIBRARY at it.
set -euo pipefail
cd "$(dirname "$0")/.."
backend=${GPU_SMOKE_BACKEND:-cuda}
out=${GPU_SMOKE_OUT:-$(mktemp -d)}
mkdir -p "$out"
case $backend in
  cuda) tests=(./device/cuda -run 'TestRealDriver|TestFillCURANDMatchesLibcurand') ;;
  hip) tests=(./device/hip -run 'TestRealRuntime') ;;
  sim) tests=(./device -run 'TestSimMeetsTheBackendContract/with_devices') ;;
  *) echo "gpu-smoke: GPU_SMOKE_BACKEND=$backend: want cuda or hip" >&2; exit 2 ;;
esac
failed=0
fail() { echo "gpu-smoke: FAIL: $*" >&2; failed=1; }

echo "gpu-smoke: building gpuprobe" >&2
go build -o "$out/gpuprobe" ./cmd/gpuprobe
build/check-gpu-backends.sh "$out/gpuprobe"

# -require-gpu refuses sim (it is no GPU): a named backend falls back to
# nothing anyway, so sim's run, which only tests this script, goes without it.
require=(-require-gpu)
[[ $backend == sim ]] && require=()
echo "gpu-smoke: gpuprobe ${require[*]} -backend $backend" >&2
set +e
"$out/gpuprobe" -json "${require[@]}" -backend "$backend" >"$out/gpuprobe.json" 2>"$out/gpuprobe.log"
code=$?
set -e
cat "$out/gpuprobe.log" >&2
[[ $code -eq 0 ]] || fail "gpuprobe exited $code (report: $out/gpuprobe.json)"
grep -q '"verdict": "unsupported"' "$out/gpuprobe.json" && fail "the RNG check was unsupported: $(grep -o '"error": "[^"]*"' "$out/gpuprobe.json" | tail -n1)"
grep -q '"devices": \[\]' "$out/gpuprobe.json" && fail "gpuprobe found no devices"

echo "gpu-smoke: hardware tests: go test ${tests[*]}" >&2
set +e
go test -count=1 -v "${tests[@]}" >"$out/tests.log" 2>&1
code=$?
set -e
grep -E '^\s*--- (PASS|FAIL|SKIP)' "$out/tests.log" >&2 || true
[[ $code -eq 0 ]] || fail "hardware tests failed (log: $out/tests.log)"
grep -qE '^\s*--- SKIP' "$out/tests.log" && fail "hardware tests skipped: on a GPU host, that means the GPU was not used"
grep -qE '^\s*--- PASS' "$out/tests.log" || fail "no hardware test ran"

if [[ $failed -ne 0 ]]; then
  echo "gpu-smoke: FAILED; report and logs in $out" >&2
  exit 1
fi
echo "gpu-smoke: ok; report and logs in $out" >&2
