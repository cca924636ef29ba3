// One way to read a number from text, for the readers and the command line: the whole string
// (no trailing characters, no spaces, no '+'), range-checked, non-finite values refused, and an
// error that names what was read, the accepted range with its unit, and what was found:
//   "--nodes: expected an integer from 1 to 1000000 (nodes), got '2x'"
#pragma once

#include <cstdint>
#include <string_view>

namespace lagom {

// Decimal integers: "16", "-3".
std::int64_t parse_integer(std::string_view text, std::string_view what, std::int64_t min,
                           std::int64_t max, std::string_view unit = {});

// Decimal reals with an optional exponent: "1.5", "1e8", "-0.25".
double parse_real(std::string_view text, std::string_view what, double min, double max,
                  std::string_view unit = {});

}  // namespace lagom
