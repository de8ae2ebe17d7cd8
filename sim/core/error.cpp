#include "error.h"

#include <cstdio>
#include <cstdlib>

namespace stratasim {

InputError::InputError(std::string file, std::string path, std::string value, std::string rule)
    : std::runtime_error(file + ": " + path + ": " + value + " " + rule),
      file_(std::move(file)),
      path_(std::move(path)),
      value_(std::move(value)),
      rule_(std::move(rule)) {}

InputError::InputError(std::string whole_message) : std::runtime_error(std::move(whole_message)) {}

std::string_view reason_name(InfeasibleReason r) {
  switch (r) {
    case InfeasibleReason::kDeviceCount: return "device-count";
    case InfeasibleReason::kTensorParallel: return "tensor-parallel";
    case InfeasibleReason::kPipelineParallel: return "pipeline-parallel";
    case InfeasibleReason::kBatch: return "batch";
    case InfeasibleReason::kSchedule: return "schedule";
    case InfeasibleReason::kSequenceParallel: return "sequence-parallel";
    case InfeasibleReason::kPrecision: return "precision";
    case InfeasibleReason::kTopology: return "topology";
    case InfeasibleReason::kOutOfMemory: return "out-of-memory";
    case InfeasibleReason::kModel: return "model";
  }
  return "unknown";
}

// An invariant broke: this is a bug in stratasim, not bad input. Abort with the location so
// the bug is reported rather than a wrong number being printed.
void assertion_failed(const char* expr, const char* message, const char* file, int line) {
  std::fprintf(stderr, "stratasim internal error: %s (%s) at %s:%d\n", message, expr, file, line);
  std::abort();
}

}  // namespace stratasim
