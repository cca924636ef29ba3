// Units: parsing byte sizes, printing microseconds exactly.
#include "lagom/common/units.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>
#include <utility>

#include "lagom/common/error.hpp"

namespace lagom {

std::int64_t parse_bytes(std::string_view text, std::string_view what) {
  auto fail = [&](std::string_view why) -> std::int64_t {
    throw Error(
        fmt::format("{}: cannot read '{}' as a byte count ({}); expected e.g. 8, 32K, 1M, 16G",
                    what, text, why));
  };
  if (text.empty()) {
    return fail("empty");
  }
  // The number: an integer, or a decimal ("1.5G") whose product with the unit is whole bytes.
  std::int64_t value = 0;
  std::int64_t numerator = 0;  // the digits after a decimal point, over `denominator`
  std::int64_t denominator = 1;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr == text.data()) {
    return fail(ec == std::errc::result_out_of_range ? "too large" : "not a number");
  }
  if (value < 0 || (ptr != text.data() && text.front() == '-')) {
    return fail("negative");
  }
  const char* end = text.data() + text.size();
  if (ptr != end && *ptr == '.') {
    const char* digits = ++ptr;
    for (; ptr != end && std::isdigit(static_cast<unsigned char>(*ptr)); ++ptr) {
      if (ptr - digits >= 9) {
        return fail("more than 9 digits after the decimal point");
      }
      numerator = numerator * 10 + (*ptr - '0');
      denominator *= 10;
    }
    if (ptr == digits) {
      return fail("no digits after the decimal point");
    }
  }
  std::string suffix;
  for (const char* p = ptr; p != end; ++p) {
    suffix.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(*p))));
  }
  int shift = 0;
  if (suffix.empty() || suffix == "B") {
    shift = 0;
  } else if (suffix == "K" || suffix == "KB" || suffix == "KIB") {
    shift = 10;
  } else if (suffix == "M" || suffix == "MB" || suffix == "MIB") {
    shift = 20;
  } else if (suffix == "G" || suffix == "GB" || suffix == "GIB") {
    shift = 30;
  } else if (suffix == "T" || suffix == "TB" || suffix == "TIB") {
    shift = 40;
  } else {
    return fail("unknown suffix");
  }
  if (value >= (std::numeric_limits<std::int64_t>::max() >> shift)) {
    return fail("too large");
  }
  // The fraction's bytes, numerator x unit / denominator, exactly: with g = gcd(unit,
  // denominator) it is whole only when denominator / g divides the numerator, and it is then
  // below the unit (no overflow). A fraction that does not come to whole bytes (0.3K = 307.2) is
  // refused rather than rounded.
  std::int64_t part = 0;
  if (numerator > 0) {
    const std::int64_t unit = std::int64_t{1} << shift;
    const std::int64_t g = std::gcd(unit, denominator);
    if (numerator % (denominator / g) != 0) {
      return fail("not a whole number of bytes");
    }
    part = numerator / (denominator / g) * (unit / g);
  }
  return (value << shift) + part;
}

std::string format_bytes(std::int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) {
    return fmt::format("{} B", bytes);
  }
  return fmt::format("{:.{}f} {}", v,
                     v == static_cast<double>(static_cast<std::int64_t>(v)) ? 0 : 2, kUnits[u]);
}

std::string format_us(std::int64_t ns) {
  const char* sign = ns < 0 ? "-" : "";
  std::uint64_t a = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  return fmt::format("{}{}.{:03d}", sign, a / 1000, a % 1000);
}

namespace {

// x > 0 rounded to `digits` significant digits.
double round_significant(double x, int digits) {
  const int p = digits - 1 - static_cast<int>(std::floor(std::log10(x)));
  // Multiply and divide by exact powers of ten (1e5, not 1e-5) so that 10000 x 1e5 is 1e9.
  const double scale = std::pow(10.0, std::abs(p));
  return p >= 0 ? std::round(x * scale) / scale : std::round(x / scale) * scale;
}

}  // namespace

std::string format_duration(double ns) {
  if (!std::isfinite(ns)) {
    return std::isnan(ns) ? "nan" : (ns > 0 ? "inf" : "-inf");
  }
  if (ns == 0) {
    return "0";
  }
  const char* sign = ns < 0 ? "-" : "";
  // The unit is chosen for the value as printed, so that rounding never shows "1000 us" or
  // "60 s" where "1 ms" and "1.0 min" are meant.
  const double a = round_significant(std::abs(ns), 4);
  static constexpr std::pair<double, const char*> kUpToAMinute[] = {
      {1e3, "ns"}, {1e6, "us"}, {1e9, "ms"}, {60e9, "s"}};  // below the bound: ns / (bound / 1e3)
  for (const auto& [bound, unit] : kUpToAMinute) {
    if (a < bound) {
      const double per_unit = bound == 60e9 ? 1e9 : bound / 1e3;
      return fmt::format("{}{:.4g} {}", sign, a / per_unit, unit);
    }
  }
  // Then one decimal: the unit moves up when the tenths round to the next unit's one.
  static constexpr std::tuple<double, double, const char*> kLonger[] = {
      {60e9, 60.0, "min"}, {3600e9, 24.0, "h"}};  // (ns per unit, units per next, name)
  for (const auto& [per_unit, per_next, unit] : kLonger) {
    const double tenths = std::round(a / per_unit * 10) / 10;
    if (tenths < per_next) {
      return fmt::format("{}{:.1f} {}", sign, tenths, unit);
    }
  }
  return fmt::format("{}{:.1f} days", sign, a / 86400e9);
}

std::string format_count(double v) {
  if (!std::isfinite(v) || std::abs(v) >= 1e18) {
    return fmt::format("{:.3g}", v);
  }
  if (std::abs(v) < 100) {
    return fmt::format("{:.3g}", v);
  }
  const std::string digits = fmt::format("{:.0f}", std::abs(v));
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) {
      out += ',';
    }
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

}  // namespace lagom
