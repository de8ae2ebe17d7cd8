#!/usr/bin/env bash
# Builds the whole project with AddressSanitizer + UndefinedBehaviorSanitizer (g++, ./build-asan;
# CUDA and the benchmarks left out) and runs every test under it, the GUI tests included.
# Any sanitizer report fails the test that triggered it. CI runs this from .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
flags="-O1 -g1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DSTRATASIM_WITH_CUDA=OFF -DSTRATASIM_BUILD_BENCH=OFF -DSTRATASIM_PYTHON=OFF >/dev/null
cmake --build build-asan -j "${JOBS:-2}"
supp="$PWD/tests/sanitizers"
# No detect_stack_use_after_return: its fake stacks do not survive SimGrid's context switches
# between actors (a false SEGV in the first collective).
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
ctest --test-dir build-asan -j "${JOBS:-2}" --output-on-failure --timeout 600
