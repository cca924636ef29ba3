// Writing the files lagom produces (plans, profiles, traces, CSV, exports), with one error
// wording: "cannot write <what> '<path>': <reason>" and "error while writing <what> '<path>'".
//
// Every write is atomic: the bytes go to a hidden temporary file beside the target
// (".<name>.lagom-tmp.<pid>.<n>"), which is renamed over the target once complete. A write that
// fails or throws removes its temporary file and leaves the previous file as it was; a process
// killed outright (SIGKILL) may leave the temporary file, never a partial target. A replaced file
// keeps its permissions; a chain of symbolic links is followed to the file it names (a dangling
// link gets its target created), and the links stay. A path under /dev/ or /proc/ (/dev/stdout,
// /dev/fd/N: the shell may have opened a pipe or a file for appending) and a target that exists
// and is not a regular file (a FIFO) are written in place. The temporary is created exclusively
// (O_EXCL, no link followed).
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
