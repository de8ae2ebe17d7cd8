// The one command-line reader of the stratasim subcommands, on Boost.Program_options: each
// command declares its options once (CliCommand, apps/cli_commands.cpp) and gets its parsing,
// its `stratasim COMMAND --help` text and its error messages from that declaration.
// Unknown options, missing values and values given to switches are InputErrors naming the
// option and the rule; whole numbers are range-checked by integer_option().
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/core/units.h"

namespace stratasim {

// One option: a switch when `value` is empty, else it takes a value shown as `value` in help.
struct CliOption {
  std::string name;      // long name without the dashes: "json"
  std::string value;     // "FILE"; empty for a switch such as --quick
  std::string help;      // one line for `--help`
  char short_name = 0;   // 'o' for "-o FILE"
};

struct CliCommand {
  std::string name;         // "evaluate"
  std::string operands;     // "SCENARIO.json", shown in the usage line
  std::string summary;      // what the command does
  bool takes_set = false;   // accepts repeated --set key=value
  std::vector<CliOption> options;
};

// The declaration of a command by name (apps/cli_commands.cpp); nullptr when unknown.
const CliCommand* find_cli_command(const std::string& name);
const std::vector<CliCommand>& cli_commands();

// `stratasim COMMAND --help`: usage line, summary and every option with its help.
std::string cli_help(const CliCommand& command);

struct CliArgs {
  std::vector<std::string> positionals;
  std::vector<std::string> sets;               // --set key=value, in order
  std::map<std::string, std::string> options;  // --json out.json (the last one given)
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

// A non-negative quantity option ("--train-tokens 1e12", "--price 2.5"), `fallback` when absent;
// negative, non-finite or malformed values are an InputError naming the option.
double number_option(const CliArgs& args, const std::string& name, Dimension dim, double fallback);

// Reads argv[first..argc) against the command's declaration (argv[1] is the command).
CliArgs parse_cli(int argc, char** argv, int first, const CliCommand& command);
// The same for a command declared in apps/cli_commands.cpp, by name.
CliArgs parse_cli(int argc, char** argv, int first, const std::string& command);

}  // namespace stratasim
