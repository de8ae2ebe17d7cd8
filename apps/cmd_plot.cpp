// stratasim plot SCENARIO.json|RESULT.json --kind timeline|memory|breakdown|pareto -o out.png
// [--set k=v] [--variant NAME] [--size WxH]: the GUI's charts rendered offscreen to a PNG
// (gui/chart_png), so batch users get pictures without a display. RESULT.json is the JSON of
// evaluate, simulate, compare or search (told apart by content, gui/result_file).
#include <cstdio>
#include <cstring>
#include <vector>

#include "apps/cli_args.h"
#include "apps/commands.h"
#include "sim/core/error.h"
#include "sim/scenario/scenario.h"
#if STRATASIM_WITH_GUI
#include "gui/chart_png.h"
#endif

namespace stratasim {

#if STRATASIM_WITH_GUI
namespace {

// "1200x700" -> width, height (each 100..10000 pixels).
void parse_size(const std::string& text, PlotRequest* rq) {
  int w = 0, h = 0;
  char extra = 0;
  if (std::sscanf(text.c_str(), "%dx%d%c", &w, &h, &extra) != 2 || w < 100 || h < 100 ||
      w > 10000 || h > 10000) {
    throw InputError("command line", "--size", text,
                     "must be WIDTHxHEIGHT in pixels, e.g. 1200x700");
  }
  rq->width = w;
  rq->height = h;
}

}  // namespace

int cmd_plot(int argc, char** argv) {
  const CliArgs args = parse_cli(argc, argv, 2, "plot");
  if (args.positionals.size() != 1) {
    throw InputError("command line", "plot", std::to_string(args.positionals.size()) + " files",
                     "takes exactly one SCENARIO.json or RESULT.json");
  }
  PlotRequest rq;
  if (!parse_plot_kind(args.option("kind"), &rq.kind)) {
    throw InputError("command line", "--kind", "\"" + args.option("kind") + "\"",
                     "must be timeline, memory, breakdown or pareto");
  }
  const std::string out = args.option("out");
  if (out.empty()) {
    throw InputError("command line", "-o", "(missing)", "names the PNG file to write");
  }
  rq.variant = args.option("variant");
  if (!args.option("size").empty()) parse_size(args.option("size"), &rq);
  const Json doc = load_json_file(args.positionals[0]);
  if (is_result_json(doc)) {
    if (!args.sets.empty()) {
      throw InputError("command line", "--set", args.sets.front(),
                       "applies to scenarios, not to result files");
    }
    plot_result_png(read_result_json(doc, args.positionals[0]), rq, out);
  } else {
    plot_scenario_png(load_scenario(args.positionals[0], args.sets), rq, out);
  }
  std::printf("wrote %s (%dx%d)\n", out.c_str(), rq.width, rq.height);
  return 0;
}

#else

int cmd_plot(int, char**) {
  std::fputs("error: plot: this stratasim was built without Qt (STRATASIM_WITH_GUI=OFF)\n", stderr);
  return 2;
}

#endif

}  // namespace stratasim
