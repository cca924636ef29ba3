// Legal but suspicious input (docs/RELIABILITY.md): a warning on stderr, "lagom <command>:
// warning: <message>". With --strict (accepted by every command) each warning is an error
// instead: lagom::Error "<message> (--strict)", exit status 1.
#pragma once

#include <string_view>

namespace lagom::cli {

// Set once by main() before the command runs.
void set_warning_context(std::string_view command, bool strict);
bool strict_mode();

// Prints the warning, or throws lagom::Error under --strict.
void warn(std::string_view message);

}  // namespace lagom::cli
