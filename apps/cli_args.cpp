#include "apps/cli_args.h"

#include <cmath>

#include "sim/core/error.h"
#include "sim/core/units.h"

namespace stratasim {

CliArgs parse_cli(int argc, char** argv, int first, const std::set<std::string>& valued,
                  const std::set<std::string>& switches) {
  CliArgs args;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || a == "--") {
      args.positionals.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) value = name.substr(eq + 1), name = name.substr(0, eq);
    if (switches.count(name)) {
      args.flags.insert(name);
      continue;
    }
    if (name != "set" && !valued.count(name)) {
      std::string known;
      for (const auto& v : valued) known += " --" + v;
      for (const auto& s : switches) known += " --" + s;
      throw InputError("command line", "--" + name, "\"" + a + "\"",
                       "is not an option of this command (options: --set" + known + ")");
    }
    if (!inline_value) {
      if (i + 1 >= argc) {
        throw InputError("command line", "--" + name, "(missing)", "needs a value");
      }
      value = argv[++i];
    }
    if (name == "set") args.sets.push_back(value);
    else args.options[name] = value;
    args.repeated[name].push_back(value);
  }
  return args;
}

long long integer_option(const CliArgs& args, const std::string& name, long long fallback,
                         long long min, long long max) {
  const std::string text = args.option(name);
  if (text.empty()) return fallback;
  std::string rule;
  const auto v = parse_quantity(text, Dimension::kCount, &rule);
  if (!v) throw InputError("command line", "--" + name, "\"" + text + "\"", rule);
  if (!(*v >= double(min) && *v <= double(max)) || *v != std::floor(*v)) {
    throw InputError("command line", "--" + name, "\"" + text + "\"",
                     "must be a whole number from " + std::to_string(min) + " to " +
                         std::to_string(max));
  }
  return static_cast<long long>(*v);
}

}  // namespace stratasim
