// The Lagom paper's overlap microbenchmark as a library for `lagom overlap` and `lagom
// reproduce`: collectives in order on every GPU's "comm" stream beside compute kernels on its
// "compute" stream, all from time 0 (reference/lagom-paper.md §3.4, Figures 3 and 5).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hardware_options.hpp"
#include "lagom/models/kernels.hpp"
#include "lagom/nccl/config_override.hpp"
#include "lagom/traces/workload.hpp"

namespace lagom::cli {

// "gemm:m=8192,n=8192,k=8192" | "ffn:tokens=4096,hidden=2560,ffn=10240" |
// "elementwise:elems=1e8"; any of them with ",repeat=N". lagom::Error names a bad part.
std::vector<models::Kernel> parse_compute(const std::string& spec);

// One collective of the comm stream, over every rank; `pin` empty: NCCL's own choice.
struct OverlapComm {
  traces::OpKind kind = traces::OpKind::kAllReduce;
  std::int64_t bytes = 0;
  nccl::ConfigOverride pin;
};

// The workload: on each of ranks 0..nranks-1 the kernels in order on "compute" (when
// `with_compute`) and the collectives in order on "comm" (when `with_comm`).
traces::Workload overlap_workload(int nranks, std::span<const OverlapComm> comms,
                                  std::span<const models::Kernel> kernels, bool with_comm,
                                  bool with_compute);

struct OverlapTimes {
  std::vector<double> comm_us;  // each collective's duration on rank 0, in order
  double comm_span_us = 0;      // first collective's start to last one's end
  double compute_us = 0;        // first kernel's start to last one's end
  double makespan_us = 0;
};

// Simulates overlap_workload on `h` with the contention model.
OverlapTimes run_overlap(const Hardware& h, int nranks, std::span<const OverlapComm> comms,
                         std::span<const models::Kernel> kernels, bool with_comm,
                         bool with_compute);

}  // namespace lagom::cli
