#include <cstdio>

#include "apps/cli_args.h"
#include "apps/commands.h"
#include "sim/core/atomic_file.h"
#include "validate/published.h"

namespace stratasim {

int cmd_validate(int argc, char** argv) {
  const CliArgs args = parse_cli(argc, argv, 2, {"data", "json"}, {"published"});
  if (!args.has("published")) {
    throw InputError("command line", "validate", "(no mode)",
                     "needs --published (kernel validation comes with the kernels/ issue)");
  }
  const std::string data = args.option("data", published_data_default_path());
  const ValidationReport report = validate_published(load_published_cases(data));
  std::fputs(format_validation(report).c_str(), stdout);
  if (!args.option("json").empty()) {
    write_file_atomically(args.option("json"), validation_json(report).dump(1) + "\n");
  }
  return report.all_within_tolerance ? 0 : 3;
}

}  // namespace stratasim
