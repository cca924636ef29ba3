// Synthetic training-step workloads of any size, for benchmarks and scale tests.
#pragma once

#include <cstdint>

#include "lagom/traces/workload.hpp"

namespace lagom::bench {

// A TP x DP step shaped like Megatron's: per rank a "compute" and a "comm" stream; per layer a
// forward kernel, a tensor-parallel all-reduce the next forward waits for, a backward kernel
// and a data-parallel reduce-scatter overlapped with the rest of the backward pass. Durations
// are pseudo-random (fixed seed) with per-rank jitter, so collectives see late arrivals.
struct SyntheticSpec {
  std::uint32_t ranks = 8;
  std::uint32_t layers = 32;  // ops per rank = 4 * layers
  std::uint32_t tp = 8;       // tensor-parallel group size (consecutive ranks); capped at ranks
  std::uint64_t seed = 1;
  // Collectives carry their drawn durations (true) or none, leaving them to the collective
  // model (false). Drawn durations are shorter than the model's for their sizes, so with the
  // contention model they run as capped flows and are warned about; false is the physical case.
  bool comm_durations = true;
};

traces::Workload synthetic_step(const SyntheticSpec& spec);

}  // namespace lagom::bench
