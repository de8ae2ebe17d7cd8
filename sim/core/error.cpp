#include "error.h"

#include <cstdio>
#include <cstdlib>

namespace stratasim {

namespace {

// Bytes of the well-formed UTF-8 sequence starting at text[i] (no overlong 2-byte lead,
// continuation bytes 10xxxxxx); 0 when there is none.
size_t utf8_sequence(std::string_view text, size_t i) {
  const unsigned char c = static_cast<unsigned char>(text[i]);
  if (c < 0x80) return 1;
  const size_t n = (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3
                   : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
  bool ok = n > 0 && i + n <= text.size();
  for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
  return ok ? n : 0;
}

}  // namespace

bool valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string printable_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto escape = [&](unsigned char c) {
    static const char* hex = "0123456789abcdef";
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  };
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 && c != '\n' && c != '\t') escape(c); else out += static_cast<char>(c);
      ++i;
      continue;
    }
    const size_t n = utf8_sequence(text, i);
    if (n > 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      escape(c);
      ++i;
    }
  }
  return out;
}

InputError::InputError(std::string file, std::string path, std::string value, std::string rule)
    : std::runtime_error(printable_text(file + ": " + path + ": " + value + " " + rule)),
      file_(std::move(file)),
      path_(std::move(path)),
      value_(std::move(value)),
      rule_(std::move(rule)) {}

InputError::InputError(std::string whole_message)
    : std::runtime_error(printable_text(whole_message)) {}

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
    case InfeasibleReason::kContextParallel: return "context-parallel";
    case InfeasibleReason::kExpertParallel: return "expert-parallel";
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
