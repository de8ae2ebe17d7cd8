// Units are parsed once, here, at the JSON boundary. Inside stratasim everything is SI:
// seconds, bytes, FLOP, FLOP/s, bytes/s. No other file spells out 1e9 or 1024.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace stratasim {

enum class Dimension { kTime, kBytes, kBandwidth, kFlopRate, kFlops, kCount };

// Constants for code that must build quantities from counts (tests, presets, reports).
inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = kKiB * 1024.0;
inline constexpr double kGiB = kMiB * 1024.0;
inline constexpr double kKB = 1e3;
inline constexpr double kMB = 1e6;
inline constexpr double kGB = 1e9;
inline constexpr double kTB = 1e12;
inline constexpr double kGiga = 1e9;
inline constexpr double kTera = 1e12;
inline constexpr double kPeta = 1e15;
inline constexpr double kMilli = 1e-3;
inline constexpr double kMicro = 1e-6;
inline constexpr double kNano = 1e-9;
inline constexpr double kBitsPerByte = 8.0;
inline constexpr double kSecondsPerHour = 3600.0;
inline constexpr double kSecondsPerDay = 24 * kSecondsPerHour;

// Parses "900GBps", "200Gbps", "1.5us", "80GiB", "989TFlops", "2.5 TB/s" into SI.
// Returns std::nullopt and fills `rule` with what was expected when the text is not a
// quantity of that dimension.
std::optional<double> parse_quantity(std::string_view text, Dimension dim, std::string* rule);

std::string_view dimension_name(Dimension dim);
// The units accepted for a dimension, for error messages ("s, ms, us, ns").
std::string_view accepted_units(Dimension dim);

// Human formatting for reports: format_seconds(0.0123) == "12.30 ms".
std::string format_seconds(double s);
std::string format_bytes(double b);        // binary prefixes: "31.4 GiB"
std::string format_flop_rate(double fps);  // "156.2 TFLOP/s"
std::string format_bandwidth(double bps);  // "300.0 GB/s"
std::string format_count(double n);        // "1.75e+11" style for large, plain for small

}  // namespace stratasim
