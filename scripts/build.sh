#!/usr/bin/env bash
# Configures and builds stratasim in ./build (Release, Ninja). Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "${JOBS:-2}"
