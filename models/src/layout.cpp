// The parallel layout of a generated step (see layout.hpp).
#include "layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace lagom::models::internal {

using traces::GroupId;
using traces::Rank;

Coord RankLayout::coord(int r) const {
  const int dp = p_.dp / dp_fold_;
  const int tp = p_.tp / tp_fold_;
  const int tc = tp * p_.cp;
  return Coord{r % tp, (r / tp) % p_.cp, (r / tc) % p_.ep, (r / (tc * p_.ep)) % dp,
               r / (tc * p_.ep * dp)};
}

int RankLayout::gpu_of(const Coord& c) const {
  const int position = c.tp + p_.tp * (c.cp + p_.cp * (c.ep + p_.ep * (c.dp + p_.dp * c.pp)));
  return placement_ ? static_cast<int>((*placement_)[static_cast<std::size_t>(position)])
                    : position;
}

int RankLayout::rank_of(const Coord& c) const {
  const int dp = p_.dp / dp_fold_;
  const int tp = p_.tp / tp_fold_;
  return c.tp + tp * (c.cp + p_.cp * (c.ep + p_.ep * (c.dp + dp * c.pp)));
}

namespace {

// The GPU sets of the other instances of a folded communicator (traces::Group::mirrors): the
// same communicator at every folded coordinate (tensor-parallel rank, data-parallel replica) it
// does not already span. `instance(shift)` lists the GPUs of the instance at `shift` (a Coord
// whose tp and dp are the offsets to add).
template <typename Instance>
std::vector<std::vector<std::uint32_t>> mirrors_of(const RankLayout& layout, Instance instance) {
  std::vector<std::vector<std::uint32_t>> out;
  if (layout.fold() == 1) {
    return out;
  }
  // A communicator spans a folded axis when moving along it gives the same instance
  // (communicators partition the GPUs: two instances are the same or share no GPU); its
  // mirrors are the instances at every offset along the folded axes it does not span.
  const std::vector<std::uint32_t> own = instance(Coord{0, 0, 0, 0, 0});
  const auto spans = [&](const Coord& step) {
    const std::vector<std::uint32_t> moved = instance(step);
    return std::find(own.begin(), own.end(), moved.front()) != own.end();
  };
  const int dps = layout.dp_fold() > 1 && !spans(Coord{0, 0, 0, 1, 0}) ? layout.dp_fold() : 1;
  const int tps = layout.tp_fold() > 1 && !spans(Coord{1, 0, 0, 0, 0}) ? layout.tp_fold() : 1;
  out.reserve(static_cast<std::size_t>(dps) * static_cast<std::size_t>(tps) - 1);
  for (int dp = 0; dp < dps; ++dp) {
    for (int tp = 0; tp < tps; ++tp) {
      if (dp != 0 || tp != 0) {
        out.push_back(instance(Coord{tp, 0, 0, dp, 0}));
      }
    }
  }
  return out;
}

Coord shifted(Coord c, const Coord& by) {
  c.tp += by.tp;
  c.dp += by.dp;
  return c;
}

// One communicator per set of GPUs that vary only along `vary`'s axis. Workload members are the
// positions that are simulated (RankLayout::simulated); `gpus` all of them.
template <typename Vary>
void build_groups(const RankLayout& layout, traces::WorkloadBuilder& b, std::vector<GroupId>& of,
                  std::string_view prefix, Vary vary, int size) {
  if (size <= 1) {
    return;
  }
  const bool folded = layout.fold() > 1;
  int next = 0;
  for (int r = 0; r < layout.rank_count(); ++r) {
    if (of[static_cast<std::size_t>(r)] != traces::kNoGroup) {
      continue;
    }
    std::vector<Rank> members;
    std::vector<std::uint32_t> gpus;
    for (int i = 0; i < size; ++i) {
      const Coord c = vary(layout.coord(r), i);
      gpus.push_back(static_cast<std::uint32_t>(layout.gpu_of(c)));
      if (layout.simulated(c)) {
        members.push_back(static_cast<Rank>(layout.rank_of(c)));
      }
    }
    if (!folded && !layout.placed()) {
      gpus.clear();  // the ranks are the GPUs
    }
    auto mirrors = mirrors_of(layout, [&](const Coord& by) {
      std::vector<std::uint32_t> m;
      for (int i = 0; i < size; ++i) {
        m.push_back(
            static_cast<std::uint32_t>(layout.gpu_of(vary(shifted(layout.coord(r), by), i))));
      }
      return m;
    });
    const GroupId g =
        b.add_group(fmt::format("{}{}", prefix, next++), members, gpus, std::move(mirrors));
    for (Rank m : members) {
      of[m] = g;
    }
  }
}

// Communicators along one axis of the layout: the GPUs that differ only in `axis`.
auto along(int Coord::*axis) {
  return [axis](Coord c, int i) {
    c.*axis = i;
    return c;
  };
}

}  // namespace

Communicators make_communicators(const RankLayout& layout, const Parallelism& p,
                                 traces::WorkloadBuilder& b) {
  const auto nranks = static_cast<std::size_t>(layout.rank_count());
  Communicators c;
  c.tp.assign(nranks, traces::kNoGroup);
  c.cp = c.tp;
  c.dp = c.tp;
  c.ep = c.tp;
  c.edp = c.tp;
  build_groups(layout, b, c.tp, "tp", along(&Coord::tp), p.tp);
  build_groups(layout, b, c.cp, "cp", along(&Coord::cp), p.cp);
  build_groups(layout, b, c.ep, "ep", along(&Coord::ep), p.ep);
  // Expert weights are alike over the context-parallel and data-parallel coordinates.
  build_groups(
      layout, b, c.edp, "edp",
      [&p](Coord k, int i) {
        k.cp = i % p.cp;
        k.dp = i / p.cp;
        return k;
      },
      p.cp * p.dp);
  // Dense weights over the context-parallel, expert-parallel and data-parallel coordinates.
  build_groups(
      layout, b, c.dp, "dp",
      [&p](Coord k, int i) {
        k.cp = i % p.cp;
        k.ep = (i / p.cp) % p.ep;
        k.dp = i / (p.cp * p.ep);
        return k;
      },
      static_cast<int>(p.weight_replicas()));  // <= 2^24 (generate_step checks)
  // Placed around down nodes: a rank in no communicator still needs its GPU named.
  if (layout.placed() && layout.fold() == 1) {
    for (std::size_t r = 0; r < nranks; ++r) {
      if (c.tp[r] == traces::kNoGroup && c.dp[r] == traces::kNoGroup &&
          c.ep[r] == traces::kNoGroup && c.edp[r] == traces::kNoGroup &&
          c.cp[r] == traces::kNoGroup) {
        b.add_group(fmt::format("place{}", r), {static_cast<Rank>(r)},
                    {static_cast<std::uint32_t>(layout.gpu_of(layout.coord(static_cast<int>(r))))});
      }
    }
  }
  // Folded pipelines send between stages on two-rank communicators that carry the GPUs.
  if (layout.fold() > 1 && p.pp > 1) {
    c.pp_pair.assign(nranks, {traces::kNoGroup, traces::kNoGroup});
    int next = 0;
    for (std::size_t r = 0; r < nranks; ++r) {
      const Coord a = layout.coord(static_cast<int>(r));
      Coord to = a;
      to.pp = (a.pp + 1) % p.pp;
      const auto rb = static_cast<std::size_t>(layout.rank_of(to));
      auto mirrors = mirrors_of(layout, [&](const Coord& by) {
        return std::vector<std::uint32_t>{
            static_cast<std::uint32_t>(layout.gpu_of(shifted(a, by))),
            static_cast<std::uint32_t>(layout.gpu_of(shifted(to, by)))};
      });
      const GroupId g =
          b.add_group(fmt::format("pp{}", next++), {static_cast<Rank>(r), static_cast<Rank>(rb)},
                      {static_cast<std::uint32_t>(layout.gpu_of(a)),
                       static_cast<std::uint32_t>(layout.gpu_of(to))},
                      std::move(mirrors));
      c.pp_pair[r][1] = g;   // to the next stage
      c.pp_pair[rb][0] = g;  // from the previous stage
    }
  }
  return c;
}

std::vector<int> stage_first_layers(int layers, int stages) {
  const int per = (layers + stages - 1) / stages;
  const int missing = per * stages - layers;
  std::vector<int> first(static_cast<std::size_t>(stages) + 1, 0);
  for (int v = 0; v < stages; ++v) {
    int n = per;
    if (missing >= 1 && v == 0) {
      n -= 1;
    }
    if (missing >= 2 && v == stages - 1) {
      n -= 1;
    }
    first[static_cast<std::size_t>(v) + 1] = first[static_cast<std::size_t>(v)] + n;
  }
  return first;
}

}  // namespace lagom::models::internal
