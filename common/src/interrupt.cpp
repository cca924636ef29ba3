// SIGINT/SIGTERM as a flag (see interrupt.hpp).
#include "lagom/common/interrupt.hpp"

#include <atomic>
#include <csignal>

namespace lagom {
namespace {

std::atomic<bool> g_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");

extern "C" void on_stop_signal(int sig) {
  if (g_requested.exchange(true)) {  // the second one: stop now
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
}

}  // namespace lagom
