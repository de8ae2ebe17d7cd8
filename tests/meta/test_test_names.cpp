// Every test case runs under ctest. doctest_discover_tests registers each case by name, and
// CMake reads a ';' in a name as a list separator: the registered name is cut there, its
// --test-case filter then matches no case, and doctest reports success having run nothing.
// 23 cases once passed that way, two of them failing when run.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

// The TEST_CASE names in `source`, in order.
std::vector<std::string> test_case_names(const std::string& source) {
  static const std::regex name(R"re(TEST_CASE\("((?:[^"\\]|\\.)*)"\))re");
  std::vector<std::string> out;
  for (std::sregex_iterator it(source.begin(), source.end(), name), e; it != e; ++it) out.push_back((*it)[1]);
  return out;
}

// Names ctest cannot run as written: with a ';', or given to two cases.
std::string unrunnable(const std::map<std::string, std::vector<std::string>>& names_by_file) {
  std::string out;
  std::map<std::string, std::string> seen;
  for (const auto& [file, names] : names_by_file) {
    for (const std::string& n : names) {
      if (n.find(';') != std::string::npos) out += file + ": '" + n + "' has a ';'\n";
      if (auto [it, fresh] = seen.emplace(n, file); !fresh) {
        out += file + ": '" + n + "' also names a case in " + it->second + "\n";
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("tests: every test case name reaches ctest whole, without a semicolon or a duplicate") {
  std::map<std::string, std::vector<std::string>> names;
  size_t total = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(STRATASIM_SOURCE_DIR) + "/tests")) {
    if (entry.path().extension() != ".cpp") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    names[entry.path().lexically_relative(STRATASIM_SOURCE_DIR).string()] = test_case_names(text.str());
    total += names.rbegin()->second.size();
  }
  REQUIRE(total > 500);  // the scan found the suite (a moved directory must not empty it)
  const std::string bad = unrunnable(names);
  CHECK_MESSAGE(bad.empty(), bad);
}

TEST_CASE("tests: the name check finds a semicolon and a duplicate") {
  const std::string source = "TEST_CASE(\"a: one, two\") {}\nTEST_CASE(\"b: one; two\") {}\n"
                             "TEST_CASE(\"a: one, two\") {}\n";
  const std::vector<std::string> found = test_case_names(source);
  REQUIRE(found.size() == 3);
  CHECK(found[1] == "b: one; two");
  const std::string bad = unrunnable({{"x.cpp", found}});
  CHECK(bad.find("x.cpp: 'b: one; two' has a ';'") != std::string::npos);
  CHECK(bad.find("x.cpp: 'a: one, two' also names a case in x.cpp") != std::string::npos);
}
