// Fuzzes the published-runs reader (docs/formats/published-runs.md).
#include "fuzz_util.hpp"
#include "harnesses.hpp"
#include "lagom/calibrate/published.hpp"

int lagom::fuzz::published_runs(const std::uint8_t* data, std::size_t size) {
  return lagom::fuzz::guarded([&] {
    (void)lagom::calibrate::parse_published_runs(lagom::fuzz::text_of(data, size), "fuzz", ".");
  });
}

LAGOM_FUZZ_ENTRY(lagom::fuzz::published_runs)
