// Simulated time conversions.
#include "lagom/common/time.hpp"

#include <fmt/format.h>

#include <cmath>

#include "lagom/common/error.hpp"

namespace lagom {

Time Time::from_us(double us) {
  // 2^63 ns is 292 years: beyond it a duration is a unit mistake or an absurd what-if, and
  // llround's result would be meaningless.
  if (!(std::abs(us) < 9.0e15)) {
    throw Error(fmt::format(
        "a duration of {:.3g} us (over 285 years) is beyond what lagom simulates: a bandwidth, "
        "rate or size is absurd (check --set, --scale, --slow-link and the inputs)",
        us));
  }
  return Time::ns(std::llround(us * 1000.0));
}

}  // namespace lagom
