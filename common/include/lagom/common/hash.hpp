// Stable 64-bit hashing for fingerprints and input hashes (same value on every machine).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lagom {

// FNV-1a, 64-bit. Used for input-file hashes in report contexts.
std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t seed = 0xcbf29ce484222325ULL);

// Incremental mixer for event-stream fingerprints: order-sensitive, cheap per word.
class Fingerprint {
 public:
  void add(std::uint64_t word) {
    // splitmix64 finaliser of (state ^ word): every bit of every word reaches every output bit.
    std::uint64_t z = state_ ^ (word + 0x9e3779b97f4a7c15ULL + (state_ << 6) + (state_ >> 2));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    state_ = z ^ (z >> 31);
  }
  std::uint64_t value() const { return state_; }

 private:
  std::uint64_t state_ = 0x6c61676f6dULL;  // "lagom"
};

// 16 lowercase hex digits.
std::string hex64(std::uint64_t value);

}  // namespace lagom
