#include <unistd.h>

#include <atomic>
#include <csignal>
#include <chrono>
#include <utility>
#include <cstdio>

#include "sim/core/json_reader.h"
#include "apps/cli_args.h"
#include "hardware_models/src/hardware_json.h"
#include "apps/commands.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/batch/ranks.h"
#include "sim/core/atomic_file.h"
#include "sim/core/text.h"
#include "sim/core/units.h"
#include "sim/scenario/scenario.h"
#include "sim/search/search.h"
#if STRATASIM_WITH_SIMGRID
#include "sim/simgrid/simgrid_engine.h"
#endif
#include "sim/search/search_json.h"
#include "strategies/lowering/lower.h"
#include "strategies/strategy/strategy_json.h"

namespace stratasim {
namespace {

Objective parse_objective(const std::string& text) {
  if (auto o = objective_from_name(text)) return *o;
  throw InputError("command line", "--objective", "\"" + text + "\"", std::string("is not one of: ") + kObjectiveNames);
}

// A progress bar with rate and ETA, drawn on stderr only when it is a terminal.
struct Progress {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  void operator()(uint64_t done, uint64_t total) const {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = done / std::max(s, 1e-9);
    const int width = 30, filled = static_cast<int>(width * done / std::max<uint64_t>(total, 1));
    std::fprintf(stderr, "\r[%s%s] %llu/%llu points, %.0f/s, ETA %.1f s ",
                 std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total), rate,
                 (total - done) / std::max(rate, 1e-9));
    if (done == total) std::fputc('\n', stderr);
  }
};

// The overlaps a strategy turns on, e.g. "dp+tp", or "-"; "offl": the optimizer offloaded to the host.
std::string overlaps(const Strategy& s) {
  std::string out;
  for (auto [on, name] : {std::pair{s.overlap_dp, "dp"}, {s.overlap_tp, "tp"}, {s.overlap_ep, "ep"},
                          {s.ep > 1 && s.ep_dispatch == EpDispatch::kDeepEP, "deepep"},
                          {s.ep > 1 && s.ep_dispatch == EpDispatch::kHybridEP, "hybridep"},
                          {s.offload == Offload::kOptimizer, "offl"}}) {
    if (on) out += (out.empty() ? "" : "+") + std::string(name);
  }
  return out.empty() ? "-" : out;
}

std::string candidate_row(int rank, const Candidate& c, const SearchOptions& o,
                          const HardwareModel& hw) {
  const Strategy& s = c.strategy;
  return format_text("  %3d %3d %3d %5d %3d %3d %3d %2d %2d %-11s %-9s %4d %3s %-9s %-4s %-8s %10s %11.4g %6.1f%% %6.1f%% %10s %10s %12.5g  %s x%d\n",
             rank, s.tp, s.pp, c.dp, s.cp, s.ep, s.micro_batch, s.interleave, s.streams,
             std::string(schedule_name(s.schedule)).c_str(),
             recompute_label(s).c_str(), s.zero_stage,
             s.sequence_parallel ? "on" : "off", fusion_label(s.fusion).c_str(),
             std::string(dtype_name(s.dtype)).c_str(), overlaps(s).c_str(),
             format_seconds(c.iteration_s).c_str(), c.tokens_per_s, 100 * c.mfu,
             100 * c.bubble_fraction, format_seconds(c.comm_exposed_s).c_str(),
             format_bytes(c.peak_memory_B).c_str(), objective_value(c, o, hw),
             c.hardware.c_str(), c.devices);
}

std::string table(const std::vector<Candidate>& rows, const SearchOptions& o,
                  const HardwareModel& hw) {
  std::string out = format_text("  %3s %3s %3s %5s %3s %3s %3s %2s %2s %-11s %-9s %4s %3s %-9s %-4s %-8s %10s %11s %7s %7s %10s %10s %12s  %s\n",
                        "#", "tp", "pp", "dp", "cp", "ep", "mb", "v", "st", "schedule", "recompute", "zero", "sp",
                        "fusion", "type", "overlap", "iter", "tokens/s", "MFU", "bubble", "exp.comm", "peak mem",
                        std::string(objective_name(o.objective)).c_str(), "cluster");
  for (size_t i = 0; i < rows.size(); ++i) out += candidate_row(int(i) + 1, rows[i], o, hw);
  return out;
}

// Every knob a search can vary has a column (issue 17: results describe themselves).
std::string candidates_csv(const std::vector<Candidate>& rows, const SearchOptions& o,
                           const HardwareModel& hw) {
  std::string out = "rank,index,cluster,devices,tp,pp,dp,cp,cp_comm,ep,shard_group,micro_batch,interleave,"
                    "schedule,recompute,recompute_modules,recompute_layers,zero_stage,sequence_parallel,fusion,dtype,overlap_dp,"
                    "overlap_tp,overlap_ep,ep_dispatch,streams,offload,stage_layers,iteration_s,tokens_per_s,mfu,bubble_fraction,"
                    "comm_exposed_s,peak_memory_B,objective\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Candidate& c = rows[i];
    const Strategy& s = c.strategy;
    out += format_text("%zu,%llu,%s,%d,%d,%d,%d,%d,%s,%d,%d,%d,%d,%s,%s,%s,%d,%d,%d,%s,%s,%d,%d,%d,%s,%d,%s,%s,%.9g,%.9g,%.6f,%.6f,%.9g,%.9g,%.9g\n",
               i + 1, static_cast<unsigned long long>(c.index), c.hardware.c_str(), c.devices, s.tp,
               s.pp, c.dp, s.cp, std::string(enum_to_name(kCpCommNames, s.cp_comm)).c_str(), s.ep,
               s.shard_group, s.micro_batch, s.interleave,
               std::string(schedule_name(s.schedule)).c_str(),
               std::string(recompute_name(s.recompute)).c_str(),
               s.recompute == Recompute::kSelective ? recompute_modules_text(s.recompute_modules).c_str() : "",
               s.recompute_layers, s.zero_stage, s.sequence_parallel ? 1 : 0, fusion_label(s.fusion).c_str(),
               std::string(dtype_name(s.dtype)).c_str(), s.overlap_dp ? 1 : 0, s.overlap_tp ? 1 : 0,
               s.overlap_ep ? 1 : 0, std::string(enum_to_name(kEpDispatchNames, s.ep_dispatch)).c_str(), s.streams,
               std::string(enum_to_name(kOffloadNames, s.offload)).c_str(), stage_layers_text(s).c_str(), c.iteration_s, c.tokens_per_s, c.mfu, c.bubble_fraction,
               c.comm_exposed_s, c.peak_memory_B, objective_value(c, o, hw));
  }
  return out;
}

std::string space_text(const SearchSpace& space) {
  std::string s;
  for (const AxisValues& a : space.axes) {
    s += (s.empty() ? "" : " x ") + std::string(axis_name(a.axis)) + "(" +
         std::to_string(a.values.size()) + ")";
  }
  return s;
}

std::string base_line(const Scenario& sc, const SearchResult& r) {
  Expected<Plan> plan = lower(sc.model, sc.strategy, sc.hardware);
  if (!plan) return "scenario's own strategy: infeasible (" + plan.error().detail + ")\n";
  const Prediction p = predict_analytical(*plan);
  std::string out = format_text("scenario's own strategy (tp=%d pp=%d): %.4g tokens/s, %s%s\n",
                        sc.strategy.tp, sc.strategy.pp, p.tokens_per_s,
                        format_seconds(p.iteration_s).c_str(), p.fits ? "" : ", DOES NOT FIT");
  if (!r.top.empty()) {
    out += format_text("best found: %.4g tokens/s, %.3fx the scenario's strategy", r.top[0].tokens_per_s,
               r.top[0].tokens_per_s / p.tokens_per_s);
    const int devices = std::max(1, sc.hardware.num_devices), best_devices = std::max(1, r.top[0].devices);
    if (best_devices != devices) {  // a devices or cluster axis: per device too
      out += format_text(" (per device %.4g vs %.4g tokens/s: %.3fx, on %d devices instead of %d)",
                         r.top[0].tokens_per_s / best_devices, p.tokens_per_s / devices,
                         (r.top[0].tokens_per_s / best_devices) / (p.tokens_per_s / devices), best_devices, devices);
    }
    out += "\n";
  }
  return out;
}

// --refine simgrid: the top candidates re-simulated with the SimGrid engine (network
// contention, real schedules) and re-ranked by the simulated throughput.
struct Refined {
  const Candidate* candidate;
  double simulated_tokens_per_s = 0;
  std::string failure;
};

std::vector<Refined> refine_with_simgrid(const Scenario& sc, const std::vector<Candidate>& top) {
  std::vector<Refined> out;
#if STRATASIM_WITH_SIMGRID
  for (const Candidate& c : top) {
    HardwareModel hw = c.hardware == sc.hardware.name ? sc.hardware : catalog_cluster(c.hardware);
    hw.num_devices = c.devices;
    Refined r{&c};
    Expected<Plan> plan = lower(sc.model, c.strategy, hw);
    try {
      if (plan) r.simulated_tokens_per_s = predict_simgrid(*plan, SimgridOptions{.timeline = false}).tokens_per_s;
    } catch (const std::exception& e) {
      r.failure = e.what();  // e.g. a schedule the simulator does not support yet
    }
    out.push_back(std::move(r));
  }
  std::stable_sort(out.begin(), out.end(), [](const Refined& a, const Refined& b) {
    return a.simulated_tokens_per_s > b.simulated_tokens_per_s;
  });
#else
  (void)sc;
  (void)top;
  throw InputError("command line", "--refine", "\"simgrid\"",
                   "needs the SimGrid engine, and this binary was built without it "
                   "(STRATASIM_WITH_SIMGRID=OFF)");
#endif
  return out;
}

std::string refined_table(const std::vector<Refined>& rows) {
  std::string out = format_text("  %3s %3s %3s %5s %3s %2s %-11s %-9s %13s %13s %8s\n", "#", "tp", "pp",
                                "dp", "mb", "v", "schedule", "recompute", "analytical/s",
                                "simgrid/s", "diff");
  for (size_t i = 0; i < rows.size(); ++i) {
    const Candidate& c = *rows[i].candidate;
    const Strategy& s = c.strategy;
    const std::string sim = rows[i].failure.empty()
                                ? format_text("%13.4g %7.1f%%", rows[i].simulated_tokens_per_s,
                                              100 * (rows[i].simulated_tokens_per_s / c.tokens_per_s - 1))
                                : "  not simulated: " + rows[i].failure;
    out += format_text("  %3zu %3d %3d %5d %3d %2d %-11s %-9s %13.4g %s\n", i + 1, s.tp, s.pp, c.dp,
                       s.micro_batch, s.interleave, std::string(schedule_name(s.schedule)).c_str(),
                       recompute_label(s).c_str(), c.tokens_per_s,
                       sim.c_str());
  }
  return out;
}

// Under MPI every rank searches its round-robin chunks of the space with its share of the node's
// cores; rank 0 gathers the shares (counts and candidate indices), merges them exactly as the
// threads of one process are merged, and alone prints and writes files.
SearchResult search_on_ranks(const Ranks& ranks, const Scenario& sc, const SearchOptions& o,
                             std::vector<double>& rank_seconds) {
  if (ranks.size() == 1) return run_search(sc.model, sc.strategy, sc.hardware, sc.search, o);
  const auto start = std::chrono::steady_clock::now();
  SearchResult own = run_search_shard(sc.model, sc.strategy, sc.hardware, sc.search, o,
                                      Shard{ranks.rank(), ranks.size()});
  std::vector<std::string> shards = ranks.gather(json_text(search_shard_json(own)));
  if (!ranks.root()) return own;
  std::vector<SearchResult> parts;
  parts.push_back(std::move(own));
  for (size_t k = 1; k < shards.size(); ++k) {
    parts.push_back(search_shard_from_json(parse_json_text(shards[k], "rank " + std::to_string(k)),
                                           sc.model, sc.strategy, sc.hardware, sc.search, o));
  }
  for (const SearchResult& p : parts) rank_seconds.push_back(p.seconds);
  SearchResult r = merge_search_results(std::move(parts), o.top_k);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// Ctrl-C (SIGINT) or SIGTERM during a search: stop at the next point and report what was found,
// marked partial, instead of dying with nothing.
std::atomic<bool> g_interrupted{false};
extern "C" void on_interrupt(int) { g_interrupted.store(true); }

int search_command(const Ranks& ranks, int argc, char** argv) {
  const CliArgs args = parse_cli(argc, argv, 2, "search");
  if (args.positionals.size() != 1) {
    throw InputError("command line", "search", std::to_string(args.positionals.size()) + " files",
                     "takes exactly one SCENARIO.json");
  }
  const Scenario sc = load_scenario(args.positionals[0], args.sets);
  if (sc.search.axes.empty()) throw nothing_to_search(sc);
  if (sc.search_derived && ranks.root()) {
    std::printf("no \"search\" block in %s: searching the space derived from the model and the "
                "cluster: %s\n",
                sc.file.c_str(), space_text(sc.search).c_str());
  }
  SearchOptions o;
  o.objective = parse_objective(args.option("objective", "throughput"));
  o.top_k = static_cast<int>(integer_option(args, "top", 10, 1, 1000000));
  o.threads = static_cast<int>(integer_option(args, "threads", 0, 0, 4096));
  o.train_tokens = number_option(args, "train-tokens", Dimension::kCount, 0);
  o.price_per_device_hour = number_option(args, "price", Dimension::kCount, 0);
  if (const auto missing = missing_search_input(sc.search, o, sc.hardware)) {
    switch (*missing) {
      case MissingSearchInput::kAxes: throw nothing_to_search(sc);
      case MissingSearchInput::kPrice:
        throw InputError("command line", "--objective", "\"cost_per_token\"",
                         "needs a price per device-hour: --price 2.5 (USD), or "
                         "cluster.device.price_per_hour in the scenario");
      case MissingSearchInput::kTrainTokens:
        throw InputError("command line", "--train-tokens", "(missing)",
                         "is needed for --objective time_to_train");
    }
  }
  const std::string refine = args.option("refine");
  if (!refine.empty() && refine != "simgrid") {
    throw InputError("command line", "--refine", "\"" + refine + "\"", "is not one of: simgrid");
  }
  if (!refine.empty() && ranks.size() > 1) {
    throw InputError("command line", "--refine", "\"" + refine + "\"",
                     "runs one simulation per child process and is not available under mpirun");
  }
  if (o.threads == 0 && ranks.size() > 1) o.threads = ranks.threads_per_rank();
  if (isatty(STDERR_FILENO) && ranks.root()) o.progress = Progress{};
  o.cancel = &g_interrupted;
  struct sigaction stop {};
  stop.sa_handler = on_interrupt;
  sigemptyset(&stop.sa_mask);
  ::sigaction(SIGINT, &stop, nullptr);
  ::sigaction(SIGTERM, &stop, nullptr);
  std::vector<double> rank_seconds;
  const SearchResult r = search_on_ranks(ranks, sc, o, rank_seconds);
  if (!ranks.root()) return 0;
  if (r.cancelled) {
    std::printf("interrupted: %llu of %llu points evaluated; the results below are partial\n",
                static_cast<unsigned long long>(r.points), static_cast<unsigned long long>(sc.search.size()));
  }
  std::printf("search %s [%s]\n  space: %s = %llu points, objective %s\n", sc.name.c_str(),
              sc.file.c_str(), space_text(sc.search).c_str(),
              static_cast<unsigned long long>(sc.search.size()),
              std::string(objective_name(o.objective)).c_str());
  if (ranks.size() > 1) {
    std::printf("  spread over %d MPI ranks, %d thread(s) each; search time per rank:",
                ranks.size(), o.threads);
    for (double s : rank_seconds) std::printf(" %.3f s", s);
    std::printf("\n");
  }
  std::printf("  %llu points in %.3f s (%.0f points/s): %llu feasible and fit; %llu the same "
              "strategy as another point once knobs that do not apply are normalized; pruned:",
              static_cast<unsigned long long>(r.points), r.seconds, r.points / r.seconds,
              static_cast<unsigned long long>(r.feasible),
              static_cast<unsigned long long>(r.duplicates));
  for (const auto& [reason, n] : r.pruned) std::printf(" %s %llu,", reason.c_str(), static_cast<unsigned long long>(n));
  std::printf("\n  %s\n", base_line(sc, r).c_str());
  std::printf("top %zu by %s:\n%s\n", r.top.size(), std::string(objective_name(o.objective)).c_str(),
              table(r.top, o, sc.hardware).c_str());
  std::printf("pareto front (throughput vs memory per device vs devices), %zu points:\n%s",
              r.pareto.size(), table(r.pareto, o, sc.hardware).c_str());
  if (!refine.empty()) {
    std::printf("\ntop %zu re-simulated with SimGrid (contention-aware), re-ranked:\n%s",
                r.top.size(), refined_table(refine_with_simgrid(sc, r.top)).c_str());
  }
  if (!args.option("csv").empty()) write_file_atomically(args.option("csv"), candidates_csv(r.top, o, sc.hardware));
  if (!args.option("json").empty()) {
    Json out{{"scenario", sc.name}, {"partial", r.cancelled}};
    out.update(search_result_json(r, sc.search, o, sc.hardware));
    write_file_atomically(args.option("json"), json_text(out, 1) + "\n");
  }
  return 0;
}

}  // namespace

int cmd_search(int argc, char** argv) {
  const Ranks ranks;
  try {
    return search_command(ranks, argc, argv);
  } catch (const std::exception& e) {
    // With several ranks, ~Ranks aborts them all before main could print this.
    if (ranks.size() > 1) std::fprintf(stderr, "error (rank %d): %s\n", ranks.rank(), e.what());
    throw;
  }
}

}  // namespace stratasim
