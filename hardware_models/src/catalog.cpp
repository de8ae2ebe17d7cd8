// Catalog name lookup. The entry texts come from the generated hardware_catalog_data.cpp; they
// are parsed by the readers in hardware_json.cpp.
#include <algorithm>
#include <cctype>
#include <vector>

#include "hardware_models/src/catalog_data.h"

namespace stratasim {
namespace hw_detail {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
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

std::string_view kind_folder(CatalogKind kind) {
  switch (kind) {
    case CatalogKind::kDevice: return "devices";
    case CatalogKind::kLink: return "links";
    case CatalogKind::kCluster: return "clusters";
  }
  return "?";
}

std::string_view kind_noun(CatalogKind kind) {
  switch (kind) {
    case CatalogKind::kDevice: return "device";
    case CatalogKind::kLink: return "link";
    case CatalogKind::kCluster: return "cluster";
  }
  return "?";
}

std::string catalog_file_name(const CatalogText& entry) {
  return std::string(kCatalogFilePrefix) + std::string(entry.kind) + "/" +
         std::string(entry.name) + ".json";
}

const CatalogText* find_entry(CatalogKind kind, std::string_view name) {
  for (const CatalogText& e : catalog_texts()) {
    if (e.kind == kind_folder(kind) && e.name == name) return &e;
  }
  return nullptr;
}

std::string unknown_name_rule(CatalogKind kind, std::string_view name) {
  std::vector<std::string> names = catalog_names(kind);
  // Suggest the near misses (edit distance < 3, ignoring case: "h100-sxm5-80gb", "dgx_a1000"),
  // unless so many are equally near that a suggestion would not help ("nvlink6").
  std::vector<std::string> best;
  size_t best_distance = 3;
  for (const std::string& n : names) {
    size_t d = edit_distance(lower(name), lower(n));
    if (d < best_distance) {
      best_distance = d;
      best.clear();
    }
    if (d == best_distance) best.push_back(n);
  }
  std::string rule = "is not a known " + std::string(kind_noun(kind));
  if (!best.empty() && best.size() <= 3) {
    rule += " (did you mean ";
    for (size_t i = 0; i < best.size(); ++i) {
      rule += (i == 0 ? "" : i + 1 == best.size() ? " or " : ", ") + ("'" + best[i] + "'");
    }
    rule += "?)";
  }
  rule += "; known " + std::string(kind_noun(kind)) + "s: ";
  for (size_t i = 0; i < names.size(); ++i) rule += (i ? ", " : "") + names[i];
  return rule;
}

}  // namespace hw_detail

std::vector<std::string> catalog_names(CatalogKind kind) {
  std::vector<std::string> names;
  for (const CatalogText& e : catalog_texts()) {
    if (e.kind == hw_detail::kind_folder(kind)) names.emplace_back(e.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace stratasim
