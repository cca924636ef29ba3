// Configuration subspaces and their resource grids (see space.hpp).
#include "lagom/search/space.hpp"

#include <algorithm>

#include "lagom/nccl/legality.hpp"
#include "lagom/nccl/tuning.hpp"

namespace lagom::search {
namespace {

using nccl::Algorithm;
using nccl::CollKind;
using nccl::CommConfig;
using nccl::Protocol;

constexpr int kMaxChannels = 64;  // NCCL's MAXCHANNELS (reference/nccl.md §1.3)
constexpr int kWarp = 32;
constexpr std::int64_t kGrain[nccl::kProtocolCount] = {16, 3840, 512};  // LL, LL128, Simple
constexpr std::int64_t kLargeMessage = std::int64_t{1} << 30;
constexpr std::int64_t kP2pSimpleChunk = 512 * 1024;  // p2p: BUFFSIZE / NCCL_STEPS

constexpr Algorithm kAlgorithms[] = {
    Algorithm::kTree,         Algorithm::kRing, Algorithm::kCollNetDirect,
    Algorithm::kCollNetChain, Algorithm::kNvls, Algorithm::kNvlsTree,
    Algorithm::kPat};
constexpr Protocol kProtocols[] = {Protocol::kLL, Protocol::kLL128, Protocol::kSimple};

bool legal(const nccl::Tables& t, CollKind coll, const CommConfig& c) {
  return !nccl::why_illegal(t, coll, c).has_value();
}

// The grid of one subspace around NCCL's own configuration `base` for it.
Subspace make_subspace(const nccl::Tables& t, CollKind coll, Algorithm a, Protocol p,
                       const CommConfig& base, std::int64_t max_chunk, const SpaceOptions& o) {
  Subspace s;
  s.algo = a;
  s.proto = p;
  s.nccl = base;
  const std::int64_t grain = kGrain[nccl::index_of(p)];
  max_chunk = std::max(grain, max_chunk / grain * grain);
  // Channels.
  for (int nc = 1; nc <= kMaxChannels; nc = o.grid == Grid::kFine ? nc + 1 : nc * 2) {
    CommConfig c = base;
    c.nchannels = nc;
    if (legal(t, coll, c)) {
      s.channels.push_back(nc);
    }
  }
  // Threads.
  if (o.resources == Resources::kNccl || o.grid == Grid::kCoarse) {
    s.threads.push_back(base.nthreads);
  } else {
    for (int nt = kWarp; nt <= 1024; nt += kWarp) {
      CommConfig c = base;
      c.nthreads = nt;
      if (legal(t, coll, c)) {
        s.threads.push_back(nt);
      }
    }
  }
  // Chunks.
  if (o.resources == Resources::kNccl) {
    s.chunks.push_back(base.chunk_bytes);
  } else {
    const int steps = o.grid == Grid::kFine ? 32 : 8;
    for (int i = 1; i <= steps; ++i) {
      if (o.grid == Grid::kCoarse && i != 1 && i != 2 && i != 4 && i != 8) {
        continue;
      }
      const std::int64_t c = std::max(grain, max_chunk * i / steps / grain * grain);
      CommConfig cfg = base;
      cfg.chunk_bytes = c;
      if ((s.chunks.empty() || s.chunks.back() != c) && legal(t, coll, cfg)) {
        s.chunks.push_back(c);
      }
    }
  }
  return s;
}

}  // namespace

CommConfig Subspace::at(std::size_t c, std::size_t t, std::size_t k) const {
  CommConfig cfg = nccl;
  cfg.algo = algo;
  cfg.proto = proto;
  cfg.nchannels = channels[c];
  cfg.nthreads = threads[t];
  cfg.chunk_bytes = chunks[k];
  return cfg;
}

std::vector<Subspace> subspaces(const nccl::Tables& tables, CollKind coll, std::int64_t bytes,
                                const SpaceOptions& options) {
  std::vector<Subspace> out;
  auto keep = [&](Subspace s) {
    if (s.size() > 0) {
      out.push_back(std::move(s));
    }
  };
  if (!nccl::is_tuned(coll)) {
    // NCCL's p2p path: its own schedule (Ring by convention), LL or Simple, each at what NCCL
    // runs with that protocol (its chunk and channels; the same a plan's replay resolves).
    for (Protocol p : {Protocol::kLL, Protocol::kSimple}) {
      const CommConfig b = nccl::p2p_config_for(tables, coll, p, bytes);
      if (legal(tables, coll, b)) {
        keep(make_subspace(
            tables, coll, Algorithm::kRing, p, b,
            std::max(b.chunk_bytes, p == Protocol::kSimple ? kP2pSimpleChunk : 32 * 1024),
            options));
      }
    }
    return out;
  }
  for (Algorithm a : kAlgorithms) {
    for (Protocol p : kProtocols) {
      if (nccl::algo_time_us(tables, coll, a, p, bytes) < 0) {
        continue;  // NCCL disables it here
      }
      const CommConfig base = nccl::config_for(tables, coll, a, p, bytes);
      if (!legal(tables, coll, base)) {
        continue;
      }
      const std::int64_t max_chunk =
          nccl::config_for(tables, coll, a, p, kLargeMessage).chunk_bytes;
      keep(make_subspace(tables, coll, a, p, base, std::max(max_chunk, base.chunk_bytes), options));
    }
  }
  return out;
}

std::string_view to_string(Grid g) {
  return g == Grid::kFine ? "fine" : "coarse";
}

std::string_view to_string(Resources r) {
  return r == Resources::kFull ? "full" : "nccl";
}

}  // namespace lagom::search
