// 2 MPI ranks give byte-identical result files to 1 process, for search and for batch.
// Skipped (with a message) when stratasim was built without MPI or mpirun is absent.
#include <doctest/doctest.h>

#include <cstdlib>

#include "tests/batch/batch_test_files.h"
#include "tests/support/run_cli.h"

using namespace stratasim::testing;

namespace {

bool mpi_available() {
#ifndef STRATASIM_WITH_MPI
  MESSAGE("SKIPPED: stratasim was built without MPI (STRATASIM_WITH_MPI=OFF)");
  return false;
#else
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) {
    MESSAGE("SKIPPED: mpirun is not installed (apt-get install openmpi-bin libopenmpi-dev)");
    return false;
  }
  return true;
#endif
}

// Under AddressSanitizer (scripts/test_sanitizers.sh) Open MPI's components, loaded with
// dlopen and unloaded at exit, leak a few KB that no suppression can name (their frames have
// no module left): leak checking is off for the ranks, every other check stays on.
std::string leak_check_off() {
#if defined(__SANITIZE_ADDRESS__)
  const char* asan = std::getenv("ASAN_OPTIONS");
  return "ASAN_OPTIONS=" + std::string(asan ? asan : "") + ":detect_leaks=0 ";
#else
  return "";
#endif
}

// Runs the CLI under `mpirun -np 2` as root in a sandbox: local launch only (plm isolated),
// shared memory without single-copy (no ptrace permission here), no network transports.
CliRun run_mpi(const std::string& args) {
  const std::string env =
      "OMPI_MCA_plm=isolated OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none "
      "OMPI_MCA_pml=ob1 OMPI_MCA_rmaps_base_oversubscribe=1 " + leak_check_off();
  return stratasim::testing::run_command(env + "timeout 60 mpirun --allow-run-as-root --oversubscribe -np 2 " +
                                          std::string(STRATASIM_BINARY) + " " + args);
}

}  // namespace

TEST_CASE("mpi: a 2-rank search writes the same JSON and CSV as one process") {
  if (!mpi_available()) return;
  const TempDir tmp;
  const std::string& dir = tmp.path;
  // gpt3-175b on 512 A100: 3 x 4 x 4 x 2 x 3 x 2 x 2 = 1152 points.
  write_text(dir + "/gpt3.json", R"({"name": "gpt3 search", "model": "gpt3-175b",
    "cluster": {"preset": "dgx_a100", "devices": 512},
    "strategy": {"tp": 8, "pp": 8, "global_batch": 512, "micro_batch": 1, "fusion": "megatron"},
    "search": {"tp": [2, 4, 8], "pp": [2, 4, 8, 16], "micro_batch": [1, 2, 4, 8],
               "schedule": ["1f1b", "interleaved"], "recompute": ["none", "selective", "full"],
               "interleave": [1, 2], "sequence_parallel": [false, true]}})");
  const std::string common = "search " + dir + "/gpt3.json --top 7 --threads 1 ";
  const CliRun one = run_cli(common + "--json " + dir + "/one.json --csv " + dir + "/one.csv");
  REQUIRE_MESSAGE(one.code == 0, one.output);
  const CliRun two = run_mpi(common + "--json " + dir + "/two.json --csv " + dir + "/two.csv");
  REQUIRE_MESSAGE(two.code == 0, two.output);
  CHECK(two.output.find("spread over 2 MPI ranks") != std::string::npos);
  CHECK(read_text(dir + "/one.json").size() > 100);
  CHECK(read_text(dir + "/one.json") == read_text(dir + "/two.json"));
  CHECK(read_text(dir + "/one.csv") == read_text(dir + "/two.csv"));
}

TEST_CASE("mpi: a 2-rank batch writes the same results file as one process") {
  if (!mpi_available()) return;
  const TempDir tmp;
  const std::string& dir = tmp.path;
  write_tiny_scenarios(dir, 5, true);
  write_text(dir + "/s07_broken.json", "{\"name\": 1}\n");
  for (const std::string mode : {"", "--search "}) {
    CAPTURE(mode);
    const std::string common = "batch " + dir + " " + mode + "--out ";
    const CliRun one = run_cli(common + dir + "/one.jsonl");
    const CliRun two = run_mpi(common + dir + "/two.jsonl");
    CHECK_MESSAGE(one.code == 2, one.output);  // the broken scenario
    CHECK_MESSAGE(two.code == 2, two.output);
    CHECK(two.output.find("2 MPI ranks") != std::string::npos);
    CHECK(lines_of(dir + "/one.jsonl").size() == 6);
    CHECK(read_text(dir + "/one.jsonl") == read_text(dir + "/two.jsonl"));
  }
}
