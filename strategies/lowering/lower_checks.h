// Legality rules of lower(), one function per family of rules.
#pragma once

#include <optional>

#include "sim/core/error.h"
#include "strategies/model/model_spec.h"
#include "strategies/strategy/strategy.h"
#include "hardware_models/src/hardware_model.h"

namespace stratasim {

// Resolves dp (0 = derived) and checks tp * pp * dp == devices.
std::optional<Infeasible> check_degrees(const Strategy& s, const HardwareModel& hw, int* dp);
// dp: the data-parallel degree check_degrees derived.
std::optional<Infeasible> check_model_split(const ModelSpec& m, const Strategy& s, int dp);
// Computes the micro-batches per iteration and checks the schedule's rules.
std::optional<Infeasible> check_batch_and_schedule(const Strategy& s, int dp, int* micro_batches);
std::optional<Infeasible> check_precision(const Strategy& s, const HardwareModel& hw);
// Strategy::autocast_weights: a 16-bit dtype (autocast casts to it) and a transformer model
// (whose layers and head carry the casts; an operator graph's do not).
std::optional<Infeasible> check_autocast(const ModelSpec& m, const Strategy& s);
// Inference (Workload::kInference) runs no backward: no ZeRO, no recomputation, no interleaving.
std::optional<Infeasible> check_workload(const Strategy& s);
std::optional<Infeasible> check_offload(const Strategy& s, const HardwareModel& hw);
// An operator graph's single-threaded tasks need a device that runs them (DeviceSpec::task_flops).
std::optional<Infeasible> check_tasks(const ModelSpec& m, const HardwareModel& hw);
// Tensor-parallel groups must fill whole nodes or divide a node evenly.
std::optional<Infeasible> check_topology(const Strategy& s, const HardwareModel& hw);

// A mixed cluster's device count is its groups' (a devices axis cannot resize it).
std::optional<Infeasible> check_mixed_cluster(const HardwareModel& hw);

}  // namespace stratasim
