#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include "sim/batch/batch_file.h"
#include "sim/core/json_reader.h"
#include "tests/batch/batch_test_files.h"
#include "tests/support/run_cli.h"

using namespace stratasim;
using namespace stratasim::testing;

namespace {

// How many times each scenario file appears among the result lines (all must parse).
std::map<std::string, int> files_in(const std::string& results) {
  std::map<std::string, int> count;
  for (const std::string& line : lines_of(results)) {
    const Json j = parse_json_text(line, results);
    ++count[j["file"].get<std::string>()];
  }
  return count;
}

// Starts `stratasim batch LIST --out OUT` with a delay after each scenario, waits for the
// first complete line, then kills it with SIGKILL. Returns the number of lines it left.
size_t run_and_kill(const std::string& list, const std::string& out) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setenv("STRATASIM_BATCH_DELAY_MS", "400", 1);
    ::execl(STRATASIM_BINARY, STRATASIM_BINARY, "batch", list.c_str(), "--out", out.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string text = read_text(out);
    if (!text.empty() && text.back() == '\n') break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFSIGNALED(status));
  return lines_of(out).size();
}

}  // namespace

TEST_CASE("batch: one JSON line per scenario in order, a broken scenario as an error line") {
  const TempDir tmp;
  const std::string& dir = tmp.path;
  const std::vector<std::string> files = write_tiny_scenarios(dir, 3);
  write_text(dir + "/s99_broken.json", "{\"name\": \"broken\",\n  \"model\": }\n");
  const std::string out = dir + "/results.jsonl";
  const CliRun run = run_cli("batch " + dir + " --out " + out);
  CHECK(run.code == 2);  // one scenario failed, the others ran
  CHECK(run.output.find("1 failed") != std::string::npos);
  CHECK(run.output.find("4 scenario(s) run") != std::string::npos);
  const std::vector<std::string> lines = lines_of(out);
  REQUIRE(lines.size() == 4);
  for (size_t i = 0; i < 3; ++i) {
    const Json j = parse_json_text(lines[i], out);
    CHECK(j["file"] == files[i]);
    CHECK(j["status"] == "ok");
    CHECK(j["hash"] == content_hash_of_file(files[i]));
    // base, "data parallel", "tp + sp": every variant lowered and predicted.
    REQUIRE(j["variants"].size() == 3);
    CHECK(j["variants"][0]["prediction"]["tokens_per_s"].get<double>() > 0);
  }
  const Json broken = parse_json_text(lines[3], out);
  CHECK(broken["status"] == "error");
  CHECK(broken["error"].get<std::string>().find("s99_broken.json:2:") != std::string::npos);
}

TEST_CASE("batch: --resume after a killed batch runs every scenario exactly once") {
  const TempDir tmp;
  const std::string& dir = tmp.path;
  const std::vector<std::string> files = write_tiny_scenarios(dir, 8);
  std::string list = "# the scenarios of this batch\n";
  for (const std::string& f : files) list += std::filesystem::path(f).filename().string() + "\n";
  write_text(dir + "/list.txt", list);
  const std::string out = dir + "/results.jsonl";
  const size_t before = run_and_kill(dir + "/list.txt", out);
  CHECK(before >= 1);
  CHECK(before < files.size());  // killed mid-run (8 x 400 ms would take 3.2 s)
  const std::vector<std::string> kept = lines_of(out);

  const CliRun resumed = run_cli("batch " + dir + "/list.txt --out " + out + " --resume");
  CHECK(resumed.code == 0);
  CHECK(resumed.output.find(std::to_string(before) + " already done (skipped)") !=
        std::string::npos);
  const std::vector<std::string> lines = lines_of(out);
  REQUIRE(lines.size() == files.size());
  for (size_t i = 0; i < kept.size(); ++i) CHECK(lines[i] == kept[i]);  // finished work kept
  const std::map<std::string, int> count = files_in(out);
  CHECK(count.size() == files.size());
  for (const std::string& f : files) CHECK(count.at(f) == 1);
  // A second resume finds nothing left to do.
  const CliRun again = run_cli("batch " + dir + "/list.txt --out " + out + " --resume");
  CHECK(again.output.find("0 scenario(s) run") != std::string::npos);
  CHECK(lines_of(out).size() == files.size());
}

TEST_CASE("batch: --resume drops a torn last line and rewrites the file without it") {
  const TempDir tmp;
  const std::string& dir = tmp.path;
  write_tiny_scenarios(dir, 3);
  const std::string out = dir + "/results.jsonl";
  REQUIRE(run_cli("batch " + dir + " --out " + out).code == 0);
  const std::string whole = read_text(out);
  // A crash in the middle of writing the third line: its first half, no newline.
  const size_t third = whole.rfind('\n', whole.size() - 2) + 1;
  write_text(out, whole.substr(0, third + (whole.size() - third) / 2));
  CHECK(lines_of(out).size() == 3);

  const CliRun resumed = run_cli("batch " + dir + " --out " + out + " --resume");
  CHECK(resumed.code == 0);
  CHECK(resumed.output.find("1 torn line(s) dropped") != std::string::npos);
  CHECK(resumed.output.find("2 already done") != std::string::npos);
  CHECK(read_text(out) == whole);  // the same bytes as the uninterrupted run
}

TEST_CASE("batch: --search writes each scenario's search result") {
  const TempDir tmp;
  const std::string& dir = tmp.path;
  write_tiny_scenarios(dir, 2, true);
  // No "search" block: the derived space. An empty one: nothing to search, an error.
  write_text(dir + "/s40_derived.json", tiny_scenario("derived"));
  std::string empty = tiny_scenario("no space");
  empty.insert(empty.rfind('}'), ",\n  \"search\": {}");
  write_text(dir + "/s50_no_space.json", empty);
  const std::string out = dir + "/results.jsonl";
  const CliRun run = run_cli("batch " + dir + " --search --top 3 --out " + out);
  CHECK(run.code == 2);
  const std::vector<std::string> lines = lines_of(out);
  REQUIRE(lines.size() == 4);
  const Json j = parse_json_text(lines[0], out);
  CHECK(j["mode"] == "search");
  // 2 tp x 4 micro_batch x 3 recompute x 2 sequence_parallel = 48 points.
  CHECK(j["search"]["points"] == 48);
  CHECK(j["search"]["top"].size() == 3);
  const Json derived = parse_json_text(lines[2], out);
  CHECK(derived["status"] == "ok");
  CHECK(derived["search"]["space"].contains("tp"));
  CHECK(derived["search"]["top"].size() == 3);
  const Json none = parse_json_text(lines[3], out);
  CHECK(none["status"] == "error");
  CHECK(none["error"].get<std::string>().find("search: (empty) leaves nothing to search") != std::string::npos);

  // Results are keyed by mode too: resuming as an evaluation skips none of the searches; the
  // failed search line is dropped and that scenario now evaluates fine.
  const CliRun evaluate = run_cli("batch " + dir + " --out " + out + " --resume");
  CHECK(evaluate.code == 0);
  CHECK(evaluate.output.find("4 scenario(s) run") != std::string::npos);
  CHECK(evaluate.output.find("1 earlier failure(s) retried") != std::string::npos);
  CHECK(lines_of(out).size() == 7);  // 3 searches + 4 evaluations
}

TEST_CASE("batch: content hashes are FNV-1a 64") {
  // FNV-1a 64 of "" is the offset basis; of "a" the published test vector.
  CHECK(content_hash("") == "cbf29ce484222325");
  CHECK(content_hash("a") == "af63dc4c8601ec8c");
}
