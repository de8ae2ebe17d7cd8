#!/usr/bin/env bash
# The main job: install what is missing, build, and compare the strategy variants of every
# bundled scenario, printed as tables (also written to out/compare.{json,csv}).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
mkdir -p out
build/apps/stratasim compare scenarios --json out/compare.json --csv out/compare.csv
