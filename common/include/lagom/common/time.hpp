// Simulated time: an integer count of nanoseconds since the start of the step.
//
// Integer time keeps event order exact and runs byte-identical on every machine (ns-3 and htsim
// do the same); floating point appears only inside rate calculations and is rounded once, up, to
// the next nanosecond when a completion is scheduled.
#pragma once

#include <compare>
#include <cstdint>

namespace lagom {

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time ns(std::int64_t v) { return Time(v); }
  // Rounds to the nearest nanosecond.
  static Time from_us(double us);

  constexpr std::int64_t count_ns() const { return ns_; }
  constexpr double us() const { return static_cast<double>(ns_) / 1000.0; }
  constexpr double count_ns_double() const { return static_cast<double>(ns_); }

  constexpr auto operator<=>(const Time&) const = default;
  constexpr Time operator+(Time o) const { return Time(ns_ + o.ns_); }
  constexpr Time operator-(Time o) const { return Time(ns_ - o.ns_); }
  constexpr Time& operator+=(Time o) {
    ns_ += o.ns_;
    return *this;
  }
  constexpr Time& operator-=(Time o) {
    ns_ -= o.ns_;
    return *this;
  }

 private:
  constexpr explicit Time(std::int64_t v) : ns_(v) {}
  std::int64_t ns_ = 0;
};

}  // namespace lagom
