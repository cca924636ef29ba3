// Stopping a long run cleanly on SIGINT or SIGTERM (Ctrl-C, `kill`, Slurm's scancel).
//
// The CLI installs the handlers once; the handler only sets a flag. Long loops poll it: the
// simulation engine between events, a search between evaluations, a sweep between points. A
// loop that sees it throws Interrupted, which is not a lagom::Error (bad input) but a request to
// stop: the command keeps what is whole (a search's best plan so far, a sweep's finished rows),
// says so on stderr and exits 130. A second signal kills the process at once (one that comes
// within 250 ms of the first is the same request delivered twice, as timeout(1) does, and is
// ignored).
#pragma once

#include <stdexcept>

namespace lagom {

class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("interrupted") {}
};

// SIGINT and SIGTERM set the flag; a second one (250 ms or more later) takes the signal's default
// action.
void install_interrupt_handlers();

bool interrupt_requested() noexcept;
// As a signal would (tests, and a sweep stopping its workers).
void request_interrupt() noexcept;
void clear_interrupt() noexcept;

// Throws Interrupted when a stop was requested.
inline void check_interrupt() {
  if (interrupt_requested()) {
    throw Interrupted();
  }
}

}  // namespace lagom
