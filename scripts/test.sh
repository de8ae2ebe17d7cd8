#!/usr/bin/env bash
# Install what is missing, build, and run the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
ctest --test-dir build -j "${JOBS:-2}" --output-on-failure
