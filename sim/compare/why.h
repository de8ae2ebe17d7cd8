// "Why does the best strategy win?": one to four short sentences computed from the differences
// between evaluated strategies (throughput and MFU, fit in memory and which saver saves how many
// GiB, pipeline bubble and its cause, recomputation time, exposed communication by kind).
// Pure: no I/O.
#pragma once

#include <string>
#include <vector>

#include "sim/prediction/prediction.h"
#include "strategies/strategy/strategy.h"

namespace stratasim {

struct EvaluatedStrategy {
  std::string label;  // how the sentences name it
  Strategy strategy;
  int dp = 0;              // the plan's data-parallel degree
  int micro_batches = 0;   // the plan's micro-batches per iteration (m)
  Prediction prediction;
};

// The winner: the highest throughput among those that fit, or among all when none fits;
// ties go to the earlier one. Requires a non-empty list.
size_t best_strategy(const std::vector<EvaluatedStrategy>& s);

// Sentences comparing the winner with the runner-up (the next by the same ranking), e.g.
//   "B wins: 1.25x the throughput of A (1000 vs 800 tokens/s, MFU 40.0% vs 32.0%)."
//   "PP 8 -> 4 halves the pipeline bubble (20.0% -> 10.0% of the pipeline time)."
//   "It fits because selective recomputation saves 18.0 GiB per device (peak 61.0 vs 79.0 GiB
//    of 80.0 GiB)."
// Needs at least two strategies (one alone gets one sentence saying so).
std::vector<std::string> why_best(const std::vector<EvaluatedStrategy>& s);

// Every compared strategy, not only the runner-up: one paragraph per strategy the winner beats,
// in ranking order, each a headline naming both and up to three reasons (four for the
// runner-up, whose paragraph is why_best()). One strategy alone gets why_best()'s sentence.
struct WhyVersus {
  std::string other;  // the label of the strategy the winner is compared with
  std::vector<std::string> sentences;
};
std::vector<WhyVersus> why_versus_each(const std::vector<EvaluatedStrategy>& s);

}  // namespace stratasim
