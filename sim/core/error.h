// The three error channels of stratasim (see ARCHITECTURE.md):
//   InputError  - thrown for bad files and values; names file, JSON path, value and rule.
//   Infeasible  - returned (never thrown) when a strategy cannot run; normal during search.
//   SS_ASSERT   - invariants that no input can break.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace stratasim {

// `text` with control characters and bytes that are not well-formed UTF-8 written as \xNN, so
// that no message echoes raw bytes of a hostile input to a terminal.
std::string printable_text(std::string_view text);
// Whether text is well-formed UTF-8 (what JSON strings must hold).
bool valid_utf8(std::string_view text);

// Messages are printable_text().
class InputError : public std::runtime_error {
 public:
  // Message: "<file>: <path>: <value> <rule>", e.g.
  // "scenarios/gpt3.json: strategy.pp: 7 does not divide layers=96".
  InputError(std::string file, std::string path, std::string value, std::string rule);
  // For errors that are not about one value (malformed JSON: "file:3:14: parse error ...").
  explicit InputError(std::string whole_message);

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  const std::string& value() const { return value_; }
  const std::string& rule() const { return rule_; }

 private:
  std::string file_, path_, value_, rule_;
};

enum class InfeasibleReason {
  kDeviceCount,        // tp * pp * dp != devices
  kTensorParallel,     // tp does not divide heads / kv heads / ffn / vocab
  kPipelineParallel,   // pp does not divide layers (uneven stages not asked for)
  kBatch,              // global batch not divisible by dp * micro-batch
  kSchedule,           // schedule-specific rule (interleaving needs m % pp == 0, ...)
  kSequenceParallel,   // sp needs tp > 1 and seq % tp == 0
  kPrecision,          // dtype not supported by the device
  kTopology,           // tp group larger than a node, ...
  kOutOfMemory,        // does not fit in device memory
  kModel,              // strategy does not apply to this kind of model
  kContextParallel,    // cp needs a transformer, flash attention and seq % (2 cp) == 0
  kExpertParallel,     // ep needs a mixture-of-experts model, ep | experts, ep | tp*cp*dp
};
std::string_view reason_name(InfeasibleReason r);

struct Infeasible {
  InfeasibleReason reason;
  std::string detail;  // "tp=3 does not divide heads=32"
  std::string field;   // the strategy key most to blame ("tp"), empty when none is
  bool operator==(const Infeasible&) const = default;
};

// A minimal std::expected (C++23) stand-in: a value or an Infeasible.
template <class T>
class Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}                 // NOLINT: implicit by design
  Expected(Infeasible error) : v_(std::move(error)) {}        // NOLINT
  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Infeasible& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Infeasible> v_;
};

[[noreturn]] void assertion_failed(const char* expr, const char* message, const char* file,
                                   int line);

}  // namespace stratasim

#define SS_ASSERT(cond, message) \
  ((cond) ? (void)0 : ::stratasim::assertion_failed(#cond, message, __FILE__, __LINE__))
