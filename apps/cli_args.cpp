#include "apps/cli_args.h"

#include <boost/program_options.hpp>
#include <cmath>
#include <sstream>

#include "sim/core/error.h"
#include "sim/core/units.h"

namespace stratasim {
namespace po = boost::program_options;
namespace {

const char* kOperandKey = "operands";  // the positional arguments, hidden from help

std::string option_key(const CliOption& o) {
  return o.short_name ? o.name + "," + std::string(1, o.short_name) : o.name;
}

po::options_description visible_options(const CliCommand& command) {
  po::options_description desc("options");
  auto add = desc.add_options();
  if (command.takes_set) {
    add("set", po::value<std::vector<std::string>>()->value_name("KEY=VALUE"),
        "override a scenario value by its dotted JSON path, e.g. strategy.tp=4 (repeatable)");
  }
  for (const CliOption& o : command.options) {
    if (o.value.empty()) add(option_key(o).c_str(), po::bool_switch(), o.help.c_str());
    else {
      add(option_key(o).c_str(), po::value<std::vector<std::string>>()->value_name(o.value),
          o.help.c_str());
    }
  }
  add("help,h", po::bool_switch(), "print this help");
  return desc;
}

std::string known_options(const CliCommand& command) {
  std::string known = command.takes_set ? " --set" : "";
  for (const CliOption& o : command.options) known += " --" + o.name;
  return known.empty() ? "none" : known.substr(1);
}

// Boost's exceptions as InputErrors naming the option, the value and the rule.
[[noreturn]] void rethrow(const po::error& e, const CliCommand& command) {
  const auto* with_option = dynamic_cast<const po::error_with_option_name*>(&e);
  std::string name = with_option ? with_option->get_option_name() : std::string("(options)");
  if (dynamic_cast<const po::unknown_option*>(&e)) {
    throw InputError("command line", name, "\"" + name + "\"",
                     "is not an option of this command (options: " + known_options(command) +
                         "; see stratasim " + command.name + " --help)");
  }
  if (const auto* syntax = dynamic_cast<const po::invalid_command_line_syntax*>(&e)) {
    if (syntax->kind() == po::invalid_syntax::missing_parameter) {
      throw InputError("command line", name, "(missing)", "needs a value");
    }
    if (syntax->kind() == po::invalid_syntax::extra_parameter) {
      throw InputError("command line", name, "(a value)", "is a switch and takes no value");
    }
  }
  throw InputError("command line", name, "(as given)", e.what());
}

void record(const po::option& o, CliArgs* args) {
  if (o.position_key >= 0 || o.string_key == kOperandKey) {
    args->positionals.insert(args->positionals.end(), o.value.begin(), o.value.end());
    return;
  }
  if (o.value.empty()) {
    args->flags.insert(o.string_key);
    return;
  }
  for (const std::string& v : o.value) {
    if (o.string_key == "set") args->sets.push_back(v);
    else args->options[o.string_key] = v;
    args->repeated[o.string_key].push_back(v);
  }
}

}  // namespace

std::string cli_help(const CliCommand& command) {
  std::ostringstream out;
  out << "usage: stratasim " << command.name;
  if (!command.operands.empty()) out << " " << command.operands;
  out << " [options]\n\n" << command.summary << "\n\n" << visible_options(command);
  return out.str();
}

CliArgs parse_cli(int argc, char** argv, int first, const CliCommand& command) {
  po::options_description all = visible_options(command);
  all.add_options()(kOperandKey, po::value<std::vector<std::string>>());
  po::positional_options_description operands;
  operands.add(kOperandKey, -1);
  const int style = po::command_line_style::unix_style & ~po::command_line_style::allow_guessing &
                    ~po::command_line_style::allow_sticky;
  std::vector<std::string> words(argv + first, argv + argc);
  CliArgs args;
  try {
    const po::parsed_options parsed =
        po::command_line_parser(words).options(all).positional(operands).style(style).run();
    for (const po::option& o : parsed.options) record(o, &args);
  } catch (const po::error& e) {
    rethrow(e, command);
  }
  return args;
}

CliArgs parse_cli(int argc, char** argv, int first, const std::string& command) {
  const CliCommand* c = find_cli_command(command);
  if (!c) throw InputError("command line", "command", "\"" + command + "\"", "is not a command");
  return parse_cli(argc, argv, first, *c);
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

double number_option(const CliArgs& args, const std::string& name, Dimension dim, double fallback) {
  const std::string text = args.option(name);
  if (text.empty()) return fallback;
  std::string rule;
  const auto v = parse_quantity(text, dim, &rule);
  if (!v) throw InputError("command line", "--" + name, "\"" + text + "\"", rule);
  if (!(*v >= 0) || !std::isfinite(*v)) {
    throw InputError("command line", "--" + name, "\"" + text + "\"", "must be a non-negative number");
  }
  return *v;
}

}  // namespace stratasim
