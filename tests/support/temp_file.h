// A test's input file: `text` written to `name` in the system's temporary directory.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace stratasim::testing {

inline std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace stratasim::testing
