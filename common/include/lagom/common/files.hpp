// Writing the files lagom produces (plans, profiles, traces, exports), with one error wording:
// "cannot write <what> '<path>': <reason>" and "error while writing <what> '<path>'".
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace lagom {

// Replaces the contents of `path` with `bytes`. `what` names the file in errors ("profile",
// "trace file"; empty: just the path).
void write_file(const std::string& path, std::string_view bytes, std::string_view what = {});

// The same for a document produced while it is written: `write` streams into the file.
void write_file_with(const std::string& path, const std::function<void(std::ostream&)>& write,
                     std::string_view what = {});

}  // namespace lagom
