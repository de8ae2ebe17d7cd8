// stratasim batch DIR|LIST.txt [--search] [--out results.jsonl] [--resume]: every scenario
// evaluated (or searched), each result appended to the results file as one JSON line the
// moment it is done. Under MPI rank k takes pending scenarios k, k+N, ...; rank 0 writes all
// lines in scenario order, so the file is byte-identical to a one-process run.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "sim/core/json_reader.h"
#include "apps/cli_args.h"
#include "apps/commands.h"
#include "sim/batch/batch_file.h"
#include "sim/batch/batch_run.h"
#include "sim/batch/ranks.h"
#include "sim/core/atomic_file.h"
#include "sim/core/text.h"
#include "sim/core/units.h"

namespace stratasim {
namespace {

struct BatchPlan {
  std::vector<std::string> pending;  // scenario files still to run, in batch order
  int skipped = 0;                   // already in the results file (--resume)
  int torn = 0, retried = 0;
  int stale = 0;  // lines of scenarios edited since (dropped, run again)
};

// Rank 0 reads the inputs and, with --resume, the results file (rewritten without a torn last
// line or failed scenarios) and decides what is left to run.
BatchPlan plan_batch(const std::string& input, const std::string& out, bool resume,
                     BatchMode mode) {
  BatchPlan plan;
  std::set<ResultKey> done;
  // The results file must not be one of the inputs: starting it empty would destroy a scenario.
  const std::vector<std::string> inputs = batch_inputs(input);
  std::error_code ec;
  const std::filesystem::path out_path = std::filesystem::weakly_canonical(out, ec);
  for (const std::string& file : inputs) {
    std::error_code ec2;
    if (!ec && std::filesystem::weakly_canonical(file, ec2) == out_path && !ec2) {
      throw InputError("command line", "--out", out,
                       "is one of the scenarios the batch reads (" + file +
                           "); write the results elsewhere");
    }
  }
  if (resume) {
    ExistingResults existing = read_results(out);
    plan.torn = existing.torn;
    plan.retried = existing.retried;
    // A scenario edited since its line was written runs again; its old line goes.
    std::map<std::string, std::string> current;
    for (const std::string& file : inputs) current[batch_key(file)] = content_hash_of_file(file);
    std::vector<std::string> kept;
    done.clear();
    for (const std::string& line : existing.kept) {
      const Json j = Json::parse(line);
      const std::string file = j.at("file").get<std::string>(), hash = j.at("hash").get<std::string>();
      const auto it = current.find(file);
      if (it != current.end() && it->second != hash) {
        ++plan.stale;
        continue;
      }
      kept.push_back(line);
      done.insert({file, hash, j.at("mode").get<std::string>()});
    }
    if (existing.torn > 0 || existing.retried > 0 || plan.stale > 0) {
      std::string text;
      for (const std::string& line : kept) text += line + "\n";
      write_file_atomically(out, text);
    }
  } else {
    ResultsFile empty(out, true);  // start a new, empty results file
  }
  for (const std::string& file : inputs) {
    if (done.insert({batch_key(file), content_hash_of_file(file), std::string(batch_mode_name(mode))})
            .second) {
      plan.pending.push_back(file);
    } else {
      ++plan.skipped;
    }
  }
  return plan;
}

// The plan travels to the other MPI ranks as JSON. Paths are bytes, JSON strings UTF-8: each
// path goes as the list of its bytes, so any file name arrives intact.
Json plan_json(const BatchPlan& p) {
  Json pending = Json::array();
  for (const std::string& file : p.pending) pending.push_back(std::vector<uint8_t>(file.begin(), file.end()));
  return Json{{"pending", pending}, {"skipped", p.skipped}, {"torn", p.torn},
              {"retried", p.retried}, {"stale", p.stale}};
}

BatchPlan plan_from_json(const Json& j) {
  std::vector<std::string> pending;
  for (const Json& bytes : j.at("pending")) {
    const auto b = bytes.get<std::vector<uint8_t>>();
    pending.emplace_back(b.begin(), b.end());
  }
  return BatchPlan{pending, j.at("skipped").get<int>(), j.at("torn").get<int>(),
                   j.at("retried").get<int>(), j.at("stale").get<int>()};
}

// A test hook: STRATASIM_BATCH_DELAY_MS=N waits N ms after each scenario, so a test can kill
// the batch between two results.
void test_delay() {
  static const char* ms = std::getenv("STRATASIM_BATCH_DELAY_MS");
  if (ms != nullptr) std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(ms)));
}

std::string summary_row(const Json& line) {
  const std::string file = std::filesystem::path(line["file"].get<std::string>()).filename();
  if (line["status"] != "ok") {
    return format_text("  %-32s %-7s %s\n", file.c_str(), "error",
                       line["error"].get<std::string>().c_str());
  }
  const std::string name = line["scenario"].get<std::string>();
  if (line.contains("search")) {
    const Json& s = line["search"];
    std::string best = "no feasible point";
    if (!s["top"].empty()) {
      const Json& c = s["top"][0];
      best = format_text("best %.4g tokens/s (tp=%d pp=%d dp=%d)", c["tokens_per_s"].get<double>(),
                         c["strategy"]["tp"].get<int>(), c["strategy"]["pp"].get<int>(),
                         c["dp"].get<int>());
    }
    return format_text("  %-32s %-7s %-34s %llu points, %llu feasible, %s\n", file.c_str(), "ok",
                       name.c_str(), s["points"].get<unsigned long long>(),
                       s["feasible"].get<unsigned long long>(), best.c_str());
  }
  int feasible = 0;
  std::string best = "none fits";
  double best_tps = 0;
  for (const Json& v : line["variants"]) {
    if (!v["feasible"].get<bool>()) continue;
    ++feasible;
    const Json& p = v["prediction"];
    if (p["fits"].get<bool>() && p["tokens_per_s"].get<double>() > best_tps) {
      best_tps = p["tokens_per_s"].get<double>();
      best = format_text("fastest that fits: %s, %.4g tokens/s",
                         v["variant"].get<std::string>().c_str(), best_tps);
    }
  }
  return format_text("  %-32s %-7s %-34s %d/%zu variants feasible, %s\n", file.c_str(), "ok",
                     name.c_str(), feasible, line["variants"].size(), best.c_str());
}

std::string totals_line(const BatchPlan& plan, int failures, double seconds) {
  std::string line =
      format_text("%zu scenario(s) run in %.2f s, %d failed; %d already done (skipped)",
                  plan.pending.size(), seconds, failures, plan.skipped);
  if (plan.torn > 0) line += format_text(", %d torn line(s) dropped", plan.torn);
  if (plan.retried > 0) line += format_text(", %d earlier failure(s) retried", plan.retried);
  if (plan.stale > 0) line += format_text(", %d edited scenario(s) run again", plan.stale);
  return line;
}

BatchOptions batch_options(const CliArgs& args, const Ranks& ranks) {
  BatchOptions o;
  o.mode = args.has("search") ? BatchMode::kSearch : BatchMode::kEvaluate;
  o.search.top_k = static_cast<int>(integer_option(args, "top", 10, 1, 1000000));
  o.search.threads =
      static_cast<int>(integer_option(args, "threads", ranks.threads_per_rank(), 0, 4096));
  return o;
}

int batch_command(const Ranks& ranks, int argc, char** argv) {
  const CliArgs args = parse_cli(argc, argv, 2, "batch");
  if (args.positionals.size() != 1) {
    throw InputError("command line", "batch", std::to_string(args.positionals.size()) + " inputs",
                     "takes exactly one DIR or LIST.txt");
  }
  const std::string out = args.option("out", "results.jsonl");
  const BatchOptions options = batch_options(args, ranks);
  const auto start = std::chrono::steady_clock::now();
  std::string plan_text;
  if (ranks.root()) {
    plan_text =
        json_text(plan_json(plan_batch(args.positionals[0], out, args.has("resume"), options.mode)));
  }
  const BatchPlan plan = plan_from_json(parse_json_text(ranks.broadcast(plan_text), "batch plan"));

  std::unique_ptr<ResultsFile> file;
  if (ranks.root()) {
    file = std::make_unique<ResultsFile>(out, false);
    std::printf("batch %s -> %s (%s%s)\n", args.positionals[0].c_str(), out.c_str(),
                std::string(batch_mode_name(options.mode)).c_str(),
                ranks.size() > 1 ? format_text(", %d MPI ranks", ranks.size()).c_str() : "");
  }
  int failures = 0;
  for (size_t i = 0; i < plan.pending.size(); ++i) {
    const int owner = static_cast<int>(i % ranks.size());
    std::string line;
    if (owner == ranks.rank()) {
      line = json_text(run_batch_scenario(plan.pending[i], options));
      test_delay();
      if (!ranks.root()) ranks.send(0, line);
    } else if (ranks.root()) {
      line = ranks.receive(owner);
    }
    if (!ranks.root()) continue;
    file->append(line);
    const Json j = parse_json_text(line, out);
    failures += j["status"] != "ok";
    std::fputs(summary_row(j).c_str(), stdout);  // the table grows as results come in
    std::fflush(stdout);
  }
  if (!ranks.root()) return 0;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s\n", totals_line(plan, failures, s).c_str());
  return failures > 0 ? 2 : 0;
}

}  // namespace

int cmd_batch(int argc, char** argv) {
  const Ranks ranks;
  try {
    return batch_command(ranks, argc, argv);
  } catch (const std::exception& e) {
    // With several ranks, ~Ranks aborts them all before main could print this.
    if (ranks.size() > 1) std::fprintf(stderr, "error (rank %d): %s\n", ranks.rank(), e.what());
    throw;
  }
}

}  // namespace stratasim
