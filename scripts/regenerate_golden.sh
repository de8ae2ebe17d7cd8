#!/usr/bin/env bash
# Regenerates scenarios/expected/*.json, the golden outputs the scenario tests compare with
# (iteration time, throughput, MFU, bubble, exposed communication and peak memory of every
# variant). Run after a deliberate model change and read the diff before committing it.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${BIN:-}" ] || scripts/build.sh >/dev/null
mkdir -p scenarios/expected
for f in scenarios/*.json; do
  name=$(basename "$f" .json)
  ${BIN:-build/apps/stratasim} compare "$f" --json "scenarios/expected/$name.full.json" >/dev/null
  python3 - "$f" "scenarios/expected/$name.full.json" "scenarios/expected/$name.json" <<'PY'
import json, sys
src, full, out = sys.argv[1:]
rows = json.load(open(full))[0]["variants"]
keep = ["iteration_s", "tokens_per_s", "mfu", "bubble_fraction", "comm_exposed_s", "peak_memory_B", "fits"]
golden = {"scenario": src, "variants": {}}
for r in rows:
    golden["variants"][r["variant"]] = ({k: r["prediction"][k] for k in keep} if r["feasible"]
                                        else {"infeasible": r["reason"]})
json.dump(golden, open(out, "w"), indent=1)
open(out, "a").write("\n")
PY
  rm "scenarios/expected/$name.full.json"
done
echo "regenerated $(ls scenarios/expected/*.json | wc -l) golden files"
