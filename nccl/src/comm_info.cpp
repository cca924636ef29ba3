// NCCL's communicator init as far as tuning needs it: graph sharing, channel counts
// (ncclTopoPostset), NVLS and p2p channels.
#include "lagom/nccl/comm_info.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string_view>
#include <vector>

#include "internal.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/units.hpp"

namespace lagom::nccl {

using namespace internal;  // NOLINT(google-build-using-namespace): this module's own rules

std::string_view to_string(Version v) {
  return v == Version::k2_18 ? "2.18" : "2.28";
}

Version version_named(std::string_view text) {
  if (text == "2.18" || text == "2.18.3") {
    return Version::k2_18;
  }
  if (text == "2.28" || text == "2.28.9") {
    return Version::k2_28;
  }
  throw Error(fmt::format(
      "unknown NCCL version '{}' (the emulation follows 2.18 = 2.18.3, the Lagom paper's "
      "baseline, and 2.28 = 2.28.9, the default)",
      text));
}

int max_channels(Version v) {
  return v == Version::k2_18 ? kMaxChannels218 : kMaxChannels;
}

const GraphInfo& CommInfo::graph(Algorithm a) const {
  switch (a) {
    case Algorithm::kTree:
    case Algorithm::kPat:
      return tree;
    case Algorithm::kRing:
      return ring;
    case Algorithm::kCollNetDirect:
      return collnet_direct;
    case Algorithm::kCollNetChain:
      return collnet_chain;
    case Algorithm::kNvls:
    case Algorithm::kNvlsTree:
      return nvls;
  }
  return ring;
}

CommInfo resolve_comm_info(const CommInfo& info) {
  CommInfo c = info;
  if (c.nranks < 1) {
    throw Error(fmt::format("NCCL communicator: nranks must be >= 1, got {}", c.nranks));
  }
  if (c.nnodes < 1 || c.nnodes > c.nranks) {
    throw Error(fmt::format("NCCL communicator: nnodes must be in 1..nranks ({}), got {}", c.nranks,
                            c.nnodes));
  }
  if (c.compcap <= 0) {
    throw Error(
        fmt::format("NCCL communicator: compute capability must be > 0, got {}", c.compcap));
  }
  if (c.max_compcap == 0) {
    c.max_compcap = c.compcap;
  }
  if (c.max_compcap < c.compcap) {
    throw Error(fmt::format("NCCL communicator: max_compcap {} is below compcap {}", c.max_compcap,
                            c.compcap));
  }
  if (c.max_local_ranks == 0) {
    c.max_local_ranks = static_cast<int>(div_up(c.nranks, c.nnodes));
  }
  const int max_ch = max_channels(c.version);
  if (c.max_ctas < 1 || c.max_ctas > kMaxChannels || c.min_ctas < 1 || c.min_ctas > kMaxChannels) {
    throw Error(fmt::format("NCCL communicator: min/max CTAs must be in 1..{}, got {}/{}",
                            kMaxChannels, c.min_ctas, c.max_ctas));
  }
  // parseCommConfig caps both at MAXCHANNELS (32 in 2.18: its default maxCTAs).
  c.max_ctas = std::min(c.max_ctas, max_ch);
  c.min_ctas = std::min(c.min_ctas, max_ch);
  if (c.min_ctas > c.max_ctas) {  // parseCommConfig: both become max
    c.min_ctas = c.max_ctas;
  }
  // init.cc: ring and tree end up with the same (smaller) channel count.
  if (c.ring.nchannels > 0 && c.tree.nchannels > 0) {
    c.ring.nchannels = c.tree.nchannels = std::min(c.ring.nchannels, c.tree.nchannels);
  }
  // connect.cc:ncclTopoPostset.
  if (c.nchannels == 0) {
    int nc = std::max(
        1, std::min(c.ring.nchannels, c.tree.nchannels > 0 ? c.tree.nchannels : c.ring.nchannels));
    nc = std::min(max_ch, nc * 2);
    if (c.collnet_enable && c.collnet_chain.bw_intra_GBps > c.collnet_chain.bw_inter_GBps &&
        c.nranks > c.nnodes) {
      nc = std::min(max_ch, nc + nc / 2);
    }
    if (c.version == Version::k2_18) {
      // 2.18.3: only sm90 exactly, and only while the doubled count fits MAXCHANNELS.
      if (c.compcap == 90 && c.nnodes > 1 && c.ring.bw_intra_GBps > 45.0 && 2 * nc <= max_ch) {
        nc *= 2;
      }
    } else {
      if (c.compcap >= 90 && c.nnodes > 1 && c.ring.bw_intra_GBps > 45.0 && nc < 16) {
        nc = std::min(max_ch, 2 * nc);
      }
      if (c.unpack_net_device && c.nnodes > 1 && nc < 16) {
        nc = std::min(max_ch, 2 * nc);
      }
    }
    nc = std::min(nc, c.max_ctas);
    nc = std::max(nc, c.min_ctas);
    c.nchannels = nc;
  }
  if (c.nchannels < 1 || c.nchannels > max_ch) {
    throw Error(fmt::format("NCCL communicator: nchannels must be in 1..{} (NCCL {}), got {}",
                            max_ch, to_string(c.version), c.nchannels));
  }
  // nvls.cc:ncclNvlsInit and connect.cc:connectNvls.
  if (c.nvls_heads == 0) {
    c.nvls_heads = c.nvls.nchannels;
  }
  if (!c.nvls_support || c.nvls_heads == 0) {
    c.nvls_channels = 0;
  } else if (c.nvls_channels == 0) {
    // 2.18.3 has only NCCL_NVLS_NCHANNELS' default of 16.
    const int def = c.compcap >= 100 && c.version != Version::k2_18
                        ? (c.nnodes > 1 ? kNvlsChannelsSm100 : kNvlsChannelsSm100Nvl)
                        : kNvlsChannelsSm90;
    c.nvls_channels = std::max(c.min_ctas, std::min(c.max_ctas, def));
  }
  if (c.collnet_heads == 0) {
    c.collnet_heads = c.collnet_direct.nchannels;
  }
  // paths.cc:ncclTopoComputeP2pChannels (NVLink peers on NVSwitch systems have enough links to
  // not limit the per-peer count; PCIe peers get 2; network peers 2, halved while
  // 2 * nRanks > 4 * p2pnChannels; 2.18.3 never halves them).
  if (c.p2p_nchannels == 0 || c.p2p_nchannels_per_peer == 0) {
    const int p2p_pre = std::max(1, std::min(c.nchannels, max_ch));
    int min_channels = p2p_pre;
    if (!c.all_nvlink && c.nnodes == 1) {
      min_channels = std::min(min_channels, 2);
    }
    if (c.nnodes > 1) {
      int net = 2;
      while (c.version != Version::k2_18 && net * c.nranks > p2p_pre * 4 && net > 1) {
        net /= 2;
      }
      min_channels = std::min(min_channels, std::max(1, net));
    }
    if (c.p2p_nchannels == 0) {
      c.p2p_nchannels = pow2_up(p2p_pre);
    }
    if (c.p2p_nchannels_per_peer == 0) {
      c.p2p_nchannels_per_peer = std::min(pow2_up(min_channels), c.p2p_nchannels);
    }
  }
  return c;
}

}  // namespace lagom::nccl
