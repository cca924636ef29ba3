// Units: parsing byte sizes, printing microseconds exactly.
#include "lagom/common/units.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
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
  std::int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr == text.data()) {
    return fail("not a number");
  }
  if (value < 0) {
    return fail("negative");
  }
  std::string suffix;
  for (const char* p = ptr; p != text.data() + text.size(); ++p) {
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
  if (value > (std::numeric_limits<std::int64_t>::max() >> shift)) {
    return fail("too large");
  }
  return value << shift;
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

std::string format_duration(double ns) {
  const double a = std::abs(ns);
  if (a == 0) {
    return "0";
  }
  static constexpr std::pair<double, const char*> kSubSecond[] = {
      {1e3, "ns"}, {1e6, "us"}, {1e9, "ms"}};  // below the bound: ns / (bound / 1000)
  for (const auto& [bound, unit] : kSubSecond) {
    if (a < bound) {
      return fmt::format("{:.4g} {}", ns / (bound / 1e3), unit);
    }
  }
  const double s = ns / 1e9;
  if (a < 60e9) {
    return fmt::format("{:.4g} s", s);
  }
  if (a < 3600e9) {
    return fmt::format("{:.1f} min", s / 60);
  }
  if (a < 86400e9) {
    return fmt::format("{:.1f} h", s / 3600);
  }
  return fmt::format("{:.1f} days", s / 86400);
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
