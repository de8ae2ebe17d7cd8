// printf-style formatting into a std::string, for reports and plan text.
#pragma once

#include <cstdio>
#include <string>

namespace stratasim {

template <class... Args>
std::string format_text(const char* format, Args... args) {
  const int n = std::snprintf(nullptr, 0, format, args...);
  if (n <= 0) return {};
  std::string out(static_cast<size_t>(n), '\0');
  std::snprintf(out.data(), out.size() + 1, format, args...);
  return out;
}

}  // namespace stratasim
