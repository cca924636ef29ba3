// Simulated time conversions.
#include "lagom/common/time.hpp"

#include <cmath>

namespace lagom {

Time Time::from_us(double us) {
  return Time::ns(std::llround(us * 1000.0));
}

}  // namespace lagom
