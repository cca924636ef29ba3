// What NCCL runs for one call: the argmin over the cost table (topoGetAlgoInfo), the channel and
// thread reduction, the 16 KiB cell split over channels and calcCollChunking; p2p planning
// (addP2pToPlan) for send/recv and AllToAll.
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
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

// calcCollChunking's adaptive loops, the same in 2.18.3 and 2.28.9 once started from a chunk:
// each halves (or caps) the chunk while the buffer holds too few of them per channel.
// Halves `chunk` stage by stage: while the buffer holds fewer than `min_chunks` chunks per `per`
// (channels, or channels x heads) and the chunk is above the stage's floor.
struct Halving {
  std::int64_t min_chunks;
  std::int64_t floor;
};
std::int64_t halve(std::int64_t nbytes, std::int64_t per, std::int64_t chunk,
                   std::initializer_list<Halving> stages) {
  for (const Halving& h : stages) {
    while (nbytes / (per * chunk) < h.min_chunks && chunk > h.floor) {
      chunk /= 2;
    }
  }
  return chunk;
}

std::int64_t shrink_collnet_direct(const CommInfo& c, std::int64_t nch, std::int64_t nbytes,
                                   std::int64_t chunk) {
  const std::int64_t heads = std::max(1, c.collnet_heads);
  const std::int64_t depth = ppn_int(c) > 1 ? 2 : 1;  // connect.cc: nUp/nDown ? 2 : 1
  return halve(nbytes, nch * heads, chunk,
               {{depth * 64, 131072}, {depth * 8, 65536}, {depth * 8, 32768}});
}

std::int64_t shrink_collnet_chain(const CommInfo& c, std::int64_t nch, std::int64_t nbytes,
                                  int chunk_steps) {
  const std::int64_t chunk =
      std::min<std::int64_t>(std::int64_t{256} * 1024, c.env.buffsize_bytes / kSteps * chunk_steps);
  const std::int64_t depth = ppn_int(c);  // collnetChain.depth = nRanks / nNodes
  return halve(nbytes, nch, chunk, {{depth * 64, 131072}, {depth * 8, 65536}, {depth, 32768}});
}

// NVLS and NVLSTree: stage by stage, the chunk drops to the stage's size when the buffer holds
// fewer than `times` chunks per (channel x head).
struct CapStage {
  std::int64_t times;
  std::int64_t size;
};
std::int64_t cap_below(std::int64_t ops, std::int64_t nbytes, std::int64_t chunk,
                       std::initializer_list<CapStage> stages) {
  for (const CapStage& st : stages) {
    if (nbytes < st.times * (ops * chunk) && chunk > st.size) {
      chunk = st.size;
    }
  }
  return chunk;
}

std::int64_t shrink_nvls(std::int64_t ops, std::int64_t nbytes, std::int64_t chunk) {
  return cap_below(ops, nbytes, chunk, {{64, 65536}, {8, 32768}, {2, 16384}});
}

std::int64_t shrink_nvls_tree(std::int64_t ops, std::int64_t nbytes, std::int64_t chunk) {
  return cap_below(ops, nbytes, chunk, {{32, 262144}, {16, 131072}, {4, 65536}, {1, 32768}});
}

std::int64_t shrink_tree_ll128(const CommInfo& c, std::int64_t nch, std::int64_t nbytes,
                               std::int64_t chunk) {
  const float ppn = static_cast<float>(c.nranks) / static_cast<float>(c.nnodes);
  const float nsteps_ll128 =
      static_cast<float>(1 + static_cast<double>(log2i(c.nnodes)) + 0.1 * ppn);
  // NCCL divides in integers on the left-hand side on purpose ("coverity[integer_division]").
  // NOLINTNEXTLINE(bugprone-integer-division)
  while (static_cast<float>(nbytes / (nch * chunk)) < nsteps_ll128 * 64 / ppn && chunk > 131072) {
    chunk /= 2;
  }
  // NOLINTNEXTLINE(bugprone-integer-division)
  while (static_cast<float>(nbytes / (nch * chunk)) < nsteps_ll128 * 16 / ppn && chunk > 32768) {
    chunk /= 2;
  }
  return chunk;
}

// Buffer steps per chunk (the same in 2.18.3 and 2.28.9): ALLREDUCE/ALLGATHER/REDUCESCATTER_
// CHUNKSTEPS for Ring/Simple on those functions, one step otherwise.
int coll_chunk_steps(CollKind coll, Algorithm algo, Protocol proto) {
  const bool ring_simple = proto == Protocol::kSimple && algo == Algorithm::kRing;
  return ring_simple && (coll == CollKind::kAllReduce || coll == CollKind::kAllGather ||
                         coll == CollKind::kReduceScatter)
             ? kCollChunkSteps
             : 1;
}

// calcCollChunking (enqueue.cc): the chunk of one channel (or, for CollNet, of all `nchannels`
// channels) moving `nbytes` of global bytes.
std::int64_t coll_chunk_bytes(const Tables& t, CollKind coll, Algorithm algo, Protocol proto,
                              int nchannels, std::int64_t nbytes) {
  const CommInfo& c = t.comm;
  const std::int64_t grain = kGrainBytes[index_of(proto)];
  std::int64_t step_size = buff_size(c, proto) / kSteps;
  const int chunk_steps = coll_chunk_steps(coll, algo, proto);
  std::int64_t chunk = step_size * chunk_steps;
  if (proto == Protocol::kLL) {
    chunk /= 2;
  }
  if (proto == Protocol::kLL128) {
    chunk = (chunk / kLl128LineElems) * kLl128DataElems;
  }
  const std::int64_t nch = nchannels;
  if (algo == Algorithm::kCollNetDirect) {
    chunk = shrink_collnet_direct(c, nch, nbytes, chunk);
  } else if (algo == Algorithm::kCollNetChain) {
    chunk = shrink_collnet_chain(c, nch, nbytes, chunk_steps);
  } else if (algo == Algorithm::kNvls) {
    std::int64_t max_chunk = c.env.nvls_chunk_bytes;
    if (c.nnodes > 1 &&
        t.bandwidth(CollKind::kAllReduce, Algorithm::kNvls, Protocol::kSimple) < 150) {
      max_chunk = 32768;
    }
    chunk = shrink_nvls(nch * c.nvls_heads, nbytes, std::min(chunk, max_chunk));
  } else if (algo == Algorithm::kNvlsTree) {
    chunk = c.env.nvls_chunk_bytes;
    std::int64_t max_chunk = c.env.nvlstree_max_chunk_bytes;
    if (max_chunk == -2) {
      max_chunk = c.nnodes >= 4 ? 65536 : chunk;
    }
    chunk = shrink_nvls_tree(nch * c.nvls_heads, nbytes, std::min(chunk, max_chunk));
  } else if (algo == Algorithm::kTree && proto == Protocol::kLL128) {
    chunk = shrink_tree_ll128(c, nch, nbytes, chunk);
  } else if (coll == CollKind::kAllGather && algo == Algorithm::kPat) {
    while (chunk * nch * 32 > nbytes && chunk > 65536) {
      chunk /= 2;
    }
  } else if (coll == CollKind::kReduceScatter && algo == Algorithm::kPat) {
    while (chunk * nch * 16 > nbytes && chunk > 65536) {
      chunk /= 2;
    }
  }
  return chunk / grain * grain;
}

// computeColl (nccl@v2.18.3-1 src/enqueue.cc): the chunk of each of the `nchannels` channels a
// 2.18 collective runs on, from the whole buffer of `nbytes`. Unlike 2.28 the adaptive loops
// start from the raw step (before LL's halving and LL128's 15/16), Tree/Simple shrinks with the
// tree depth, NVLS is capped at a fixed 128 KiB, NVLSTree starts at the Simple step, and nothing
// is rounded to a protocol grain.
std::int64_t coll_chunk_bytes_218(const Tables& t, CollKind coll, Algorithm algo, Protocol proto,
                                  int nchannels, std::int64_t nbytes) {
  const CommInfo& c = t.comm;
  const std::int64_t step_size = buff_size(c, proto) / kSteps;
  const int chunk_steps = coll_chunk_steps(coll, algo, proto);
  std::int64_t chunk = step_size * chunk_steps;
  const std::int64_t nch = nchannels;
  if (algo == Algorithm::kTree && proto == Protocol::kSimple) {
    const std::int64_t depth = ppn_int(c) - 1 + log2i(c.nnodes);  // connect.cc connectTrees
    chunk = halve(nbytes, nch, chunk, {{depth * 8, 131072}, {depth * 4, 65536}, {depth, 32768}});
  } else if (algo == Algorithm::kCollNetDirect) {
    chunk = shrink_collnet_direct(c, nch, nbytes, chunk);
  } else if (algo == Algorithm::kCollNetChain) {
    chunk = shrink_collnet_chain(c, nch, nbytes, chunk_steps);
  } else if (algo == Algorithm::kNvls) {
    chunk = shrink_nvls(nch * c.nvls_heads, nbytes, std::min<std::int64_t>(chunk, 131072));
  } else if (algo == Algorithm::kNvlsTree) {
    chunk = shrink_nvls_tree(nch * c.nvls_heads, nbytes, chunk);
  } else if (algo == Algorithm::kTree && proto == Protocol::kLL128) {
    chunk = shrink_tree_ll128(c, nch, nbytes, chunk);
  }
  if (proto == Protocol::kLL) {
    return chunk / 2;
  }
  if (proto == Protocol::kLL128) {
    return chunk / kLl128LineElems * kLl128DataElems;
  }
  return chunk;
}

int traffic_per_byte(CollKind coll, int nranks) {  // ncclFuncTrafficPerByte
  switch (coll) {
    case CollKind::kAllReduce:
      return 2;
    case CollKind::kAllGather:
    case CollKind::kReduceScatter:
      return nranks;
    default:
      return 1;
  }
}

// scheduleCollTasksToPlan's split of one collective (alone in its plan) into cells spread over
// channels: the number of channels used and the bytes (count * elementSize, i.e. per-rank bytes
// for AllGather/ReduceScatter) of the first channel.
struct CellSplit {
  int nchannels = 0;
  std::int64_t lo_bytes = 0;
};

CellSplit cell_split(CollKind coll, Protocol proto, int nranks, std::int64_t count_bytes,
                     int task_max_channels, int kind_max_channels) {
  CellSplit s;
  std::int64_t tpb = traffic_per_byte(coll, nranks);
  std::int64_t task_traffic = count_bytes * tpb;
  if (proto == Protocol::kLL) {
    task_traffic *= 4;
    tpb *= 4;
  }
  const std::int64_t traffic_bytes = std::max(kMinTrafficPerChannel, task_traffic);
  const std::int64_t kind_channels = std::min(task_max_channels, kind_max_channels);
  const std::int64_t traffic_per_channel =
      std::max(kMinTrafficPerChannel, traffic_bytes / kind_channels);
  const std::int64_t cell_size = div_up(div_up(kMinTrafficPerChannel, tpb), 16) * 16;
  const std::int64_t cells = div_up(count_bytes, cell_size);
  const std::int64_t traffic_per_cell = cell_size * tpb;
  std::int64_t cells_per_channel = std::min(cells, div_up(traffic_per_channel, traffic_per_cell));
  const int channel_id = 0;
  std::int64_t cells_lo = channel_id + 1 == kind_max_channels
                              ? cells
                              : std::min(cells, div_up(traffic_per_channel, traffic_per_cell));
  if (cells == 0 || cells_per_channel == 0) {  // empty collective: NCCL launches nothing
    return s;
  }
  std::int64_t n_mid = (cells - cells_lo) / cells_per_channel;
  std::int64_t cells_hi = (cells - cells_lo) % cells_per_channel;
  std::int64_t nch = (cells_lo != 0 ? 1 : 0) + n_mid + (cells_hi != 0 ? 1 : 0);
  if (kind_max_channels < channel_id + nch) {  // overflowed the available channels
    n_mid = kind_max_channels - channel_id - 2;
    cells_per_channel = (cells - cells_lo) / (n_mid + 1);
    cells_hi = cells_per_channel + (cells - cells_lo) % (n_mid + 1);
  }
  if (cells_hi == 0 && n_mid != 0) {
    cells_hi = cells_per_channel;
    n_mid -= 1;
  }
  if (cells_lo == 0) {
    if (n_mid == 0) {
      cells_lo = cells_hi;
      cells_hi = 0;
    } else {
      cells_lo = cells_per_channel;
      n_mid -= 1;
    }
  }
  std::int64_t count_lo = cells_lo * cell_size;
  std::int64_t count_hi = cells_hi * cell_size;
  (count_hi != 0 ? count_hi : count_lo) -= cells * cell_size - count_bytes;
  s.nchannels = static_cast<int>((count_lo != 0 ? 1 : 0) + n_mid + (cells_hi != 0 ? 1 : 0));
  s.lo_bytes = count_lo;
  return s;
}

Choice plan_collective(const Tables& t, CollKind coll, Algorithm algo, Protocol proto,
                       std::int64_t nbytes, int plugin_nchannels) {
  const CommInfo& c = t.comm;
  const bool v218 = c.version == Version::k2_18;
  Choice out;
  out.config.algo = algo;
  out.config.proto = proto;
  out.config.transport = transport_of(c);

  // topoGetAlgoInfo: channel and thread reduction.
  int nc = c.nchannels;
  int nt = t.max_threads[index_of(algo)][index_of(proto)];
  std::int64_t threshold = t.thread_threshold[index_of(algo)][index_of(proto)];
  if (algo == Algorithm::kCollNetDirect) {
    const std::int64_t heads = c.collnet_heads;
    int nc_switch = 16;
    bool flag = true;
    while (nc_switch >= 1 && flag) {
      while ((flag = nbytes < static_cast<std::int64_t>(nc) * nt * heads * threshold) &&
             nc > nc_switch) {
        if (nc == nc_switch + nc_switch / 2) {
          threshold /= 2;
        }
        nc--;
      }
      nc_switch /= 2;
    }
  } else if (algo == Algorithm::kNvls || algo == Algorithm::kNvlsTree) {
    nc = c.nnodes > 1 && algo == Algorithm::kNvls && !v218 ? std::min(c.nvls_channels, c.nchannels)
                                                           : c.nvls_channels;
    if (nc < 1) {  // no NVLink SHARP here: NCCL never runs it (and the cell split needs nc >= 1)
      throw Error(fmt::format("{} needs NVLink SHARP channels; this communicator has none",
                              to_string(algo)));
    }
  } else {
    while (nbytes < static_cast<std::int64_t>(nc) * nt * threshold && nc >= 2) {
      nc--;
    }
  }
  if (algo != Algorithm::kNvls && algo != Algorithm::kNvlsTree &&
      algo != Algorithm::kCollNetDirect) {
    while (nbytes < static_cast<std::int64_t>(nc) * nt * threshold && nt % 128 == 0) {
      nt /= 2;
    }
  }
  if (proto == Protocol::kSimple) {
    if (algo == Algorithm::kRing) {
      nt += kWarpSize;  // extra warp for sync
    }
    if (algo == Algorithm::kTree) {
      nt += 4 * kWarpSize;  // split thread model
    }
  }
  nt = nt / kWarpSize < 3 ? 3 * kWarpSize : nt;
  if (!v218 && (algo == Algorithm::kTree || algo == Algorithm::kPat)) {
    nt = kMaxNthreads;  // (2.18 keeps Tree's own count)
  }
  if (plugin_nchannels > 0) {
    // getAlgoInfo: a tuner's nChannels overrides nMaxChannels. 2.18 has no tuner plugin: there
    // the count is what NCCL_MIN_CTAS = NCCL_MAX_CTAS = n runs a large enough call on.
    nc = plugin_nchannels;
  }
  out.max_channels = nc;
  out.config.nthreads = nt / kWarpSize * kWarpSize;

  // 2.18 (computeColl, addCollToPlan): every algorithm runs on all nc channels, each with the
  // chunk computed from the whole buffer; there are no cells.
  if (v218) {
    out.config.nchannels = std::max(1, nc);
    out.config.chunk_bytes =
        coll_chunk_bytes_218(t, coll, algo, proto, out.config.nchannels, nbytes);
    return out;
  }
  // scheduleCollTasksToPlan: CollNet kinds (and multi-node NVLS) run on all nMaxChannels with one
  // chunk computed from the whole buffer; the others split cells over channels.
  const bool is_collnet = algo == Algorithm::kCollNetDirect || algo == Algorithm::kCollNetChain ||
                          (algo == Algorithm::kNvls && c.nnodes > 1);
  const bool is_nvls = algo == Algorithm::kNvls || algo == Algorithm::kNvlsTree;
  const bool per_rank = coll == CollKind::kAllGather || coll == CollKind::kReduceScatter;
  const std::int64_t global_per_count = per_rank ? c.nranks : 1;
  const std::int64_t count_bytes = nbytes / global_per_count;
  if (is_collnet) {
    out.config.nchannels = std::max(1, nc);
    out.config.chunk_bytes = coll_chunk_bytes(t, coll, algo, proto, out.config.nchannels,
                                              global_per_count * count_bytes);
    return out;
  }
  const int kind_max = is_nvls ? c.nvls_channels : c.nchannels;
  const CellSplit split = cell_split(coll, proto, c.nranks, count_bytes, nc, kind_max);
  if (split.nchannels == 0) {  // nothing to move: report one channel at the largest chunk
    out.config.nchannels = 1;
    out.config.chunk_bytes = coll_chunk_bytes(t, coll, algo, proto, 1, 0);
    return out;
  }
  out.config.nchannels = split.nchannels;
  out.config.chunk_bytes =
      coll_chunk_bytes(t, coll, algo, proto, 1, global_per_count * split.lo_bytes);
  return out;
}

// addP2pToPlan / scheduleP2pTasksToPlan for one peer exchange of `bytes`; `pinned`: the protocol
// when it is pinned (NCCL picks LL by size), with the chunk and channels NCCL sizes for it.
Choice plan_p2p(const Tables& t, CollKind coll, std::int64_t nbytes,
                std::optional<Protocol> pinned = std::nullopt) {
  const CommInfo& c = t.comm;
  Choice out;
  out.config.algo = Algorithm::kRing;
  out.config.transport = transport_of(c);
  out.config.nthreads = kMaxNthreads;  // the p2p kernel runs NCCL_MAX_NTHREADS
  const bool network = c.nnodes > 1;
  const std::int64_t bytes = coll == CollKind::kAllToAll ? nbytes / c.nranks : nbytes;

  // init.cc: p2pChunkSize by topology, capped at BUFFSIZE / NCCL_STEPS (2.28 only).
  std::int64_t p2p_chunk = c.nnodes > 1   ? c.env.p2p_net_chunk_bytes
                           : c.all_nvlink ? c.env.p2p_nvl_chunk_bytes
                                          : c.env.p2p_pci_chunk_bytes;
  // LL needs LL buffers on the connection: network p2p connections have none by default.
  const bool ll_buffers = !network || c.env.alloc_p2p_net_ll_buffers;
  int nch = 1;
  if (c.version == Version::k2_18) {
    // nccl@v2.18.3-1 enqueue.cc (scheduleP2pTasksToPlan, addP2pToPlan) and proxy.cc: pieces
    // sized from p2pChunkSize alone, the protocol chosen per piece (we report the first).
    int n_max = c.p2p_nchannels_per_peer;
    int n_min = n_max;
    if (c.nnodes == 1) {
      while (n_min * c.nranks > c.p2p_nchannels && n_min > 1) {
        n_min /= 2;
      }
      while (n_max * c.nranks > c.p2p_nchannels * 4 && n_max > 1) {
        n_max /= 2;
      }
    }
    const std::int64_t min_size = p2p_chunk / 8;
    const std::int64_t max_size = c.nnodes > 1 ? p2p_chunk : p2p_chunk * 32;
    std::int64_t piece = bytes;
    if (bytes > 0) {
      int n = n_min;
      std::int64_t size = std::max(min_size, div_up(bytes, n));
      while (size > max_size && n <= n_max / 2) {
        n *= 2;
        size = div_up(bytes, n);
      }
      const std::int64_t piece_max = div_up(size, min_size) * min_size;
      nch = static_cast<int>(div_up(bytes, piece_max));
      piece = std::min(bytes, piece_max);
    }
    const bool proto_ll =
        pinned ? *pinned == Protocol::kLL : ll_buffers && piece <= c.env.p2p_ll_threshold_bytes;
    out.config.proto = proto_ll ? Protocol::kLL : Protocol::kSimple;
    std::int64_t chunk = proto_ll ? c.env.ll_buffsize_bytes / kSteps : p2p_chunk;
    if (network) {
      if (piece < chunk) {
        chunk /= 4;
      } else if (piece < 8 * chunk) {
        chunk /= 2;
      }
    }
    if (c.env.chunk_size_bytes != 0) {
      chunk = c.env.chunk_size_bytes;
    }
    out.config.chunk_bytes = proto_ll ? chunk / 2 : chunk;
  } else {
    const int n_channels_max = c.p2p_nchannels_per_peer;
    int n_channels_min = n_channels_max;
    while (n_channels_min * c.nranks > c.p2p_nchannels && n_channels_min > 1) {
      n_channels_min /= 2;
    }
    if (p2p_chunk * kSteps > c.env.buffsize_bytes) {
      p2p_chunk = c.env.buffsize_bytes / kSteps;
    }
    const bool proto_ll =
        pinned ? *pinned == Protocol::kLL
               : ll_buffers && bytes <= n_channels_max * c.env.p2p_ll_threshold_bytes;
    const Protocol proto = proto_ll ? Protocol::kLL : Protocol::kSimple;
    out.config.proto = proto;
    std::int64_t step_size = proto_ll ? c.env.ll_buffsize_bytes / kSteps : p2p_chunk;
    std::int64_t chunk = step_size;
    if (c.env.chunk_size_bytes != 0) {
      chunk = c.env.chunk_size_bytes;
    } else if (network) {
      if (proto == Protocol::kSimple && bytes < step_size) {
        chunk /= 4;
      } else if (bytes < 8 * step_size) {
        chunk /= 2;
      }
    }
    std::int64_t data = chunk;
    if (proto_ll) {
      data /= 2;
    }
    data = u32fp8_round(static_cast<std::uint32_t>(data));
    out.config.chunk_bytes = data;
    if (bytes > 0) {
      const std::int64_t min_part = c.nnodes > 1 ? step_size / 2 : step_size / 8;
      const std::int64_t max_part = c.nnodes > 1 ? step_size : step_size * 32;
      nch = static_cast<int>(std::min<std::int64_t>(n_channels_min, div_up(bytes, min_part)));
      std::int64_t part = std::max(min_part, div_up(bytes, nch));
      while (part > max_part && nch <= n_channels_max / 2) {
        nch *= 2;
        part = div_up(bytes, nch);
      }
    }
  }
  out.max_channels = nch;
  out.config.nchannels = nch;
  if (coll == CollKind::kAllToAll && c.nranks > 1) {
    // Each round r (peer offset) starts at channel base bitreverse(r) (single node,
    // ncclP2pChannelBaseForRound) and uses nch consecutive p2p channels; the kernel launches one
    // CTA per channel used by any round. Across nodes NCCL groups rounds; we take the same count.
    const int p2p = c.p2p_nchannels;
    int bits = 0;
    while ((1 << bits) < p2p) {
      ++bits;
    }
    std::uint64_t mask = 0;
    for (int r = 0; r < c.nranks; ++r) {
      unsigned base = 0;
      for (int b = 0; b < bits; ++b) {
        if ((r >> b) & 1) {
          base |= 1u << (bits - 1 - b);
        }
      }
      for (int part = 0; part < nch; ++part) {
        mask |= std::uint64_t{1} << ((base + static_cast<unsigned>(part)) &
                                     static_cast<unsigned>(p2p - 1));
      }
    }
    out.config.nchannels = __builtin_popcountll(mask);
  }
  return out;
}

}  // namespace

CommConfig config_for(const Tables& tables, CollKind coll, Algorithm algo, Protocol proto,
                      std::int64_t nbytes, int plugin_nchannels) {
  require_tuned(coll, "config_for");
  if (nbytes < 0) {
    throw Error(fmt::format("config_for: negative byte count {}", nbytes));
  }
  return plan_collective(tables, coll, algo, proto, nbytes, plugin_nchannels).config;
}

CommConfig p2p_config_for(const Tables& tables, CollKind coll, Protocol proto,
                          std::int64_t nbytes) {
  if (is_tuned(coll)) {
    throw Error(fmt::format("internal: p2p_config_for called for {}", to_string(coll)));
  }
  if (nbytes < 0) {
    throw Error(fmt::format("p2p_config_for: negative byte count {}", nbytes));
  }
  return plan_p2p(tables, coll, nbytes, proto).config;
}

Choice choose(const Tables& tables, CollKind coll, std::int64_t nbytes) {
  if (nbytes < 0) {
    throw Error(fmt::format("NCCL {} of {} bytes: negative byte count", to_string(coll), nbytes));
  }
  if (!is_tuned(coll)) {
    return plan_p2p(tables, coll, nbytes);
  }
  const CommInfo& c = tables.comm;
  if (c.nranks == 1) {  // ncclLaunchOneRank: a local copy, no collective kernel
    Choice one;
    one.config.algo = Algorithm::kRing;
    one.config.proto = Protocol::kSimple;
    one.config.transport = transport_of(c);
    one.config.nchannels = 1;
    one.config.nthreads = kSimpleMaxNthreads + kWarpSize;
    one.config.chunk_bytes = c.env.buffsize_bytes / kSteps * kCollChunkSteps;
    one.max_channels = 1;
    return one;
  }
  const Tables::AlgoProto table = cost_table(tables, coll, nbytes);
  // topoGetAlgoInfo: algorithm-major scan, strict '<' keeps the first minimum. Costs are floats.
  float min_time = 3600000000.0f;
  int best_a = -1;
  int best_p = -1;
  for (int a = 0; a < kAlgorithmCount; ++a) {
    for (int p = 0; p < kProtocolCount; ++p) {
      const float v = static_cast<float>(table[a][p]);
      if (v == -1.0f) {
        continue;
      }
      if (v >= 0.0f && v < min_time) {
        best_a = a;
        best_p = p;
        min_time = v;
      }
    }
  }
  if (best_a < 0) {
    throw Error(fmt::format(
        "NCCL {} of {}: no algorithm/protocol available on this communicator{}{}", to_string(coll),
        format_bytes(nbytes), c.env.algo.empty() ? "" : fmt::format(" (NCCL_ALGO={})", c.env.algo),
        c.env.proto.empty() ? "" : fmt::format(" (NCCL_PROTO={})", c.env.proto)));
  }
  Choice choice = plan_collective(tables, coll, static_cast<Algorithm>(best_a),
                                  static_cast<Protocol>(best_p), nbytes, 0);
  choice.predicted_us = min_time;
  return choice;
}

CommConfig default_config(const CommInfo& info, CollKind coll, std::int64_t nbytes) {
  return choose(tune_model(info), coll, nbytes).config;
}

}  // namespace lagom::nccl
