// A small argument reader for the stratasim subcommands: positionals, repeated --set, and
// --flag value options. Unknown options are InputErrors naming the option.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace stratasim {

struct CliArgs {
  std::vector<std::string> positionals;
  std::vector<std::string> sets;               // --set key=value, in order
  std::map<std::string, std::string> options;  // --json out.json
  std::set<std::string> flags;                 // --published
  std::map<std::string, std::vector<std::string>> repeated;  // every value of each option

  std::vector<std::string> all(const std::string& name) const {
    auto it = repeated.find(name);
    return it == repeated.end() ? std::vector<std::string>{} : it->second;
  }

  bool has(const std::string& flag) const { return flags.count(flag) > 0; }
  std::string option(const std::string& name, const std::string& fallback = "") const {
    auto it = options.find(name);
    return it == options.end() ? fallback : it->second;
  }
};

// A whole-number option within [min, max] (`fallback` when absent): "--top 1e10" or
// "--threads 2.5" is an InputError naming the option and the range, never an undefined cast.
long long integer_option(const CliArgs& args, const std::string& name, long long fallback,
                         long long min, long long max);

// `valued` lists options that take a value; `switches` lists options that do not.
CliArgs parse_cli(int argc, char** argv, int first, const std::set<std::string>& valued,
                  const std::set<std::string>& switches);

}  // namespace stratasim
