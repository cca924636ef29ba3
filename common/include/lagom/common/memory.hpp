// Host memory: refusing an absurd request before allocating for it.
//
// A command that is about to build something whose size it can estimate from its inputs (a
// generated step of billions of ops, a multi-gigabyte workload file, a per-op JSON report) calls
// check_memory() first. The estimate is compared with what the process may still use: by
// default the memory the machine has available now (Linux's MemAvailable, capped by the cgroup's
// memory.max when there is one), or with `--max-memory SIZE` (every command) a limit on the whole
// process, less what it already holds. Over it, lagom::Error names the request, the estimate, the
// limit and the ways out; under it nothing happens. The per-item byte figures the callers use are
// measured (docs/RELIABILITY.md, "Absurd sizes").
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace lagom {

// Bytes the machine could give this process now: MemAvailable from /proc/meminfo, capped by the
// cgroup v2 limit (memory.max - memory.current) when one applies; nullopt when unknown.
std::optional<std::uint64_t> available_memory_bytes();

// This process's resident set now (bytes; 0 when unknown).
std::uint64_t resident_memory_bytes();

// --max-memory: a limit on the whole process's memory (nullopt: the machine's available memory).
void set_memory_limit(std::optional<std::uint64_t> bytes);
std::optional<std::uint64_t> memory_limit();

// Throws lagom::Error when `estimate_bytes` more would not fit: "<what> would need about <size>
// of memory (<how>), more than <the limit>; <remedy> or raise the limit with --max-memory SIZE".
// `how` says what the estimate counts ("3.4e9 ops x 128 B"); `remedy` what the user can change.
void check_memory(double estimate_bytes, std::string_view what, std::string_view how,
                  std::string_view remedy);

}  // namespace lagom
