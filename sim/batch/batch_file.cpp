#include "sim/batch/batch_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/core/atomic_file.h"
#include "sim/core/error.h"
#include "sim/core/json_reader.h"

namespace stratasim {
namespace {

namespace fs = std::filesystem;

bool read_whole(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

}  // namespace

// Scenario paths are keys of the results file: "scenarios" and "./scenarios/" must give the
// same ones, so each is made absolute and free of ".", ".." and symlinks where it exists.
std::string canonical_or_as_is(const fs::path& p) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(p, ec);
  return ec ? p.string() : c.string();
}

std::vector<std::string> batch_inputs(const std::string& dir_or_list) {
  std::error_code ec;
  std::vector<std::string> files;
  if (fs::is_directory(dir_or_list, ec)) {
    for (const auto& entry : fs::directory_iterator(dir_or_list)) {
      if (entry.path().extension() == ".json") files.push_back(canonical_or_as_is(entry.path()));
    }
    std::sort(files.begin(), files.end());
    return files;
  }
  std::string text;
  if (!read_whole(dir_or_list, text)) {
    throw InputError("command line", "batch", "\"" + dir_or_list + "\"",
                     "is neither a directory nor a readable list of scenario files");
  }
  const fs::path base = fs::path(dir_or_list).parent_path();
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    line = trimmed(line);
    if (line.empty() || line[0] == '#') continue;
    const fs::path p(line);
    files.push_back(canonical_or_as_is(p.is_absolute() || base.empty() ? p : base / p));
  }
  return files;
}

std::string content_hash(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64 offset basis
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;  // FNV-1a 64 prime
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

std::string batch_key(const std::string& path) { return printable_text(path); }

std::string content_hash_of_file(const std::string& path) {
  std::string text;
  return read_whole(path, text) ? content_hash(text) : "unreadable";
}

ExistingResults read_results(const std::string& path) {
  ExistingResults r;
  std::string text;
  if (!read_whole(path, text)) return r;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    Json j;
    try {
      j = parse_json_text(line, path);
    } catch (const InputError&) {
      ++r.torn;
      continue;
    }
    // A line whose keys are missing or of the wrong type was not written by a batch: torn.
    if (!j.is_object() || !j.contains("file") || !j.contains("hash") || !j.contains("mode") ||
        !j.contains("status") || !j["file"].is_string() || !j["hash"].is_string() ||
        !j["mode"].is_string()) {
      ++r.torn;
      continue;
    }
    if (j["status"] != "ok") {
      ++r.retried;
      continue;
    }
    r.done.insert(
        {j["file"].get<std::string>(), j["hash"].get<std::string>(), j["mode"].get<std::string>()});
    r.kept.push_back(line);
  }
  return r;
}

ResultsFile::ResultsFile(const std::string& path, bool truncate) : path_(path) {
  f_ = std::fopen(path.c_str(), truncate ? "wb" : "ab");
  if (f_ == nullptr) throw InputError(path + ": cannot write file: " + std::strerror(errno));
}

ResultsFile::~ResultsFile() {
  if (f_ != nullptr) std::fclose(f_);
}

void ResultsFile::append(std::string_view line) {
  const bool ok = std::fwrite(line.data(), 1, line.size(), f_) == line.size() &&
                  std::fputc('\n', f_) != EOF && std::fflush(f_) == 0 && ::fsync(::fileno(f_)) == 0;
  if (!ok) throw InputError(path_ + ": cannot append a result: " + std::strerror(errno));
}

}  // namespace stratasim
