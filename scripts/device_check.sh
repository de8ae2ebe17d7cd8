#!/usr/bin/env bash
# The CUDA check of issue 4 on a machine with a GPU, as one script that fits in about 8 minutes
# (16 cores, one H100/H200): builds stratasim with the CUDA kernels, runs the GPU tests (every
# family fused vs unfused vs the CPU double reference on odd shapes, quick timed runs), then
#   stratasim kernels   --device cuda:0 --json $OUT/kernels.json
#   stratasim calibrate --device cuda:0 -o $OUT/local.json     (+ $OUT/local.calibration.json)
#   stratasim validate  --hardware $OUT/local.json --device cuda:0 --json $OUT/validate.json
# and records everything under $OUT (default ./out/device): device_check.log (nvidia-smi, the
# build, every step's output and exit status, a summary) and the JSON files above.
#
#   scripts/device_check.sh                  on the GPU machine (from the repository root)
#   scripts/device_check.sh --prepare-deps   here, first: copies the header-only dependencies
#       (nlohmann_json, doctest) with their CMake configs into build-deps/ for a bare GPU machine
#       that has nvcc, CMake and ninja but not these; carry build-deps there (it is git-ignored).
#
# Each step runs under `timeout` within an overall deadline (DEADLINE_S, default 480 s); a
# failing step is recorded and the later ones still run where they can. Exit status: 0 when
# every step succeeded (validate's 3, "outside tolerance", counts as a result, not a failure),
# 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--prepare-deps" ]]; then
  set -e
  rm -rf build-deps
  mkdir -p build-deps/include build-deps/share/cmake build-deps/lib/cmake
  cp -r /usr/include/nlohmann /usr/include/doctest build-deps/include/
  cp -r /usr/share/cmake/nlohmann_json build-deps/share/cmake/
  cp -r /usr/lib/cmake/doctest build-deps/lib/cmake/
  # Debian's doctest targets file hard-codes /usr: make it relative to its own location.
  # shellcheck disable=SC2016  # the ${...} is CMake's, not the shell's
  sed -i 's|^set(_IMPORT_PREFIX "/usr")|get_filename_component(_IMPORT_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)|' \
    build-deps/lib/cmake/doctest/doctestTargets.cmake
  du -sh build-deps
  exit 0
fi

OUT="${OUT:-$PWD/out/device}"
mkdir -p "$OUT"
LOG="$OUT/device_check.log"
BUILD="${BUILD:-build-device}"
DEADLINE_S="${DEADLINE_S:-480}"
JOBS="${JOBS:-$(nproc)}"
: >"$LOG"
declare -a SUMMARY=()
FAILED=0

say() { echo "== [$(printf '%4d' "$SECONDS")s] $*" | tee -a "$LOG"; }

# step NAME LIMIT_S COMMAND...: runs COMMAND under timeout (the smaller of LIMIT_S and the time
# left before the deadline), output to the log; records the exit status.
step() {
  local name="$1" limit="$2"
  shift 2
  local left=$((DEADLINE_S - SECONDS))
  if ((left < 10)); then
    say "$name: skipped (deadline of ${DEADLINE_S}s reached)"
    SUMMARY+=("$name: skipped (deadline)")
    FAILED=1
    return 1
  fi
  ((limit > left)) && limit=$left
  say "$name (limit ${limit}s): $*"
  local t0=$SECONDS rc
  timeout --kill-after=10 "$limit" "$@" >>"$LOG" 2>&1
  rc=$?
  say "$name: exit $rc after $((SECONDS - t0))s"
  SUMMARY+=("$name: exit $rc ($((SECONDS - t0))s)")
  return $rc
}

say "device check, $(date -u +%Y-%m-%dT%H:%M:%SZ), $JOBS jobs, output in $OUT"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
    --format=csv 2>&1 || echo "nvidia-smi failed"
  command -v nvcc && nvcc --version | tail -2
  cmake --version | head -1
  c++ --version | head -1
} >>"$LOG" 2>&1

prefix=()
[[ -d build-deps ]] && prefix=(-DCMAKE_PREFIX_PATH="$PWD/build-deps")
# Only Hopper code (sm_90) on the H100/H200: half the nvcc time of the default 80;90.
if step configure 120 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSTRATASIM_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" \
  -DSTRATASIM_WITH_SIMGRID=OFF -DSTRATASIM_WITH_GUI=OFF -DSTRATASIM_WITH_MPI=OFF \
  -DSTRATASIM_BUILD_BENCH=OFF "${prefix[@]}" &&
  step build 300 cmake --build "$BUILD" -j "$JOBS" --target stratasim stratasim_tests; then
  BIN="$BUILD/apps/stratasim"
  step gpu_tests 90 "$BUILD/tests/stratasim_tests" -tc='cuda:*' -s -d || FAILED=1
  if grep -q "skipped: no CUDA device" "$LOG"; then  # the GPU tests skip themselves without one
    say "gpu_tests: the GPU tests were SKIPPED: no usable CUDA device"
    SUMMARY+=("gpu_tests: skipped (no device)")
    FAILED=1
  fi
  step kernels 90 "$BIN" kernels --device cuda:0 --json "$OUT/kernels.json" || FAILED=1
  if step calibrate 120 "$BIN" calibrate --device cuda:0 -o "$OUT/local.json"; then
    step validate 120 "$BIN" validate --hardware "$OUT/local.json" --device cuda:0 \
      --json "$OUT/validate.json"
    rc=$?
    ((rc != 0 && rc != 3)) && FAILED=1
  else
    SUMMARY+=("validate: not run (no calibration)")
    FAILED=1
  fi
else
  FAILED=1
fi

say "summary"
for s in "${SUMMARY[@]}"; do echo "  $s" | tee -a "$LOG"; done
find "$OUT" -maxdepth 1 -type f -printf '  %f %s B\n' | tee -a "$LOG"
exit $FAILED
