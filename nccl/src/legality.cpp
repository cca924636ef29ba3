// Whether NCCL would run a configuration (reference/nccl.md §1.1-1.5), each refusal naming its
// rule.
#include "lagom/nccl/legality.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "internal.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/units.hpp"
#include "lagom/nccl/tuning.hpp"

namespace lagom::nccl {

using namespace internal;  // NOLINT(google-build-using-namespace): this module's own rules

namespace {

// `c` resolved; `tables` its tuning tables, or nullptr to compute them when needed.
std::optional<std::string> why_illegal_on(const CommInfo& c, const Tables* tables, CollKind coll,
                                          const CommConfig& config) {
  const Algorithm a = config.algo;
  const Protocol p = config.proto;
  const std::string what = fmt::format("{}/{} for {}", to_string(a), to_string(p), to_string(coll));

  // Channels and threads (§1.3-1.4).
  if (config.nchannels < 1 || config.nchannels > max_channels(c.version)) {
    return fmt::format("{}: {} channels is outside 1..{} (MAXCHANNELS of NCCL {})", what,
                       config.nchannels, max_channels(c.version), to_string(c.version));
  }
  if (config.nthreads % kWarpSize != 0) {
    return fmt::format("{}: {} threads is not a multiple of the warp size ({})", what,
                       config.nthreads, kWarpSize);
  }
  const int min_threads = p == Protocol::kLL128 ? kLl128MaxNthreads / 4 : 2 * kWarpSize;
  if (config.nthreads < min_threads || config.nthreads > kMaxNthreads) {
    return fmt::format(
        "{}: {} threads is outside {}..{} ({})", what, config.nthreads, min_threads, kMaxNthreads,
        p == Protocol::kLL128 ? "NCCL_LL128_NTHREADS" : "NCCL_NTHREADS plus sync warps");
  }
  // Chunk (§1.5): at least one protocol grain, at most the connection buffer.
  const std::int64_t grain = kGrainBytes[index_of(p)];
  if (config.chunk_bytes < grain) {
    return fmt::format("{}: chunk of {} B is below the {} grain of {} B", what, config.chunk_bytes,
                       to_string(p), grain);
  }
  std::int64_t buffer_data = buff_size(c, p);
  if (p == Protocol::kLL) {
    buffer_data /= 2;
  } else if (p == Protocol::kLL128) {
    buffer_data = buffer_data / kLl128LineElems * kLl128DataElems;
  }
  if (config.chunk_bytes > buffer_data) {
    return fmt::format("{}: chunk of {} exceeds the {} connection buffer ({} of payload)", what,
                       format_bytes(config.chunk_bytes), to_string(p), format_bytes(buffer_data));
  }

  // p2p collectives run NCCL's send/recv schedule: no algorithm choice, LL or Simple only.
  if (!is_tuned(coll)) {
    if (a != Algorithm::kRing) {
      return fmt::format(
          "{}: {} goes through NCCL's p2p path; only the Ring (p2p) schedule applies", what,
          to_string(coll));
    }
    if (p == Protocol::kLL128) {
      return fmt::format("{}: NCCL's p2p path uses LL or Simple, never LL128", what);
    }
    if (p == Protocol::kLL && c.nnodes > 1 && !c.env.alloc_p2p_net_ll_buffers) {
      // NCCL picks LL per connection, and a network one has no LL buffer unless asked: its peers
      // would run Simple, which one protocol per call cannot model.
      return fmt::format(
          "{}: LL for {} across nodes: NCCL's network p2p connections have no LL buffers "
          "(NCCL_ALLOC_P2P_NET_LL_BUFFERS=1 allocates them), so those peers run Simple",
          what, to_string(coll));
    }
    return std::nullopt;
  }

  // Algorithm per function (§1.1, ncclTopoTuneModel).
  if (!algo_computed_for(coll, a, c.version)) {
    return fmt::format(
        "{}: NCCL {} does not implement {} for {} ({})", what, to_string(c.version), to_string(a),
        to_string(coll),
        c.version == Version::k2_18
            ? "AllReduce: Tree, Ring, CollNet, NVLS, NVLSTree; every other function: Ring"
            : "Broadcast/Reduce: Ring; AllGather/ReduceScatter: Ring, PAT, NVLS, CollNetDirect; "
              "AllReduce: all but PAT");
  }
  if ((a == Algorithm::kNvls || a == Algorithm::kNvlsTree || a == Algorithm::kPat) &&
      p != Protocol::kSimple) {
    return fmt::format("{}: {} runs the Simple protocol only", what, to_string(a));
  }
  if (a == Algorithm::kNvls || a == Algorithm::kNvlsTree) {
    if (config.transport != Transport::kP2pNvlink &&
        !(c.nnodes > 1 && config.transport == Transport::kNet)) {
      return fmt::format("{}: NVLS needs NVLink SHARP; it cannot run over {}", what,
                         to_string(config.transport));
    }
    if (!c.nvls_support || c.nvls.nchannels < 2) {
      return fmt::format(
          "{}: NVLS needs NVLink SHARP (an NVSwitch system of sm90+ GPUs with "
          "multicast support); this communicator has none",
          what);
    }
    if (coll != CollKind::kAllReduce && c.max_local_ranks > kMaxNvlsArity) {
      return fmt::format("{}: NVLS {} is limited to {} local ranks (NCCL_MAX_NVLS_ARITY)", what,
                         to_string(coll), kMaxNvlsArity);
    }
  }
  if (a == Algorithm::kNvlsTree && c.nnodes == 1) {
    return fmt::format("{}: NVLSTree is disabled on a single node", what);
  }
  if (a == Algorithm::kNvls && c.nnodes > 1 && !c.collnet_enable) {
    return fmt::format("{}: multi-node NVLS needs CollNet (collnetEnable=1)", what);
  }
  if (a == Algorithm::kPat && !pat_enabled(c)) {
    return fmt::format(
        "{}: PAT is not enabled here (NCCL_PAT_ENABLE=2 allows it only with one GPU "
        "per node, sm60+ and no network device offload)",
        what);
  }
  if (a == Algorithm::kCollNetDirect || a == Algorithm::kCollNetChain) {
    if (!c.collnet_enable) {
      return fmt::format("{}: CollNet needs collnetEnable=1 and a CollNet plugin", what);
    }
    if (p != Protocol::kSimple) {
      return fmt::format("{}: CollNet runs the Simple protocol only", what);
    }
    if (a == Algorithm::kCollNetDirect && !c.has_nvswitch) {
      return fmt::format("{}: CollNetDirect needs an NVSwitch system", what);
    }
    if (c.max_local_ranks > kMaxDirectArity + 1) {
      return fmt::format("{}: CollNet is limited to {} local ranks", what, kMaxDirectArity + 1);
    }
  }
  if (p == Protocol::kLL128 && !ll128_enabled_by_default(c, c.graph(a))) {
    return fmt::format(
        "{}: NCCL {} disables LL128 here (it needs {}, one compute capability, "
        "NVLink intra-node paths (<= NVB) and inter-node paths <= {}); forcing it "
        "can corrupt data",
        what, to_string(c.version), c.version == Version::k2_18 ? "sm70, sm80 or sm90" : "sm70+",
        (c.version == Version::k2_18 || c.env.ll128_c2c) && c.compcap >= 90 ? "PXN" : "PXB");
  }
  // Remaining NCCL_ALGO/NCCL_PROTO exclusions and zero-bandwidth entries (the tables at hand,
  // not a copy of them: this runs for every collective call of every simulation).
  std::optional<Tables> built;
  const Tables& t = tables != nullptr ? *tables : built.emplace(tune_model(c));
  if (c.nranks > 1 && t.bandwidth(coll, a, p) == 0) {
    return fmt::format("{}: disabled on this communicator (zero bandwidth in NCCL's model{})", what,
                       c.env.algo.empty() && c.env.proto.empty() ? "" : ", NCCL_ALGO/NCCL_PROTO");
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> why_illegal(const CommInfo& info, CollKind coll,
                                       const CommConfig& config) {
  return why_illegal_on(resolve_comm_info(info), nullptr, coll, config);
}

std::optional<std::string> why_illegal(const Tables& tables, CollKind coll,
                                       const CommConfig& config) {
  return why_illegal_on(tables.comm, &tables, coll, config);
}

}  // namespace lagom::nccl
