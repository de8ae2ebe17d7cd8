// The rules that turn a published validation case (validate/data/cases/*.json) into a
// scenario: which cluster a GPU name means, which model fields an architecture text implies,
// which software stack a framework names (its strategy defaults and the knobs its users tune),
// the precision, and the groups with their tolerances. All of it is data
// (validate/data/rules.json); this file only reads it and matches texts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/core/json_reader.h"

namespace stratasim {

// "when": {"framework|parallel.notes": ["compile", "!compile=False"]}: for each key, the text
// of the named case fields (joined) must contain every positive substring and none of the
// negative ones, ignoring case. An empty substring always matches. {"any": ["NeMo",
// "Megatron-Core"]} in place of a substring holds when the text contains at least one of them.
struct TextCondition {
  std::vector<std::string> fields;  // dot paths into the case
  std::vector<std::string> contains;
  std::vector<std::string> excludes;
  std::vector<std::vector<std::string>> any_of;  // each: at least one must occur
};

struct CaseRule {
  // Every condition of one map must hold; "when": [{...}, {...}] matches when any map does.
  std::vector<std::vector<TextCondition>> when;
  std::string name;  // stacks
  Json apply;        // the fragment a match contributes (cluster / model / strategy object)
  Json free;         // stacks: search-space axes for knobs the case leaves null
  // stacks: what a plain "selective" recomputation means there ("op_selective" for TorchTitan,
  // whose selective mode defaults to its per-op policy); empty: Megatron's attention-only.
  std::string selective_recompute;
  // stacks: what the stack's pipeline does with knobs a case leaves null, instead of searching
  // them: micro-batches per iteration = pp (TorchTitan's default n_microbatches) and the
  // virtual stages per rank of an interleaved schedule named without its depth; 0 = search.
  bool pipeline_micro_batches_pp = false;
  int pipeline_interleave = 0;
  std::string why;
};

struct Tolerance {
  double mape = 0;       // group mean absolute error at most this
  double max_error = 0;  // and every case's absolute error at most this (0 = no bound)
};

struct GroupRule {
  std::string group;
  std::string prefix;            // a case belongs to the group of the longest matching id prefix
  std::string flop_convention;   // for cases measured in FLOP/s (flop_conventions.h)
  // For cases measured as a speedup: the id of the case whose throughput they divide by (the
  // source's baseline). That case is predicted as the denominator, not compared itself.
  std::string speedup_baseline;
  bool measured = true;          // false: not a measurement (kept out of the gate, listed)
  std::optional<Tolerance> tolerance;  // none: reported, not gated
  std::string why;
  std::optional<Tolerance> memory_tolerance;  // for measured memory ("<group>:memory")
  std::string memory_why;
};

struct CaseRules {
  std::vector<CaseRule> hardware, model, precision, stacks, modifiers;
  std::vector<GroupRule> groups;
};

// Reads a rules object; errors name the file and the JSON path.
CaseRules read_case_rules(const JsonNode& node);
// Adds `more`'s rules after `base`'s (a case file may bring its own groups and rules).
void merge_case_rules(CaseRules& base, const CaseRules& more);
CaseRules builtin_case_rules();  // validate/data/rules.json, compiled into the binary

// The text of a dotted path in a case ("hardware.gpu"): strings as they are, numbers and
// booleans as JSON, null/missing as "".
std::string case_field_text(const Json& c, const std::string& path);
std::string lowercase(std::string text);  // ASCII, for the case-insensitive text rules
bool rule_matches(const CaseRule& rule, const Json& c);
const CaseRule* first_match(const std::vector<CaseRule>& rules, const Json& c);
const GroupRule* group_of(const CaseRules& rules, const std::string& id);

}  // namespace stratasim
