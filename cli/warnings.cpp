// Warnings and --strict (see warnings.hpp).
#include "warnings.hpp"

#include <fmt/format.h>

#include <atomic>
#include <string>

#include "lagom/common/error.hpp"

namespace lagom::cli {
namespace {

std::string g_command = "lagom";  // written once, before any thread starts
std::atomic<bool> g_strict{false};

}  // namespace

void set_warning_context(std::string_view command, bool strict) {
  g_command = fmt::format("lagom {}", command);
  g_strict = strict;
}

bool strict_mode() {
  return g_strict;
}

void warn(std::string_view message) {
  if (g_strict) {
    throw Error(fmt::format("{} (--strict)", message));
  }
  fmt::print(stderr, "{}: warning: {}\n", g_command, message);
}

}  // namespace lagom::cli
