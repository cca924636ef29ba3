// Reading and writing the JSON workload format, version 1 (docs/formats/workload.md).
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>

#include "lagom/traces/workload.hpp"

namespace lagom::traces {

inline constexpr std::string_view kWorkloadFormat = "lagom.workload";
inline constexpr int kWorkloadVersion = 1;

// Parses a workload document. `source` names it in error messages (a path, or "builtin:x").
// Throws lagom::Error naming the source, the JSON path of the offending object (e.g.
// "ranks[0].streams[1].ops[3] (id 'bwd.3')") and what was expected.
Workload parse_workload_json(std::string_view text, std::string_view source);

// Reads and parses a file; a missing or unreadable file is a lagom::Error.
Workload load_workload_file(const std::string& path);

// Writes `w` in format v1: deterministic, one op per line. parse_workload_json() of the output
// gives back an equal workload.
void write_workload_json(const Workload& w, std::ostream& out);

// The whole file as a string; throws lagom::Error if it cannot be read.
std::string read_text_file(const std::string& path, std::string_view what = "file");

}  // namespace lagom::traces
