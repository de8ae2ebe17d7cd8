#!/usr/bin/env bash
# The main job: install what is missing, build, compare the strategy variants of every bundled
# scenario (one readable table per scenario, also out/compare.{json,csv}), and record the same
# batch as resumable JSON lines (out/batch.jsonl).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
mkdir -p out
build/apps/stratasim compare scenarios --json out/compare.json --csv out/compare.csv
build/apps/stratasim batch scenarios --out out/batch.jsonl --resume
