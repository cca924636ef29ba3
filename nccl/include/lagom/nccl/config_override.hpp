// Pinning some of NCCL's parameters and letting NCCL choose the rest, as a user does with
// NCCL_ALGO / NCCL_PROTO, a tuner plugin's nChannels, NCCL_MIN_CTAS = NCCL_MAX_CTAS, NCCL_NTHREADS
// and NCCL_BUFFSIZE.
#pragma once

#include <cstdint>
#include <optional>

#include "lagom/nccl/comm_config.hpp"
#include "lagom/nccl/tuning.hpp"

namespace lagom::nccl {

struct ConfigOverride {
  std::optional<Algorithm> algo;
  std::optional<Protocol> proto;
  int nchannels = 0;  // 0: NCCL's
  int nthreads = 0;
  std::int64_t chunk_bytes = 0;
  bool empty() const {
    return !algo && !proto && nchannels == 0 && nthreads == 0 && chunk_bytes == 0;
  }
  bool operator==(const ConfigOverride&) const = default;
};

// NCCL's default with `pin` applied:
//  * algorithm and/or protocol pinned: the unpinned one is the fastest legal partner by NCCL's
//    own cost model (as NCCL does under NCCL_ALGO or NCCL_PROTO); then NCCL's channel, thread and
//    chunk rules for that pair;
//  * channels pinned: exactly that many CTAs (NCCL_MIN_CTAS = NCCL_MAX_CTAS = n, which also
//    raises the communicator's channel count, as AutoCCL and Lagom tune it);
//  * threads and chunk pinned: used as given.
// Throws lagom::Error naming the NCCL rule when the result is not something NCCL would run.
CommConfig resolve_config(const Tables& tables, CollKind kind, std::int64_t bytes,
                          const ConfigOverride& pin);

}  // namespace lagom::nccl
