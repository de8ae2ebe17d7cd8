#include "validate/case_rules.h"

#include <algorithm>
#include <cctype>

namespace stratasim {

std::string_view validation_rules_text();  // generated from validate/data/rules.json

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return parts;
    start = at + 1;
  }
}

void add_substring(TextCondition& c, const JsonNode& n) {
  if (n.is_object()) {
    n.allow_keys({"any"});
    const JsonNode any = n.at("any");
    if (!any.is_array() || any.size() == 0) any.fail("must be a non-empty array of substrings");
    std::vector<std::string> alternatives;
    for (size_t i = 0; i < any.size(); ++i) alternatives.push_back(lowercase(any.element(i).as_string()));
    c.any_of.push_back(std::move(alternatives));
    return;
  }
  const std::string text = n.as_string();
  if (!text.empty() && text[0] == '!') {
    c.excludes.push_back(lowercase(text.substr(1)));
  } else {
    c.contains.push_back(lowercase(text));
  }
}

std::vector<TextCondition> read_conditions(const JsonNode& n) {
  n.require_object();
  std::vector<TextCondition> out;
  for (auto it = n.raw().begin(); it != n.raw().end(); ++it) {
    TextCondition c;
    c.fields = split(it.key(), '|');
    const JsonNode v = n.at(it.key());
    if (v.is_array()) {
      for (size_t i = 0; i < v.size(); ++i) add_substring(c, v.element(i));
    } else {
      add_substring(c, v);
    }
    out.push_back(std::move(c));
  }
  return out;
}

// "when": one map of conditions, or an array of maps of which any may hold.
std::vector<std::vector<TextCondition>> read_when(const JsonNode& n) {
  if (!n.is_array()) return {read_conditions(n)};
  if (n.size() == 0) n.fail("must be a map of conditions or a non-empty array of them");
  std::vector<std::vector<TextCondition>> out;
  for (size_t i = 0; i < n.size(); ++i) out.push_back(read_conditions(n.element(i)));
  return out;
}

// `apply_key` names the fragment a rule of this list contributes ("cluster", "model", ...).
std::vector<CaseRule> read_rule_list(const JsonNode& list, const char* apply_key, bool stack) {
  std::vector<CaseRule> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const JsonNode r = list.element(i);
    if (stack) {
      r.allow_keys({"name", "when", apply_key, "free", "selective_recompute", "pipeline", "why"});
    } else {
      r.allow_keys({"when", apply_key, "why"});
    }
    CaseRule rule;
    rule.when = read_when(r.at("when"));
    if (auto a = r.find(apply_key)) {
      a->require_object();
      rule.apply = a->raw();
    }
    if (stack) {
      rule.name = r.string("name");
      if (auto f = r.find("free")) {
        f->require_object();
        rule.free = f->raw();
      }
      rule.selective_recompute = r.string_or("selective_recompute", "");
      if (auto p = r.find("pipeline")) {
        p->allow_keys({"micro_batches", "interleave"});
        if (auto m = p->find("micro_batches")) {
          if (m->as_string() != "pp") m->fail("must be \"pp\" (as many micro-batches as pipeline ranks)");
          rule.pipeline_micro_batches_pp = true;
        }
        if (auto v = p->find("interleave")) rule.pipeline_interleave = static_cast<int>(v->as_integer(2, 64));
      }
    }
    rule.why = r.string_or("why", "");
    out.push_back(std::move(rule));
  }
  return out;
}

double fraction(const JsonNode& n) {
  const double v = n.as_number();
  if (!(v > 0 && v <= 1)) n.fail("must be a fraction in (0, 1]");
  return v;
}

Tolerance read_tolerance(const JsonNode& t) {
  t.allow_keys({"mape", "max"});
  Tolerance tol;
  tol.mape = fraction(t.at("mape"));
  if (auto m = t.find("max")) tol.max_error = fraction(*m);
  return tol;
}

std::vector<GroupRule> read_groups(const JsonNode& list) {
  std::vector<GroupRule> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const JsonNode g = list.element(i);
    g.allow_keys({"group", "prefix", "flop_convention", "speedup_baseline", "measured", "tolerance", "why",
                  "memory_tolerance", "memory_why"});
    GroupRule rule;
    rule.group = g.string("group");
    rule.prefix = g.string("prefix");
    rule.flop_convention = g.string_or("flop_convention", "");
    rule.speedup_baseline = g.string_or("speedup_baseline", "");
    rule.measured = g.bool_or("measured", true);
    if (auto t = g.find("tolerance")) rule.tolerance = read_tolerance(*t);
    rule.why = g.string_or("why", "");
    if (auto t = g.find("memory_tolerance")) rule.memory_tolerance = read_tolerance(*t);
    rule.memory_why = g.string_or("memory_why", "");
    if ((rule.tolerance && rule.why.empty()) || (rule.memory_tolerance && rule.memory_why.empty())) {
      g.fail("states a tolerance without its reason (\"why\" / \"memory_why\")");
    }
    out.push_back(std::move(rule));
  }
  return out;
}

std::vector<CaseRule> optional_list(const JsonNode& n, const char* key, const char* apply,
                                    bool stack = false) {
  auto list = n.find(key);
  if (!list) return {};
  if (!list->is_array()) list->fail("must be an array of rules");
  return read_rule_list(*list, apply, stack);
}

bool condition_holds(const TextCondition& cond, const Json& c) {
  std::string text;
  for (const std::string& f : cond.fields) text += case_field_text(c, f) + "\n";
  text = lowercase(text);
  for (const std::string& s : cond.contains) {
    if (text.find(s) == std::string::npos) return false;
  }
  for (const std::string& s : cond.excludes) {
    if (text.find(s) != std::string::npos) return false;
  }
  for (const std::vector<std::string>& alternatives : cond.any_of) {
    const bool one = std::any_of(alternatives.begin(), alternatives.end(),
                                 [&](const std::string& s) { return text.find(s) != std::string::npos; });
    if (!one) return false;
  }
  return true;
}

}  // namespace

CaseRules read_case_rules(const JsonNode& node) {
  node.allow_keys(
      {"description", "hardware", "model", "precision", "stacks", "modifiers", "groups"});
  CaseRules r;
  r.hardware = optional_list(node, "hardware", "cluster");
  r.model = optional_list(node, "model", "model");
  r.precision = optional_list(node, "precision", "strategy");
  r.stacks = optional_list(node, "stacks", "strategy", true);
  r.modifiers = optional_list(node, "modifiers", "strategy");
  if (auto g = node.find("groups")) {
    if (!g->is_array()) g->fail("must be an array of groups");
    r.groups = read_groups(*g);
  }
  return r;
}

void merge_case_rules(CaseRules& base, const CaseRules& more) {
  // A file's own rules come first, so they win where the first match wins.
  auto prepend = [](std::vector<CaseRule>& to, const std::vector<CaseRule>& from) {
    to.insert(to.begin(), from.begin(), from.end());
  };
  prepend(base.hardware, more.hardware);
  prepend(base.precision, more.precision);
  prepend(base.stacks, more.stacks);
  base.model.insert(base.model.end(), more.model.begin(), more.model.end());
  base.modifiers.insert(base.modifiers.end(), more.modifiers.begin(), more.modifiers.end());
  base.groups.insert(base.groups.end(), more.groups.begin(), more.groups.end());
}

CaseRules builtin_case_rules() {
  const std::string name = "validate/data/rules.json";
  const Json doc = parse_json_text(validation_rules_text(), name);
  return read_case_rules(JsonNode(doc, name, ""));
}

std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string case_field_text(const Json& c, const std::string& path) {
  const Json* node = &c;
  for (const std::string& part : split(path, '.')) {
    if (!node->is_object() || !node->contains(part)) return "";
    node = &(*node)[part];
  }
  if (node->is_null()) return "";
  return node->is_string() ? node->get<std::string>() : json_text(*node);
}

bool rule_matches(const CaseRule& rule, const Json& c) {
  return std::any_of(rule.when.begin(), rule.when.end(), [&](const std::vector<TextCondition>& all) {
    return std::all_of(all.begin(), all.end(), [&](const TextCondition& t) { return condition_holds(t, c); });
  });
}

const CaseRule* first_match(const std::vector<CaseRule>& rules, const Json& c) {
  for (const CaseRule& r : rules) {
    if (rule_matches(r, c)) return &r;
  }
  return nullptr;
}

const GroupRule* group_of(const CaseRules& rules, const std::string& id) {
  const GroupRule* best = nullptr;
  for (const GroupRule& g : rules.groups) {
    if (id.rfind(g.prefix, 0) == 0 && (!best || g.prefix.size() > best->prefix.size())) best = &g;
  }
  return best;
}

}  // namespace stratasim
