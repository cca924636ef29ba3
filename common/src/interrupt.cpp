// SIGINT/SIGTERM as a flag (see interrupt.hpp).
#include "lagom/common/interrupt.hpp"

#include <time.h>

#include <atomic>
#include <csignal>
#include <cstdint>

namespace lagom {
namespace {

std::atomic<bool> g_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");
// When the first signal came (monotonic ns).
std::atomic<std::int64_t> g_first_ns{0};
static_assert(std::atomic<std::int64_t>::is_always_lock_free, "the handler needs a lock-free time");

// A second signal within this of the first is the same request delivered twice: timeout(1) and
// shells send a signal to the process and to its process group, microseconds apart. A person's
// second Ctrl-C comes later than this.
constexpr std::int64_t kSameRequestNs = 250'000'000;

std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

extern "C" void on_stop_signal(int sig) {
  const std::int64_t now = monotonic_ns();
  if (!g_requested.exchange(true)) {
    g_first_ns.store(now);
  } else if (now - g_first_ns.load() >= kSameRequestNs) {  // a second request: stop now
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

}  // namespace

void install_interrupt_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

bool interrupt_requested() noexcept {
  return g_requested.load(std::memory_order_relaxed);
}

void request_interrupt() noexcept {
  g_requested.store(true, std::memory_order_relaxed);
}

void clear_interrupt() noexcept {
  g_requested.store(false, std::memory_order_relaxed);
  g_first_ns.store(0);
}

}  // namespace lagom
