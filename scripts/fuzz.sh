#!/usr/bin/env bash
# Builds the scenario fuzz target (tests/fuzz) with clang's libFuzzer under ASan+UBSan and runs
# it for a fixed budget over the committed seed corpus (a scratch copy: the corpus in git is
# not modified). A finding (crash, sanitizer report, leak, input slower than 10 s) fails the
# run and leaves the input as build-fuzz/crash-* (replay: build-fuzz/tests/fuzz/scenario_fuzzer
# FILE; add it to tests/fuzz/corpus once fixed).
#   scripts/fuzz.sh [SECONDS]   (default 60; CI runs it from .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
if ! command -v clang++ >/dev/null; then
  sudo_cmd=(); [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends clang >/dev/null  # libFuzzer too
fi
flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DSTRATASIM_FUZZ=ON -DSTRATASIM_WITH_CUDA=OFF -DSTRATASIM_WITH_GUI=OFF \
  -DSTRATASIM_WITH_SIMGRID=OFF -DSTRATASIM_WITH_MPI=OFF -DSTRATASIM_BUILD_BENCH=OFF -DSTRATASIM_PYTHON=OFF >/dev/null
cmake --build build-fuzz -j "${JOBS:-2}" --target scenario_fuzzer
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd build-fuzz
rc=0
./tests/fuzz/scenario_fuzzer -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
  -dict=../tests/fuzz/scenario.dict -print_final_stats=1 "$work" ../tests/fuzz/corpus \
  >"$work.log" 2>&1 || rc=$?
grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)" "$work.log" || true
if [ "$rc" -ne 0 ]; then
  tail -n 60 "$work.log"
  echo "fuzz: finding (exit $rc); the input is in build-fuzz/ (crash-*, leak-*, timeout-*)"
fi
rm -f "$work.log"
exit "$rc"
