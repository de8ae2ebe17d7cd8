// The batch results file: one JSON object per line, appended (write, fflush, fsync) as soon as
// a scenario is done, so a killed batch loses nothing finished. Each line names the scenario
// file and a hash of its content; `--resume` reads the file back, keeps the lines that parse
// and succeeded, drops a torn last line (and failed scenarios, which are run again) and skips
// every (file, hash, mode) already present.
#pragma once

#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace stratasim {

// The scenario files of a batch: a directory's *.json files sorted by name, or a list file
// with one path per line (blank lines and lines starting with '#' skipped; relative paths are
// relative to the list's folder). Throws InputError when the input cannot be read.
std::vector<std::string> batch_inputs(const std::string& dir_or_list);

// 64-bit FNV-1a of the file's bytes as 16 hex digits ("unreadable" when it cannot be read).
std::string content_hash_of_file(const std::string& path);
// How a scenario path is written as a line's "file" and compared on --resume: the path itself
// when it is UTF-8 text, else with its bad bytes escaped as \xNN (JSON strings are UTF-8).
std::string batch_key(const std::string& path);
std::string content_hash(std::string_view bytes);

// What identifies a finished scenario: its path as listed, a hash of its bytes (an edited file
// runs again) and the mode ("evaluate" or "search"; a search result does not stand for an
// evaluation).
struct ResultKey {
  std::string file, hash, mode;
  auto operator<=>(const ResultKey&) const = default;
};

struct ExistingResults {
  std::vector<std::string> kept;  // lines to keep, without '\n'
  std::set<ResultKey> done;       // keys of the kept lines
  int torn = 0;                   // lines that did not parse (a torn last line after a kill)
  int retried = 0;                // error lines dropped so that their scenarios run again
};

// Reads a results file; a missing file is empty.
ExistingResults read_results(const std::string& path);

// An append-only results file; every append reaches the disk before it returns.
class ResultsFile {
 public:
  // `truncate` starts an empty file; otherwise lines are appended to what is there.
  ResultsFile(const std::string& path, bool truncate);
  ~ResultsFile();
  ResultsFile(const ResultsFile&) = delete;
  ResultsFile& operator=(const ResultsFile&) = delete;
  void append(std::string_view line);  // adds '\n'; throws InputError on a write error

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
};

}  // namespace stratasim
