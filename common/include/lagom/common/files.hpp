// Writing the files lagom produces (plans, profiles, traces, CSV, exports), with one error
// wording: "cannot write <what> '<path>': <reason>" and "error while writing <what> '<path>'".
//
// Every write is atomic: the bytes go to a hidden temporary file beside the target
// (".<name>.lagom-tmp.<pid>.<n>"), which is renamed over the target once complete. A write that
// fails or throws removes its temporary file and leaves the previous file as it was; a process
// killed outright (SIGKILL) may leave the temporary file, never a partial target. A replaced file
// keeps its permissions; a symbolic link is followed. A target that exists and is not a regular
// file (/dev/stdout, a FIFO) is written in place.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace lagom {

// Replaces the contents of `path` with `bytes`, atomically. `what` names the file in errors
// ("profile", "trace file"; empty: just the path).
void write_file(const std::string& path, std::string_view bytes, std::string_view what = {});

// The same for a document produced while it is written: `write` streams into the file.
void write_file_with(const std::string& path, const std::function<void(std::ostream&)>& write,
                     std::string_view what = {});

}  // namespace lagom
