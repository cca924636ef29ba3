// The one exception type Lagom throws for bad input and impossible requests.
#pragma once

#include <stdexcept>
#include <string>

namespace lagom {

// A user-facing error: the message names what was wrong, where, and what was expected.
// The CLI prints it as "lagom: error: <message>" and exits non-zero.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace lagom
