#include "units.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace stratasim {
namespace {

struct UnitEntry {
  std::string_view suffix;
  double factor;
};

constexpr std::array kTimeUnits = {UnitEntry{"s", 1.0}, UnitEntry{"ms", kMilli},
                                   UnitEntry{"us", kMicro}, UnitEntry{"µs", kMicro},
                                   UnitEntry{"ns", kNano}};
constexpr std::array kByteUnits = {
    UnitEntry{"B", 1.0},        UnitEntry{"KB", kKB},        UnitEntry{"kB", kKB},
    UnitEntry{"MB", kMB},       UnitEntry{"GB", kGB},        UnitEntry{"TB", kTB},
    UnitEntry{"KiB", kKiB},     UnitEntry{"MiB", kMiB},      UnitEntry{"GiB", kGiB},
    UnitEntry{"TiB", kGiB * kKiB}};
constexpr std::array kBandwidthUnits = {
    UnitEntry{"Bps", 1.0},          UnitEntry{"KBps", kKB},           UnitEntry{"MBps", kMB},
    UnitEntry{"GBps", kGB},         UnitEntry{"TBps", kTB},           UnitEntry{"B/s", 1.0},
    UnitEntry{"KB/s", kKB},         UnitEntry{"MB/s", kMB},           UnitEntry{"GB/s", kGB},
    UnitEntry{"TB/s", kTB},         UnitEntry{"GiBps", kGiB},         UnitEntry{"GiB/s", kGiB},
    UnitEntry{"bps", 1.0 / kBitsPerByte},   UnitEntry{"Kbps", kKB / kBitsPerByte},
    UnitEntry{"Mbps", kMB / kBitsPerByte},  UnitEntry{"Gbps", kGB / kBitsPerByte},
    UnitEntry{"Tbps", kTB / kBitsPerByte},  UnitEntry{"Gb/s", kGB / kBitsPerByte},
    UnitEntry{"Tb/s", kTB / kBitsPerByte}};
constexpr std::array kFlopRateUnits = {
    UnitEntry{"Flops", 1.0},     UnitEntry{"GFlops", kGiga},    UnitEntry{"TFlops", kTera},
    UnitEntry{"PFlops", kPeta},  UnitEntry{"FLOP/s", 1.0},      UnitEntry{"GFLOP/s", kGiga},
    UnitEntry{"TFLOP/s", kTera}, UnitEntry{"PFLOP/s", kPeta},   UnitEntry{"TFLOPS", kTera},
    UnitEntry{"GFLOPS", kGiga},  UnitEntry{"PFLOPS", kPeta}};
constexpr std::array kFlopUnits = {UnitEntry{"FLOP", 1.0}, UnitEntry{"GFLOP", kGiga},
                                   UnitEntry{"TFLOP", kTera}, UnitEntry{"PFLOP", kPeta}};
constexpr std::array kCountUnits = {UnitEntry{"", 1.0}};

template <size_t N>
std::optional<double> lookup(const std::array<UnitEntry, N>& units, std::string_view suffix) {
  for (const UnitEntry& u : units) {
    if (u.suffix == suffix) return u.factor;
  }
  return std::nullopt;
}

std::optional<double> unit_factor(Dimension dim, std::string_view suffix) {
  switch (dim) {
    case Dimension::kTime: return lookup(kTimeUnits, suffix);
    case Dimension::kBytes: return lookup(kByteUnits, suffix);
    case Dimension::kBandwidth: return lookup(kBandwidthUnits, suffix);
    case Dimension::kFlopRate: return lookup(kFlopRateUnits, suffix);
    case Dimension::kFlops: return lookup(kFlopUnits, suffix);
    case Dimension::kCount: return lookup(kCountUnits, suffix);
  }
  return std::nullopt;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string with_prefix(double value, const char* const* prefixes, int count, double step,
                        const char* unit) {
  int i = 0;
  while (i + 1 < count && std::fabs(value) >= step) {
    value /= step;
    ++i;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %s%s", value, prefixes[i], unit);
  return buf;
}

}  // namespace

std::string_view dimension_name(Dimension dim) {
  switch (dim) {
    case Dimension::kTime: return "a time";
    case Dimension::kBytes: return "a size in bytes";
    case Dimension::kBandwidth: return "a bandwidth";
    case Dimension::kFlopRate: return "a compute rate";
    case Dimension::kFlops: return "a FLOP count";
    case Dimension::kCount: return "a number";
  }
  return "a quantity";
}

std::string_view accepted_units(Dimension dim) {
  switch (dim) {
    case Dimension::kTime: return "s, ms, us, ns";
    case Dimension::kBytes: return "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB";
    case Dimension::kBandwidth: return "Bps, MBps, GBps, TBps, GB/s, bps, Mbps, Gbps, Tbps, Gb/s";
    case Dimension::kFlopRate: return "Flops, GFlops, TFlops, PFlops, TFLOP/s";
    case Dimension::kFlops: return "FLOP, GFLOP, TFLOP, PFLOP";
    case Dimension::kCount: return "a plain number";
  }
  return "";
}

std::optional<double> parse_quantity(std::string_view text, Dimension dim, std::string* rule) {
  std::string_view s = trim(text);
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end == s.data()) {
    if (rule) *rule = "must be " + std::string(dimension_name(dim)) + ": a number followed by one of " +
                      std::string(accepted_units(dim));
    return std::nullopt;
  }
  std::string_view suffix = trim(std::string_view(end, s.data() + s.size() - end));
  std::optional<double> factor = unit_factor(dim, suffix);
  if (!factor) {
    if (rule) *rule = "has unknown unit '" + std::string(suffix) + "' for " +
                      std::string(dimension_name(dim)) + " (accepted: " +
                      std::string(accepted_units(dim)) + ")";
    return std::nullopt;
  }
  const double si = value * *factor;
  if (!std::isfinite(si) || si < 0) {
    if (rule) *rule = "must be a finite, non-negative quantity";
    return std::nullopt;
  }
  return si;
}

std::string format_seconds(double s) {
  char buf[64];
  if (s >= 1.0 || s == 0.0) std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (s >= kMilli) std::snprintf(buf, sizeof buf, "%.2f ms", s / kMilli);
  else if (s >= kMicro) std::snprintf(buf, sizeof buf, "%.2f us", s / kMicro);
  else std::snprintf(buf, sizeof buf, "%.1f ns", s / kNano);
  return buf;
}

std::string format_bytes(double b) {
  static const char* const kPrefixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
  return with_prefix(b, kPrefixes, 6, kKiB, "B");
}

std::string format_flop_rate(double fps) {
  static const char* const kPrefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  return with_prefix(fps, kPrefixes, 7, kKB, "FLOP/s");
}

std::string format_bandwidth(double bps) {
  static const char* const kPrefixes[] = {"", "K", "M", "G", "T"};
  return with_prefix(bps, kPrefixes, 5, kKB, "B/s");
}

std::string format_count(double n) {
  char buf[64];
  if (std::fabs(n) >= 1e6) std::snprintf(buf, sizeof buf, "%.3g", n);
  else std::snprintf(buf, sizeof buf, "%.0f", n);
  return buf;
}

}  // namespace stratasim
