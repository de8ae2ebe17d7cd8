// Issue 13: the SimGrid engine replays the iteration program with the shared cost model
// (sim/cost) and never calls the analytical engine (sim/analytical): no include, no call, no
// link dependency. A grep over its sources, so a regression fails here.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("simgrid: no include of, call into or link with the analytical engine") {
  const std::filesystem::path dir = std::filesystem::path(STRATASIM_SOURCE_DIR) / "sim" / "simgrid";
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string text = read(e.path());
    CAPTURE(e.path().string());
    CHECK(text.find("sim/analytical/") == std::string::npos);
    CHECK(text.find("predict_analytical") == std::string::npos);
    CHECK(text.find("stratasim_analytical") == std::string::npos);
    ++files;
  }
  CHECK(files >= 10);
}
