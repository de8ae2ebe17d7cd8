#include "json_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_set>
#include <vector>

namespace stratasim {
namespace {

std::pair<size_t, size_t> line_and_column(std::string_view text, size_t byte) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

std::string join_path(const std::string& base, std::string_view key) {
  return base.empty() ? std::string(key) : base + "." + std::string(key);
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

Json parse_json_text(std::string_view text, const std::string& source_name) {
  // JSON objects with a repeated key would silently keep the last value: reject them (a hash
  // set per open object, so 40,000 keys stay linear). Nesting is bounded, so that no reader
  // recurses without end; numbers must be finite (1e999 overflows to inf).
  std::vector<std::unordered_set<std::string>> open_objects;
  auto check = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth > kMaxJsonDepth) {
      throw InputError(source_name + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                       " levels (at most " + std::to_string(kMaxJsonDepth) + " are read)");
    }
    if (event == Json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == Json::parse_event_t::object_end && !open_objects.empty()) open_objects.pop_back();
    if (event == Json::parse_event_t::key && !open_objects.empty()) {
      const std::string key = parsed.get<std::string>();
      if (!open_objects.back().insert(key).second) {
        throw InputError(source_name + ": key \"" + key +
                         "\" appears twice in one object (JSON keys must be unique)");
      }
    }
    if (event == Json::parse_event_t::value && parsed.is_number_float() &&
        !std::isfinite(parsed.get<double>())) {
      throw InputError(source_name + ": a number overflows a double (JSON numbers here must be "
                                     "finite, at most about 1.8e308)");
    }
    return true;
  };
  // The parser would stop at a NUL and ignore the bytes after it.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    auto [line, column] = line_and_column(text, nul);
    throw InputError(source_name + ":" + std::to_string(line) + ":" + std::to_string(column) +
                     ": malformed JSON: a NUL byte (JSON text must not contain one)");
  }
  try {
    return Json::parse(text, check);
  } catch (const Json::parse_error& e) {
    auto [line, column] = line_and_column(text, e.byte == 0 ? 0 : e.byte - 1);
    std::string what = e.what();
    // nlohmann's message starts with "[json.exception.parse_error.101] parse error at ...";
    // keep the part after the last ": " which says what was unexpected.
    auto pos = what.find("syntax error");
    std::string detail = pos == std::string::npos ? what : what.substr(pos);
    throw InputError(source_name + ":" + std::to_string(line) + ":" + std::to_string(column) +
                     ": malformed JSON: " + detail);
  } catch (const Json::out_of_range& e) {  // "number overflow parsing '1e999'"
    std::string what = e.what();
    const auto pos = what.find("] ");
    throw InputError(source_name + ": malformed JSON: " +
                     (pos == std::string::npos ? what : what.substr(pos + 2)) +
                     " (JSON numbers here must be finite, at most about 1.8e308)");
  }
}

Json load_json_file(const std::string& path) {
  // Only regular files of sane size: a directory, a FIFO or /dev/zero would never parse (or
  // never end), and each gets its own message.
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) {
    throw InputError(path + ": cannot open file for reading: " +
                     (ec ? ec.message() : std::string("it does not exist")));
  }
  if (std::filesystem::is_directory(st)) throw InputError(path + ": is a directory, not a JSON file");
  if (!std::filesystem::is_regular_file(st)) {
    throw InputError(path + ": is not a regular file (a device, FIFO or socket); give a JSON file");
  }
  constexpr std::uintmax_t kMaxBytes = std::uintmax_t{256} << 20;
  if (std::filesystem::file_size(path, ec) > kMaxBytes) {
    throw InputError(path + ": is larger than 256 MiB; JSON inputs are read whole");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open file for reading");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_json_text(buffer.str(), path);
}

std::string closest_match(std::string_view word, std::initializer_list<std::string_view> options) {
  std::string best;
  size_t best_distance = 3;  // suggest only near misses
  for (std::string_view o : options) {
    size_t d = edit_distance(word, o);
    if (d < best_distance) {
      best_distance = d;
      best = std::string(o);
    }
  }
  return best;
}

JsonNode::JsonNode(const Json& j, std::string file, std::string path)
    : j_(&j), file_(std::make_shared<const std::string>(std::move(file))), path_(std::move(path)) {}

void JsonNode::fail(const std::string& rule) const {
  throw InputError(*file_, path_.empty() ? "(top level)" : path_, value_text(), rule);
}

void JsonNode::fail_enum(std::string allowed) const {
  fail("is not one of: " + allowed);
}

std::string JsonNode::value_text() const {
  std::string s = json_text(*j_);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

void JsonNode::require_object() const {
  if (!j_->is_object()) fail("must be a JSON object");
}

void JsonNode::allow_keys(std::initializer_list<std::string_view> allowed) const {
  require_object();
  for (auto it = j_->begin(); it != j_->end(); ++it) {
    const std::string& key = it.key();
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string rule = "is an unknown key";
    std::string suggestion = closest_match(key, allowed);
    if (!suggestion.empty()) rule += " (did you mean '" + suggestion + "'?)";
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    rule += "; allowed keys: " + list;
    throw InputError(*file_, join_path(path_, key), "\"" + key + "\"", rule);
  }
}

bool JsonNode::has(std::string_view key) const {
  return j_->is_object() && j_->contains(key);
}

JsonNode JsonNode::at(std::string_view key) const {
  require_object();
  auto it = j_->find(key);
  if (it == j_->end()) {
    throw InputError(*file_, join_path(path_, key), "(missing)", "is a required field");
  }
  JsonNode child = *this;
  child.j_ = &*it;
  child.path_ = join_path(path_, key);
  return child;
}

std::optional<JsonNode> JsonNode::find(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  JsonNode child = at(key);
  if (child.raw().is_null()) child.fail("must not be null (leave the key out for the default)");
  return child;
}

JsonNode JsonNode::element(size_t index) const {
  if (!j_->is_array() || index >= j_->size()) fail("has no element " + std::to_string(index));
  JsonNode child = *this;
  child.j_ = &(*j_)[index];
  child.path_ = path_ + "[" + std::to_string(index) + "]";
  return child;
}

size_t JsonNode::size() const {
  if (!j_->is_array()) fail("must be a JSON array");
  return j_->size();
}

double JsonNode::as_number() const {
  if (!j_->is_number()) fail("must be a number");
  double v = j_->get<double>();
  if (!std::isfinite(v)) fail("must be finite");
  return v;
}

int64_t JsonNode::as_integer(int64_t min, int64_t max) const {
  if (!j_->is_number()) fail("must be an integer");
  double v = j_->get<double>();
  if (v != std::floor(v)) fail("must be an integer");
  if (v < static_cast<double>(min) || v > static_cast<double>(max)) {
    fail("must be between " + std::to_string(min) + " and " + std::to_string(max));
  }
  return static_cast<int64_t>(v);
}

std::string JsonNode::as_string() const {
  if (!j_->is_string()) fail("must be a string");
  return j_->get<std::string>();
}

bool JsonNode::as_bool() const {
  if (!j_->is_boolean()) fail("must be true or false");
  return j_->get<bool>();
}

double JsonNode::as_quantity(Dimension dim) const {
  if (j_->is_number() && dim == Dimension::kCount) {
    const double v = as_number();
    if (v < 0) fail("must not be negative");
    return v;
  }
  if (j_->is_number()) {
    fail("must be " + std::string(dimension_name(dim)) + " with a unit, as a string such as \"" +
         (dim == Dimension::kTime        ? "1.5us"
          : dim == Dimension::kBytes     ? "80GiB"
          : dim == Dimension::kBandwidth ? "300GBps"
          : dim == Dimension::kFlopRate  ? "312TFlops"
                                         : "1TFLOP") +
         "\"");
  }
  if (!j_->is_string()) fail("must be " + std::string(dimension_name(dim)) + " given as a string");
  std::string rule;
  auto v = parse_quantity(j_->get_ref<const std::string&>(), dim, &rule);
  if (!v) fail(rule);
  return *v;
}

double JsonNode::number_or(std::string_view key, double fallback) const {
  auto c = find(key);
  return c ? c->as_number() : fallback;
}

int64_t JsonNode::integer_or(std::string_view key, int64_t fallback, int64_t min,
                             int64_t max) const {
  auto c = find(key);
  return c ? c->as_integer(min, max) : fallback;
}

bool JsonNode::bool_or(std::string_view key, bool fallback) const {
  auto c = find(key);
  return c ? c->as_bool() : fallback;
}

std::string JsonNode::string_or(std::string_view key, std::string fallback) const {
  auto c = find(key);
  return c ? c->as_string() : fallback;
}

double JsonNode::quantity_or(std::string_view key, Dimension dim, double fallback) const {
  auto c = find(key);
  return c ? c->as_quantity(dim) : fallback;
}

std::string json_text(const Json& j, int indent) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace stratasim
