// The configuration space (search/space.hpp): every grid point of every subspace is a
// configuration NCCL accepts, subspaces are the (algorithm, protocol) pairs NCCL enables, and the
// grids have the documented shapes.
#include "lagom/search/space.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "lagom/nccl/legality.hpp"
#include "lagom/nccl/tuning.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/topologies/communicator.hpp"
#include "lagom/topologies/nccl_comm_info.hpp"

namespace lagom::test {
namespace {

using nccl::Algorithm;
using nccl::CollKind;
using nccl::Protocol;
using search::Grid;
using search::Resources;
using search::SpaceOptions;
using search::Subspace;

// NCCL's view of the communicator of every GPU of `nodes` nodes of `preset`.
nccl::Tables tables_of(const char* preset, int nodes) {
  const topologies::Cluster cluster = topologies::load_cluster(preset, nodes);
  std::vector<int> ranks(static_cast<std::size_t>(cluster.gpu_count()));
  std::iota(ranks.begin(), ranks.end(), 0);
  return nccl::tune_model(
      topologies::nccl_comm_info(cluster, topologies::describe_communicator(cluster, ranks)));
}

struct Comm {
  const char* preset;
  int nodes;
};

// Paper cluster A on one and two nodes (Ring, Tree, no NVLS) and an NVSwitch machine (NVLS).
constexpr Comm kComms[] = {{"a40-nvlink", 1}, {"a40-nvlink", 2}, {"dgx-h100", 1}, {"dgx-h100", 2}};
constexpr CollKind kColls[] = {CollKind::kAllReduce, CollKind::kAllGather, CollKind::kReduceScatter,
                               CollKind::kBroadcast, CollKind::kReduce,    CollKind::kAllToAll};
constexpr std::int64_t kSizes[] = {4096, std::int64_t{1} << 20, std::int64_t{256} << 20};
constexpr SpaceOptions kOptions[] = {{Grid::kFine, Resources::kFull},
                                     {Grid::kFine, Resources::kNccl},
                                     {Grid::kCoarse, Resources::kFull},
                                     {Grid::kCoarse, Resources::kNccl}};

bool is_pow2(int v) {
  return v > 0 && (v & (v - 1)) == 0;
}

template <typename T>
bool strictly_increasing(const std::vector<T>& v) {
  return std::adjacent_find(v.begin(), v.end(), std::greater_equal<T>()) == v.end();
}

// Runs `check` on every (communicator, collective, size, options) with its subspaces.
template <typename F>
void for_every_space(F&& check) {
  for (const Comm& comm : kComms) {
    const nccl::Tables t = tables_of(comm.preset, comm.nodes);
    for (CollKind coll : kColls) {
      for (std::int64_t bytes : kSizes) {
        for (const SpaceOptions& o : kOptions) {
          SCOPED_TRACE(fmt::format("{} x{}, {} of {} B, {} grid, {} space", comm.preset, comm.nodes,
                                   nccl::to_string(coll), bytes, search::to_string(o.grid),
                                   search::to_string(o.resources)));
          check(t, coll, bytes, o, search::subspaces(t, coll, bytes, o));
        }
      }
    }
  }
}

// Checks every grid point of `subs` with why_illegal; returns how many.
std::int64_t check_every_point(const nccl::Tables& t, CollKind coll,
                               const std::vector<Subspace>& subs) {
  std::int64_t points = 0;
  EXPECT_FALSE(subs.empty());
  for (const Subspace& s : subs) {
    EXPECT_GT(s.size(), 0u);
    EXPECT_EQ(s.size(), s.channels.size() * s.threads.size() * s.chunks.size());
    for (std::size_t c = 0; c < s.channels.size(); ++c) {
      for (std::size_t th = 0; th < s.threads.size(); ++th) {
        for (std::size_t k = 0; k < s.chunks.size(); ++k) {
          const nccl::CommConfig cfg = s.at(c, th, k);
          EXPECT_EQ(cfg.algo, s.algo);
          EXPECT_EQ(cfg.proto, s.proto);
          EXPECT_EQ(cfg.nchannels, s.channels[c]);
          EXPECT_EQ(cfg.nthreads, s.threads[th]);
          EXPECT_EQ(cfg.chunk_bytes, s.chunks[k]);
          const auto why = nccl::why_illegal(t.comm, coll, cfg);
          EXPECT_FALSE(why.has_value()) << *why;
          ++points;
        }
      }
    }
  }
  return points;
}

TEST(SearchSpace, EveryPointOfEveryGridIsLegal) {
  // Every grid but the fine full one (64 x 20 x 32 points a subspace), which follows.
  std::int64_t points = 0;
  for_every_space([&](const nccl::Tables& t, CollKind coll, std::int64_t, const SpaceOptions& o,
                      const std::vector<Subspace>& subs) {
    if (o.grid == Grid::kCoarse || o.resources == Resources::kNccl) {
      points += check_every_point(t, coll, subs);
    }
  });
  EXPECT_GT(points, 1000);
}

TEST(SearchSpace, EveryPointOfTheFineFullGridIsLegal) {
  std::int64_t points = 0;
  // An all-reduce on one node of cluster A (Ring and Tree, LL and Simple); the coarse and
  // --space nccl grids of every communicator and collective are checked above.
  const nccl::Tables t = tables_of("a40-nvlink", 1);
  points += check_every_point(t, CollKind::kAllReduce,
                              search::subspaces(t, CollKind::kAllReduce, std::int64_t{1} << 20,
                                                {search::Grid::kFine, search::Resources::kFull}));
  EXPECT_GT(points, 100000);
}

TEST(SearchSpace, SubspacesAreWhatNcclEnables) {
  for_every_space([](const nccl::Tables& t, CollKind coll, std::int64_t bytes, const SpaceOptions&,
                     const std::vector<Subspace>& subs) {
    std::set<std::pair<Algorithm, Protocol>> seen;
    for (const Subspace& s : subs) {
      EXPECT_TRUE(seen.emplace(s.algo, s.proto).second) << "duplicate subspace";
      if (nccl::is_tuned(coll)) {
        // Enabled in NCCL's cost table, and its `nccl` is what NCCL runs once (algo, proto) are
        // fixed.
        EXPECT_GE(nccl::algo_time_us(t, coll, s.algo, s.proto, bytes), 0)
            << nccl::to_string(s.algo) << "/" << nccl::to_string(s.proto);
        const nccl::CommConfig n = nccl::config_for(t, coll, s.algo, s.proto, bytes);
        EXPECT_EQ(s.nccl.nchannels, n.nchannels);
        EXPECT_EQ(s.nccl.nthreads, n.nthreads);
        EXPECT_EQ(s.nccl.chunk_bytes, n.chunk_bytes);
      } else {
        // All-to-all runs on NCCL's p2p path: Ring (its schedule) with LL or Simple.
        EXPECT_EQ(s.algo, Algorithm::kRing);
        EXPECT_NE(s.proto, Protocol::kLL128);
      }
    }
    // NCCL's own choice is one of them.
    const nccl::CommConfig choice = nccl::choose(t, coll, bytes).config;
    EXPECT_TRUE(seen.count({choice.algo, choice.proto}))
        << "NCCL picks " << nccl::to_string(choice.algo) << "/" << nccl::to_string(choice.proto);
  });
}

TEST(SearchSpace, NcclResourcesKeepNcclsThreadsAndChunk) {
  for_every_space([](const nccl::Tables&, CollKind, std::int64_t, const SpaceOptions& o,
                     const std::vector<Subspace>& subs) {
    if (o.resources != Resources::kNccl) {
      return;
    }
    for (const Subspace& s : subs) {
      EXPECT_EQ(s.threads, std::vector<int>{s.nccl.nthreads});
      EXPECT_EQ(s.chunks, std::vector<std::int64_t>{s.nccl.chunk_bytes});
      EXPECT_EQ(s.size(), s.channels.size());
    }
  });
}

TEST(SearchSpace, GridShapes) {
  for_every_space([](const nccl::Tables&, CollKind, std::int64_t, const SpaceOptions& o,
                     const std::vector<Subspace>& subs) {
    for (const Subspace& s : subs) {
      EXPECT_TRUE(strictly_increasing(s.channels));
      EXPECT_TRUE(strictly_increasing(s.threads));
      EXPECT_TRUE(strictly_increasing(s.chunks));
      for (int nc : s.channels) {
        EXPECT_GE(nc, 1);
        EXPECT_LE(nc, 64);  // MAXCHANNELS
        if (o.grid == Grid::kCoarse) {
          EXPECT_TRUE(is_pow2(nc)) << nc;
        }
      }
      for (int nt : s.threads) {
        EXPECT_EQ(nt % 32, 0) << nt;
      }
      if (o.grid == Grid::kCoarse) {
        EXPECT_LE(s.channels.size(), 7u);  // 1, 2, 4, ..., 64
        EXPECT_EQ(s.threads, std::vector<int>{s.nccl.nthreads});
        EXPECT_LE(s.chunks.size(), 4u);
      } else {
        EXPECT_LE(s.chunks.size(), 32u);
      }
    }
  });
}

TEST(SearchSpace, CoarseGridIsInsideTheFineGrid) {
  const nccl::Tables t = tables_of("a40-nvlink", 2);
  for (CollKind coll : kColls) {
    for (std::int64_t bytes : kSizes) {
      const auto fine = search::subspaces(t, coll, bytes, {Grid::kFine, Resources::kFull});
      const auto coarse = search::subspaces(t, coll, bytes, {Grid::kCoarse, Resources::kFull});
      ASSERT_EQ(fine.size(), coarse.size());
      for (std::size_t i = 0; i < fine.size(); ++i) {
        EXPECT_TRUE(std::includes(fine[i].channels.begin(), fine[i].channels.end(),
                                  coarse[i].channels.begin(), coarse[i].channels.end()));
        EXPECT_LE(coarse[i].size(), fine[i].size());
      }
    }
  }
}

TEST(SearchSpace, LargeRingChunksAreFractionsOfNcclsMaximum) {
  // space.hpp: coarse chunks are max x {1/8, 1/4, 1/2, 1} rounded down to the protocol's grain,
  // with max the chunk NCCL uses for large messages: Ring/Simple 2 MiB (BUFFSIZE 4 MiB over 8
  // steps, 4 steps a chunk), LL 32 KiB (LL_BUFFSIZE 512 KiB / 8 steps, half of it data), LL128
  // 576,000 B (LL128_BUFFSIZE 4,915,200 / 8 steps x 15/16). Grains: Simple 512, LL 16, LL128 3840.
  const nccl::Tables t = tables_of("dgx-h100", 1);
  const auto subs = search::subspaces(t, CollKind::kAllReduce, std::int64_t{256} << 20,
                                      {Grid::kCoarse, Resources::kFull});
  auto expected = [](std::int64_t max, std::int64_t grain) {
    std::vector<std::int64_t> v;
    for (std::int64_t d : {8, 4, 2, 1}) {
      v.push_back(max / d / grain * grain);
    }
    return v;
  };
  int checked = 0;
  for (const Subspace& s : subs) {
    if (s.algo != Algorithm::kRing) {
      continue;
    }
    SCOPED_TRACE(nccl::to_string(s.proto));
    switch (s.proto) {
      case Protocol::kSimple:
        EXPECT_EQ(s.chunks, expected(2 << 20, 512));
        break;
      case Protocol::kLL:
        EXPECT_EQ(s.chunks, expected(32 << 10, 16));
        break;
      case Protocol::kLL128:
        EXPECT_EQ(s.chunks, expected(576000, 3840));
        break;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 3);  // H100s run all three protocols on rings (A40s, sm86, no LL128)
}

TEST(SearchSpace, NamesOfGridsAndResources) {
  EXPECT_EQ(search::to_string(Grid::kFine), "fine");
  EXPECT_EQ(search::to_string(Grid::kCoarse), "coarse");
  EXPECT_EQ(search::to_string(Resources::kFull), "full");
  EXPECT_EQ(search::to_string(Resources::kNccl), "nccl");
}

}  // namespace
}  // namespace lagom::test
