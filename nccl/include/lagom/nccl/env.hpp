// NCCL environment variables for what-ifs: each known variable sets the CommInfo field NCCL's
// init would read it into.
#pragma once

#include <map>
#include <string>

#include "lagom/nccl/comm_info.hpp"

namespace lagom::nccl {

// Applies NCCL environment variables (name -> value, as a job would export them) to `info`:
// NCCL_ALGO, NCCL_PROTO, NCCL_MIN_CTAS, NCCL_MAX_CTAS, NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS,
// NCCL_NTHREADS, NCCL_LL128_NTHREADS, NCCL_BUFFSIZE, NCCL_LL_BUFFSIZE, NCCL_LL128_BUFFSIZE,
// NCCL_NVLS_CHUNKSIZE, NCCL_P2P_NVL_CHUNKSIZE, NCCL_P2P_PCI_CHUNKSIZE, NCCL_P2P_NET_CHUNKSIZE,
// NCCL_P2P_LL_THRESHOLD, NCCL_CHUNK_SIZE, NCCL_PAT_ENABLE, NCCL_LL128_C2C, NCCL_NET_OVERHEAD
// (ns, as NCCL reads it). Throws lagom::Error naming the variable for an unknown name (listing
// these) or a value NCCL would not parse or accept, and for NCCL_PAT_ENABLE, NCCL_LL128_C2C and
// NCCL_NVLS_CHUNKSIZE when `info.version` is 2.18, which has none of them. Set the version first.
void apply_env(const std::map<std::string, std::string>& vars, CommInfo& info);

}  // namespace lagom::nccl
