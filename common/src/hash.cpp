// Stable hashing helpers.
#include "lagom/common/hash.hpp"

#include <fmt/format.h>

namespace lagom {

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t seed) {
  std::uint64_t h = seed;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string hex64(std::uint64_t value) {
  return fmt::format("{:016x}", value);
}

}  // namespace lagom
