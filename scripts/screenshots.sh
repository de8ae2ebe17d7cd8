#!/usr/bin/env bash
# Screenshots of stratasim-gui for docs/: starts the GUI on a scenario under Xvfb, waits for
# the evaluation to draw, grabs the screen with ImageMagick's `import`: the main window
# (docs/gui_main_window.png) and the compare view of the two fastest variants
# (docs/gui_compare.png); then renders each `stratasim plot` kind (offscreen, no Xvfb needed)
# to docs/plot_<kind>.png. Needs xvfb, xauth and imagemagick (scripts/install_deps.sh).
#   scripts/screenshots.sh [BUILD_DIR] [SCENARIO.json]
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
scenario="${2:-$root/scenarios/llama2_70b_512_h100.json}"
gui="$build/gui/stratasim-gui"
[ -x "$gui" ] || { echo "error: $gui not built (needs Qt: STRATASIM_WITH_GUI=ON)" >&2; exit 2; }
import_bin=/usr/bin/import  # /usr/local/bin may hold stand-ins (see PLATFORM-NOTES)
[ -x "$import_bin" ] || { echo "error: ImageMagick's import is missing (apt imagemagick)" >&2; exit 2; }

# One screenshot: the GUI started with ARGS..., grabbed after it has drawn.
shot() {
  local out="$1"; shift
  export OUT_PNG="$out" GUI="$gui" IMPORT="$import_bin"
  xvfb-run -a -s "-screen 0 1280x800x24" bash -c '
    "$GUI" "$@" & pid=$!
    sleep 5  # the evaluation takes well under a second; the rest is start-up and first paint
    "$IMPORT" -window root -crop 1280x800+0+0 +repage "$OUT_PNG"
    kill "$pid"; wait "$pid" 2>/dev/null || true' shot "$@"
  echo "wrote $out"
}
shot "$root/docs/gui_main_window.png" "$scenario"
shot "$root/docs/gui_compare.png" "$scenario" --compare 2

# The command line's charts: a 1F1B timeline with 8 micro-batches (few enough to tell apart),
# the base strategy's memory, all variants' time breakdown, and the Pareto scatter of the gpt3
# scenario's search.
"$build/apps/stratasim" plot "$scenario" --kind timeline --variant 1f1b \
  --set strategy.global_batch=128 -o "$root/docs/plot_timeline.png"
for kind in memory breakdown; do
  "$build/apps/stratasim" plot "$scenario" --kind "$kind" -o "$root/docs/plot_$kind.png"
done
"$build/apps/stratasim" plot "$root/scenarios/gpt3_175b_1024_a100.json" --kind pareto \
  -o "$root/docs/plot_pareto.png"
