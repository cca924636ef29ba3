// Parsing and printing quantities with explicit units (bytes, microseconds).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lagom {

// Parses a byte count as nccl-tests and users write it: "8", "32K", "1M", "16G", "2MiB", "512B",
// "1.5G". K/M/G/T are powers of 1024 (as in nccl-tests' -b/-e); a decimal must come to whole
// bytes ("0.5K" is 512, "0.3K" an error). Throws lagom::Error naming `what`.
std::int64_t parse_bytes(std::string_view text, std::string_view what);

// "32 MiB", "1.5 GiB", "512 B": for human summaries only (JSON carries raw integers).
std::string format_bytes(std::int64_t bytes);

// Nanoseconds as microseconds with exactly three decimals ("12.500"), exact and locale-free,
// so that reports are byte-identical across runs and machines.
std::string format_us(std::int64_t ns);

// A duration for people: four significant digits in the largest unit that keeps it at least 1
// ("13.66 s", "307.4 ms", "933.5 us", "12 ns"); minutes, hours and days past a minute
// ("41.5 min", "6.2 h", "217.4 days"). The unit is that of the rounded value (999.96 ns prints
// "1 us", 3599.9 s "1.0 h"); "nan", "inf" and "-inf" print as such.
std::string format_duration(double ns);

// A count for people: rounded to an integer with thousands separators ("53,291"), or with three
// significant digits below 100 ("12.3").
std::string format_count(double v);

}  // namespace lagom
