// docs/scenario.md lists every key the scenario readers accept, and no other (issue 17). The
// readers declare their keys in allow_keys({...}) calls and the search axes in kAxisNames; this
// test reads those declarations from the sources and the keys from the reference's tables (every
// backticked name in a table row's first cell), and names what is missing on either side.
#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

std::string read_text(const std::string& relative) {
  std::ifstream in(std::string(STRATASIM_SOURCE_DIR) + "/" + relative);
  REQUIRE_MESSAGE(in.good(), relative);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// String literals inside every `marker{...}` of the text (allow_keys({...}), kAxisNames = {...}).
std::set<std::string> literals_after(const std::string& text, const std::string& marker) {
  std::set<std::string> out;
  const std::regex literal("\"([a-z0-9_]+)\"");
  for (size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at + 1)) {
    const size_t open = text.find('{', at), close = text.find('}', open);
    if (open == std::string::npos || close == std::string::npos) break;
    const std::string list = text.substr(open, close - open);
    for (std::sregex_iterator it(list.begin(), list.end(), literal), end; it != end; ++it) {
      out.insert((*it)[1]);
    }
  }
  return out;
}

std::set<std::string> declared_keys() {
  std::set<std::string> keys;
  for (const char* file : {"sim/scenario/scenario.cpp", "strategies/model/model_json.cpp",
                           "strategies/strategy/strategy_json.cpp", "strategies/search/search_space.cpp",
                           "hardware_models/src/hardware_json.cpp"}) {
    const std::set<std::string> k = literals_after(read_text(file), "allow_keys({");
    keys.insert(k.begin(), k.end());
  }
  const std::set<std::string> axes =
      literals_after(read_text("strategies/search/search_space.cpp"), "kAxisNames =");
  keys.insert(axes.begin(), axes.end());
  return keys;
}

std::set<std::string> documented_keys(const std::string& doc) {
  std::set<std::string> keys;
  const std::regex name("`([a-z0-9_]+)`");
  std::istringstream lines(doc);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| ", 0) != 0) continue;
    const size_t end = line.find(" |", 1);
    const std::string cell = line.substr(2, end == std::string::npos ? std::string::npos : end - 2);
    for (std::sregex_iterator it(cell.begin(), cell.end(), name), e; it != e; ++it) keys.insert((*it)[1]);
  }
  return keys;
}

std::string difference(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::string out;
  for (const std::string& k : a) {
    if (!b.count(k)) out += (out.empty() ? "" : ", ") + k;
  }
  return out;
}

}  // namespace

TEST_CASE("docs/scenario.md lists every key the scenario readers accept, and only those") {
  const std::set<std::string> declared = declared_keys();
  // The readers' declarations were found at all (a moved reader must not empty this test).
  REQUIRE(declared.size() > 100);
  CHECK(declared.count("streams") == 1);
  CHECK(declared.count("size_efficiency") == 1);
  const std::set<std::string> documented = documented_keys(read_text("docs/scenario.md"));
  const std::string missing = difference(declared, documented);
  const std::string extra = difference(documented, declared);
  CHECK_MESSAGE(missing.empty(), "keys the readers accept but docs/scenario.md does not list: " << missing);
  CHECK_MESSAGE(extra.empty(), "keys docs/scenario.md lists but no reader accepts: " << extra);
}

TEST_CASE("the reference check fails on a missing and on an extra key") {
  const std::set<std::string> declared = {"tp", "pp", "streams"};
  const std::string doc = "| key | type |\n|---|---|\n| `tp`, `pp` | integer |\n| `bogus` | x |\n";
  const std::set<std::string> documented = documented_keys(doc);
  CHECK(difference(declared, documented) == "streams");
  CHECK(difference(documented, declared) == "bogus");
}
