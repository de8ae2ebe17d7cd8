// Reading JSON with errors that name the file, the JSON path, the value and the rule.
// Every object reader first declares the keys it accepts; any other key is an error (no
// silent defaults for misspelled keys).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <iterator>
#include <type_traits>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "error.h"
#include "units.h"

namespace stratasim {

using Json = nlohmann::ordered_json;  // keeps the order of keys as written

// Parses a whole file. Malformed JSON throws InputError "file:line:column: malformed JSON: ...".
Json load_json_file(const std::string& path);
// Deepest nesting of arrays and objects parse_json_text accepts.
inline constexpr int kMaxJsonDepth = 256;
Json parse_json_text(std::string_view text, const std::string& source_name);
// The one way JSON becomes text: strings that are not UTF-8 (file names, --set values that
// reached a document) are written with U+FFFD in place of their bad bytes instead of throwing.
std::string json_text(const Json& j, int indent = -1);

template <class E>
struct EnumName {
  std::string_view name;
  E value;
};

class JsonNode {
 public:
  JsonNode(const Json& j, std::string file, std::string path);

  const Json& raw() const { return *j_; }
  const std::string& file() const { return *file_; }
  const std::string& path() const { return path_; }
  bool is_object() const { return j_->is_object(); }
  bool is_string() const { return j_->is_string(); }
  bool is_array() const { return j_->is_array(); }

  // Unknown-key check: every key of this object must be in `allowed`.
  void allow_keys(std::initializer_list<std::string_view> allowed) const;
  void require_object() const;

  bool has(std::string_view key) const;
  JsonNode at(std::string_view key) const;                 // required child
  std::optional<JsonNode> find(std::string_view key) const;  // optional child
  JsonNode element(size_t index) const;
  size_t size() const;

  // Scalars of this node.
  double as_number() const;
  int64_t as_integer(int64_t min, int64_t max) const;
  std::string as_string() const;
  bool as_bool() const;
  double as_quantity(Dimension dim) const;  // "80GiB" -> bytes
  // `names` is any range of EnumName<E> (e.g. a constexpr std::array).
  template <class Names>
  auto as_enum(const Names& names) const -> decltype(std::begin(names)->value);

  // Required children.
  double number(std::string_view key) const { return at(key).as_number(); }
  int64_t integer(std::string_view key, int64_t min = 0, int64_t max = INT32_MAX) const {
    return at(key).as_integer(min, max);
  }
  std::string string(std::string_view key) const { return at(key).as_string(); }
  double quantity(std::string_view key, Dimension dim) const { return at(key).as_quantity(dim); }

  // Optional children with an explicit default.
  double number_or(std::string_view key, double fallback) const;
  int64_t integer_or(std::string_view key, int64_t fallback, int64_t min = 0,
                     int64_t max = INT32_MAX) const;
  bool bool_or(std::string_view key, bool fallback) const;
  std::string string_or(std::string_view key, std::string fallback) const;
  double quantity_or(std::string_view key, Dimension dim, double fallback) const;
  template <class Names, class E>
  E enum_or(std::string_view key, const Names& names, E fallback) const {
    auto child = find(key);
    return child ? child->as_enum(names) : fallback;
  }

  // Throws InputError naming this node: "<file>: <path>: <value> <rule>".
  [[noreturn]] void fail(const std::string& rule) const;
  std::string value_text() const;  // the node's JSON, shortened for messages

 private:
  [[noreturn]] void fail_enum(std::string allowed) const;
  const Json* j_;
  std::shared_ptr<const std::string> file_;
  std::string path_;
};

template <class Names>
auto JsonNode::as_enum(const Names& names) const -> decltype(std::begin(names)->value) {
  if (is_string()) {
    const std::string& s = j_->template get_ref<const std::string&>();
    for (const auto& n : names) {
      if (n.name == s) return n.value;
    }
  }
  std::string allowed;
  for (const auto& n : names) allowed += (allowed.empty() ? "" : ", ") + std::string(n.name);
  fail_enum(allowed);
}

template <class Names, class E>
std::string_view enum_to_name(const Names& names, E value) {
  for (const auto& n : names) {
    if (n.value == value) return n.name;
  }
  return "?";
}

template <class Names>
auto enum_from_name(const Names& names, std::string_view s)
    -> std::optional<std::decay_t<decltype(std::begin(names)->value)>> {
  for (const auto& n : names) {
    if (n.name == s) return n.value;
  }
  return std::nullopt;
}

// Edit distance suggestion for unknown keys: "did you mean 'hidden'?".
std::string closest_match(std::string_view word, std::initializer_list<std::string_view> options);

}  // namespace stratasim
