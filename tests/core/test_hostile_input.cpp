// Hostile input (issue 14): files that are not what they seem, JSON that would recurse without
// end or overflow, output paths that are devices, symlinks or planted temp files. Each case
// asserts the message.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/core/atomic_file.h"
#include "sim/core/error.h"
#include "sim/core/json_reader.h"
#include "tests/support/run_cli.h"

using namespace stratasim;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the test's working directory.
fs::path scratch(const std::string& name) {
  const fs::path dir = fs::current_path() / ("hostile_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("hostile input: JSON nested 100,000 deep is refused, not a stack overflow") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_THROWS_WITH_AS(parse_json_text(deep, "deep.json"),
                       "deep.json: JSON nested deeper than 256 levels (at most 256 are read)",
                       InputError);
  const std::string ok = std::string(200, '[') + std::string(200, ']');
  CHECK(parse_json_text(ok, "ok.json").is_array());
}

TEST_CASE("hostile input: a number that overflows a double is bad input") {
  CHECK_THROWS_WITH_AS(parse_json_text(R"({"tp": 1e999})", "big.json"),
                       "big.json: malformed JSON: number overflow parsing '1e999' (JSON numbers "
                       "here must be finite, at most about 1.8e308)",
                       InputError);
}

TEST_CASE("hostile input: 40,000 keys are checked for duplicates in linear time") {
  std::string text = "{";
  for (int i = 0; i < 40000; ++i) text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":1";
  CHECK(parse_json_text(text + "}", "keys.json").size() == 40000);
  CHECK_THROWS_WITH_AS(parse_json_text(text + ",\"k7\":2}", "keys.json"),
                       "keys.json: key \"k7\" appears twice in one object (JSON keys must be unique)",
                       InputError);
}

TEST_CASE("hostile input: directories, FIFOs and devices are not read as JSON") {
  const fs::path dir = scratch("read");
  CHECK_THROWS_WITH_AS(load_json_file(dir.string()),
                       (dir.string() + ": is a directory, not a JSON file").c_str(), InputError);
  const fs::path fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(load_json_file(fifo.string()),
                       (fifo.string() + ": is not a regular file (a device, FIFO or socket); give a "
                                        "JSON file").c_str(),
                       InputError);
  CHECK_THROWS_WITH_AS(load_json_file("/dev/zero"),
                       "/dev/zero: is not a regular file (a device, FIFO or socket); give a JSON file",
                       InputError);
  CHECK_THROWS_WITH_AS(load_json_file((dir / "missing.json").string()),
                       ((dir / "missing.json").string() +
                        ": cannot open file for reading: No such file or directory").c_str(),
                       InputError);
  fs::remove_all(dir);
}

TEST_CASE("hostile input: output files: devices written through, symlinks followed, temp files fresh") {
  const fs::path dir = scratch("write");
  // A device stays a device.
  write_file_atomically("/dev/null", "{}\n");
  struct stat st {};
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  // A symlink writes the file it names and stays a symlink, also when that file does not exist.
  const fs::path real = dir / "real.json", link = dir / "link.json";
  fs::create_symlink("real.json", link);
  write_file_atomically(link.string(), "one\n");
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  CHECK(read(real) == "one\n");
  write_file_atomically(link.string(), "two\n");
  CHECK(read(real) == "two\n");
  // A planted PATH.tmp.<pid> symlink (the old temp-file name) is never followed.
  const fs::path out = dir / "out.json", victim = dir / "victim";
  fs::create_symlink(victim, dir / ("out.json.tmp." + std::to_string(::getpid())));
  write_file_atomically(out.string(), "result\n");
  CHECK(read(out) == "result\n");
  CHECK_FALSE(fs::exists(victim));
  // No temp file is left behind.
  int temps = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    temps += e.path().filename().string().rfind("out.json.tmp.", 0) == 0 &&
             !fs::is_symlink(fs::symlink_status(e.path()));
  }
  CHECK(temps == 0);
  // A directory is refused with its reason.
  CHECK_THROWS_WITH_AS(write_file_atomically(dir.string(), "x"),
                       (dir.string() + ": cannot write file: it is a directory").c_str(), InputError);
  // /dev/full reports the write error instead of being replaced.
  if (fs::exists("/dev/full")) {
    CHECK_THROWS_WITH_AS(write_file_atomically("/dev/full", "x"),
                         "/dev/full: cannot write file: No space left on device", InputError);
    REQUIRE(::stat("/dev/full", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
  }
  fs::remove_all(dir);
}

TEST_CASE("hostile input: batch --out naming one of its scenarios is refused, the scenario kept") {
  const fs::path dir = scratch("batch");
  const fs::path scenario = dir / "tiny.json";
  fs::copy_file(fs::path(STRATASIM_SOURCE_DIR) / "scenarios" / "tiny_2gpu_1layer.json", scenario);
  const std::string before = read(scenario);
  const testing::CliRun r =
      testing::run_cli("batch " + dir.string() + " --out " + (dir / "." / "tiny.json").string());
  CHECK(r.code == 2);
  CHECK(r.output.find("is one of the scenarios the batch reads") != std::string::npos);
  CHECK(read(scenario) == before);
  // An evaluate --json into /dev/null leaves it a device (exit 0).
  const testing::CliRun n = testing::run_cli("evaluate " + scenario.string() + " --json /dev/null");
  CHECK(n.code == 0);
  struct stat st {};
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  fs::remove_all(dir);
}

TEST_CASE("hostile input: counts are whole numbers in range, search spaces fit 64 bits") {
  const std::string gpt3 = std::string(STRATASIM_SOURCE_DIR) + "/scenarios/gpt3_175b_1024_a100.json";
  const testing::CliRun top = testing::run_cli("search " + gpt3 + " --top 1e10");
  CHECK(top.code == 2);
  CHECK(top.output.find("--top: \"1e10\" must be a whole number from 1 to 1000000") !=
        std::string::npos);
  const testing::CliRun threads = testing::run_cli("search " + gpt3 + " --threads 2.5");
  CHECK(threads.code == 2);
  CHECK(threads.output.find("--threads: \"2.5\" must be a whole number from 0 to 4096") !=
        std::string::npos);
  // 10^6 x 10^6 x 10^6 x 10^5 points overflow 64 bits: refused, not "0 points".
  const fs::path dir = scratch("space");
  const fs::path huge = dir / "huge.json";
  std::ofstream(huge) << R"({"name": "huge", "model": "gpt3-175b",
    "cluster": {"preset": "dgx_a100", "devices": 1024},
    "strategy": {"tp": 8, "pp": 8, "global_batch": 1536},
    "search": {"micro_batch": {"from": 1, "to": 1000000, "step": 1},
               "pp": {"from": 1, "to": 1000000, "step": 1},
               "interleave": {"from": 1, "to": 1000000, "step": 1},
               "tp": {"from": 1, "to": 100000, "step": 1}}})";
  const testing::CliRun space = testing::run_cli("search " + huge.string());
  CHECK(space.code == 2);
  CHECK(space.output.find("spans more than 2^62 strategies; give fewer values per axis") !=
        std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("hostile input: a killed simulate leaves no simulation process behind") {
  // The SimGrid run is a forked child; with PR_SET_PDEATHSIG it dies with its parent. Megatron
  // 1T at layer granularity runs for many seconds: kill -9 the parent after one.
  const fs::path dir = scratch("orphan");
  const fs::path scenario = dir / "orphan_probe_1t.json";
  fs::copy_file(fs::path(STRATASIM_SOURCE_DIR) / "scenarios" / "megatron_1t_3072_a100.json", scenario);
  const std::string cmd = std::string(STRATASIM_BINARY) + " simulate " + scenario.string() +
                          " --granularity layer > /dev/null 2>&1 & pid=$!; sleep 1.5; "
                          "kill -9 $pid; wait $pid 2>/dev/null; sleep 0.5; "
                          "for p in $(pgrep -x stratasim); do "
                          "grep -l orphan_probe /proc/$p/cmdline 2>/dev/null; done | wc -l";
  const testing::CliRun r = testing::run_command(cmd);
  CHECK(r.output.find_first_not_of(" \n0") == std::string::npos);  // "0": no process left
  fs::remove_all(dir);
}

TEST_CASE("hostile input: batch --resume keys scenarios by canonical path and content") {
  const fs::path dir = scratch("resume");
  fs::create_directories(dir / "sc");
  fs::copy_file(fs::path(STRATASIM_SOURCE_DIR) / "scenarios" / "tiny_2gpu_1layer.json",
                dir / "sc" / "tiny.json");
  const std::string out = (dir / "r.jsonl").string();
  auto lines = [&] {
    std::ifstream in(out);
    int n = 0;
    for (std::string l; std::getline(in, l);) n += !l.empty();
    return n;
  };
  REQUIRE(testing::run_cli("batch " + (dir / "sc").string() + " --out " + out).code == 0);
  // The same directory spelled differently: nothing runs again, the file is not doubled.
  const testing::CliRun again =
      testing::run_cli("batch " + (dir / "." / "sc").string() + "/ --out " + out + " --resume");
  CHECK(again.code == 0);
  CHECK(again.output.find("0 scenario(s) run") != std::string::npos);
  CHECK(lines() == 1);
  // An edited scenario runs again and its old line goes: one line per scenario.
  {
    std::ofstream edit(dir / "sc" / "tiny.json", std::ios::app);
    edit << "\n";
  }
  const testing::CliRun edited =
      testing::run_cli("batch " + (dir / "sc").string() + " --out " + out + " --resume");
  CHECK(edited.code == 0);
  CHECK(edited.output.find("1 edited scenario(s) run again") != std::string::npos);
  CHECK(lines() == 1);
  fs::remove_all(dir);
}

TEST_CASE("hostile input: Ctrl-C during a search reports what it found, marked partial") {
  const fs::path dir = scratch("sigint");
  const fs::path sc = dir / "big_search.json";
  std::ofstream(sc) << R"({"name": "big search", "model": "gpt3-175b",
    "cluster": {"preset": "dgx_a100", "devices": 1024},
    "strategy": {"tp": 8, "pp": 8, "global_batch": 1536},
    "search": {"micro_batch": {"from": 1, "to": 2000000, "step": 1},
               "pp": [1, 2, 4, 8, 16, 32, 64], "tp": [1, 2, 4, 8], "interleave": [1, 2, 3, 4],
               "recompute": ["none", "selective", "full"], "zero_stage": [0, 1, 2, 3]}})";
  const std::string json = (dir / "out.json").string();
  const testing::CliRun r = testing::run_command(
      std::string(STRATASIM_BINARY) + " search " + sc.string() + " --threads 1 --json " + json +
      " & pid=$!; sleep 1; kill -INT $pid; wait $pid; echo \"exit $?\"");
  CHECK(r.output.find("exit 0") != std::string::npos);
  CHECK(r.output.find("interrupted: ") != std::string::npos);
  CHECK(r.output.find("the results below are partial") != std::string::npos);
  std::ifstream in(json);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"partial\": true") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("hostile input: invalid UTF-8 is not echoed raw, a NUL byte is an error, stdout errors count") {
  CHECK_THROWS_WITH_AS(parse_json_text(std::string("{\"name\": \"a\xff\"}"), "u.json"),
                       "u.json:1:12: malformed JSON: syntax error while parsing value - invalid "
                       "string: ill-formed UTF-8 byte; last read: '\"a\\xff'",
                       InputError);
  CHECK(printable_text("ok \xc3\xa9 \x01 \xe2\x82") == "ok \xc3\xa9 \\x01 \\xe2\\x82");
  CHECK_THROWS_WITH_AS(parse_json_text(std::string("{\"a\": 1}\0junk", 13), "n.json"),
                       "n.json:1:9: malformed JSON: a NUL byte (JSON text must not contain one)",
                       InputError);
  if (fs::exists("/dev/full")) {
    const testing::CliRun r = testing::run_command(  // stderr to the pipe, stdout to /dev/full
        "(" + std::string(STRATASIM_BINARY) + " evaluate " + STRATASIM_SOURCE_DIR +
        "/scenarios/tiny_2gpu_1layer.json > /dev/full)");
    CHECK(r.code == 2);
    CHECK(r.output.find("error: cannot write to standard output: No space left on device") !=
          std::string::npos);
  }
}

TEST_CASE("hostile input: simulate refuses a plan too large to simulate, before running it") {
  // tiny: 1 layer, pp 1, dp 1 at tp 2. A global batch of 1e9 at micro-batch 1 is 1e9
  // micro-batches x 1 stage x 2 passes = 2e9 operations > the 4e6 limit.
  const std::string tiny = std::string(STRATASIM_SOURCE_DIR) + "/scenarios/tiny_2gpu_1layer.json";
  const testing::CliRun r = testing::run_cli(
      "simulate " + tiny + " --set strategy.global_batch=1e9 --set strategy.micro_batch=1");
  CHECK(r.code == 2);
  if (r.output.find("built without SimGrid") != std::string::npos) return;
  CHECK(r.output.find("1000000000 micro-batches on 1 virtual stages make 2e+09 simulated "
                      "operations, more than the SimGrid engine's limit of 4e+06") !=
        std::string::npos);
}

TEST_CASE("hostile input: every command has its own --help, unknown options name the command") {
  const testing::CliRun help = testing::run_cli("search --help");
  CHECK(help.code == 0);
  CHECK(help.output.find("usage: stratasim search SCENARIO.json [options]") != std::string::npos);
  CHECK(help.output.find("--train-tokens N") != std::string::npos);
  const testing::CliRun bad = testing::run_cli("evaluate x.json --trace t.json");
  CHECK(bad.code == 2);
  CHECK(bad.output.find("--trace: \"--trace\" is not an option of this command (options: --set "
                        "--variant --json --timeline --kernels --train-tokens --price; see stratasim "
                        "evaluate --help)") !=
        std::string::npos);
  const testing::CliRun missing = testing::run_cli("search x.json --top");
  CHECK(missing.code == 2);
  CHECK(missing.output.find("--top: (missing) needs a value") != std::string::npos);
  const testing::CliRun switch_value = testing::run_cli("batch dir --resume=yes");
  CHECK(switch_value.code == 2);
  CHECK(switch_value.output.find("--resume: (a value) is a switch and takes no value") !=
        std::string::npos);
  const testing::CliRun guessed = testing::run_cli("search x.json --thr 2");  // no prefixes
  CHECK(guessed.code == 2);
  CHECK(guessed.output.find("\"--thr\" is not an option of this command") != std::string::npos);
}

TEST_CASE("hostile input: bytes that are not UTF-8 in --set values and file names") {
  // Found by the fuzzer: a --set value with byte 0xff reached a JSON document whose messages
  // and outputs are dumped as text, which threw (exit 1). It is refused at the boundary.
  const std::string tiny = std::string(STRATASIM_SOURCE_DIR) + "/scenarios/tiny_2gpu_1layer.json";
  const testing::CliRun set = testing::run_cli("evaluate " + tiny + " --set \"$(printf 'strategy.schedule=zb\\377')\"");
  CHECK(set.code == 2);
  CHECK(set.output.find("error: --set: (path): \"strategy.schedule=zb\\xff\" is not valid UTF-8 text") !=
        std::string::npos);
  // A scenario file whose name is not UTF-8: every command that records the file name in JSON
  // writes it (batch with the bad byte escaped, so --resume finds it again).
  const fs::path dir = scratch("utf8");
  fs::create_directories(dir / "sc");
  const fs::path odd = dir / "sc" / "ti\xffny.json";
  fs::copy_file(tiny, odd);
  const std::string out = (dir / "r.jsonl").string();
  CHECK(testing::run_cli("evaluate '" + odd.string() + "' --json " + (dir / "e.json").string()).code == 0);
  CHECK(testing::run_cli("compare " + (dir / "sc").string() + " --json " + (dir / "c.json").string()).code == 0);
  const testing::CliRun first = testing::run_cli("batch " + (dir / "sc").string() + " --out " + out);
  CHECK(first.code == 0);
  CHECK(read(out).find("\"file\":\"" + (dir / "sc").string() + "/ti\\\\xffny.json\"") != std::string::npos);
  // A line with the right keys but wrong types is torn, not an internal error.
  std::ofstream(out, std::ios::app) << R"({"file": 5, "hash": "x", "mode": "evaluate", "status": "ok"})" << "\n";
  const testing::CliRun again = testing::run_cli("batch " + (dir / "sc").string() + " --out " + out + " --resume");
  CHECK(again.code == 0);
  CHECK(again.output.find("0 scenario(s) run in") != std::string::npos);
  CHECK(again.output.find("1 already done (skipped), 1 torn line(s) dropped") != std::string::npos);
  fs::remove_all(dir);
}
