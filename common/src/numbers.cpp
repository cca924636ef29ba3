// Whole-string, range-checked number parsing (see numbers.hpp).
#include "lagom/common/numbers.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <string>

#include "lagom/common/error.hpp"

namespace lagom {
namespace {

std::string unit_of(std::string_view unit) {
  return unit.empty() ? "" : fmt::format(" ({})", unit);
}

}  // namespace

std::int64_t parse_integer(std::string_view text, std::string_view what, std::int64_t min,
                           std::int64_t max, std::string_view unit) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < min || v > max) {
    throw Error(fmt::format("{}: expected an integer from {} to {}{}, got '{}'", what, min, max,
                            unit_of(unit), text));
  }
  return v;
}

double parse_real(std::string_view text, std::string_view what, double min, double max,
                  std::string_view unit) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v, std::chars_format::general);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v) || v < min || v > max) {
    throw Error(fmt::format("{}: expected a number from {} to {}{}, got '{}'", what, min, max,
                            unit_of(unit), text));
  }
  return v;
}

}  // namespace lagom
