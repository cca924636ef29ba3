// Fuzzes the placement reader (docs/formats/placement.md) for a 16-rank step on four 4-GPU
// nodes: what it accepts must be a permutation of the cluster's GPUs.
#include <vector>

#include "fuzz_util.hpp"
#include "harnesses.hpp"
#include "lagom/models/placement.hpp"

int lagom::fuzz::placement(const std::uint8_t* data, std::size_t size) {
  return lagom::fuzz::guarded([&] {
    const std::vector<std::uint32_t> gpus =
        lagom::models::parse_placement(lagom::fuzz::text_of(data, size), "fuzz.json", 16, 16, 4);
    std::vector<char> seen(16, 0);
    for (std::uint32_t g : gpus) {
      lagom::fuzz::require(g < 16 && seen[g] == 0,
                           "a placement repeats a GPU or leaves the cluster");
      seen[g] = 1;
    }
    lagom::fuzz::require(gpus.size() == 16, "a placement does not place every rank");
  });
}

LAGOM_FUZZ_ENTRY(lagom::fuzz::placement)
