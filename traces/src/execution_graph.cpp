// Collective and send/recv matching, dependents, and deadlock (cycle) detection.
#include "lagom/traces/execution_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <tuple>

#include "lagom/common/error.hpp"
#include "lagom/common/interrupt.hpp"

namespace lagom::traces {
namespace {

std::string join_ranks(const std::vector<Rank>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i == 8 && ranks.size() > 10) {
      out += fmt::format(", ... ({} more)", ranks.size() - i);
      break;
    }
    out += fmt::format("{}{}", i ? ", " : "", ranks[i]);
  }
  return out;
}

// Position of each rank within each group, for O(log g) lookups.
class GroupIndex {
 public:
  explicit GroupIndex(const Workload& w) {
    for (const Group& g : w.groups()) {
      auto& v = by_rank_.emplace_back();
      for (std::uint32_t i = 0; i < g.ranks.size(); ++i) {
        v.emplace_back(g.ranks[i], i);
      }
      std::sort(v.begin(), v.end());
    }
  }
  // Membership was checked when the workload was built.
  std::uint32_t position(GroupId g, Rank r) const {
    const auto& v = by_rank_[static_cast<std::size_t>(g)];
    return std::lower_bound(v.begin(), v.end(), std::make_pair(r, 0u))->second;
  }

 private:
  std::vector<std::vector<std::pair<Rank, std::uint32_t>>> by_rank_;
};

std::string describe_instance(const Workload& w, const ExecutionGraph& g, InstanceId i) {
  auto m = g.members(i);
  const OpId first = m.front();
  std::string out;
  if (is_collective(w.kind(first))) {
    out = fmt::format("{} on group '{}' [", to_string(w.kind(first)),
                      w.group_info(w.group(first)).name);
  } else {
    out = "send/recv [";
  }
  for (std::size_t k = 0; k < m.size(); ++k) {
    if (k == 4 && m.size() > 5) {
      out += fmt::format(", ... {} more", m.size() - k);
      break;
    }
    out += fmt::format("{}rank {} '{}'", k ? ", " : "", w.rank_of(m[k]), w.name(m[k]));
  }
  return out + "]";
}

}  // namespace

std::size_t ExecutionGraph::memory_bytes() const {
  auto vec = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
  return vec(instance_of_) + vec(member_begin_) + vec(members_) + vec(dependent_begin_) +
         vec(dependents_);
}

std::optional<OpId> measured_member(const Workload& w, const ExecutionGraph& g, InstanceId i) {
  std::optional<OpId> longest;
  for (OpId m : g.members(i)) {
    if (w.duration_ns(m) != kNoDuration &&
        (!longest || w.duration_ns(m) > w.duration_ns(*longest))) {
      longest = m;
    }
  }
  return longest;
}

ExecutionGraph analyze(const Workload& w, std::string_view where) {
  const std::string pre = where.empty() ? std::string() : fmt::format("{}: ", where);
  const OpId n = w.op_count();
  ExecutionGraph g;
  g.instance_of_.assign(n, kNoInstance);

  // --- Collectives -------------------------------------------------------------------------
  // Ops are stored rank-major (a rank's streams in order, each stream's ops in issue order), so
  // one pass numbers each rank's collectives per group in the documented order.
  const GroupIndex index(w);
  const std::size_t ngroups = w.groups().size();
  std::vector<std::vector<std::uint32_t>> issued(ngroups);  // [group][position] -> count
  for (std::size_t gi = 0; gi < ngroups; ++gi) {
    issued[gi].assign(w.groups()[gi].ranks.size(), 0);
  }
  std::vector<std::uint32_t> seq(n, 0);
  for (OpId op = 0; op < n; ++op) {
    if (is_collective(w.kind(op))) {
      const GroupId gid = w.group(op);
      seq[op] = issued[static_cast<std::size_t>(gid)][index.position(gid, w.rank_of(op))]++;
    }
  }
  std::vector<std::uint64_t> group_base(ngroups + 1, 0);  // first member slot of each group
  std::vector<std::uint32_t> group_first_instance(ngroups + 1, 0);
  for (std::size_t gi = 0; gi < ngroups; ++gi) {
    const auto& counts = issued[gi];
    auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
    if (*lo != *hi) {
      // Instance #*lo is reached by some members only: they wait forever.
      const std::uint32_t k = *lo;
      std::vector<Rank> reach, never;
      std::vector<std::string> reach_ops;
      for (std::size_t p = 0; p < counts.size(); ++p) {
        (counts[p] > k ? reach : never).push_back(w.groups()[gi].ranks[p]);
      }
      for (OpId op = 0; op < n && reach_ops.size() < 3; ++op) {
        if (is_collective(w.kind(op)) && static_cast<std::size_t>(w.group(op)) == gi &&
            seq[op] == k) {
          reach_ops.push_back(w.describe(op));
        }
      }
      throw Error(fmt::format(
          "{}deadlock: collective #{} on group '{}' is reached by rank(s) {} ({}{}) but never by "
          "rank(s) {}, which issue only {} collective(s) on '{}'",
          pre, k, w.groups()[gi].name, join_ranks(reach), fmt::join(reach_ops, ", "),
          reach.size() > reach_ops.size() ? ", ..." : "", join_ranks(never), k,
          w.groups()[gi].name));
    }
    group_first_instance[gi + 1] = group_first_instance[gi] + *lo;
    group_base[gi + 1] = group_base[gi] + std::uint64_t{*lo} * counts.size();
  }
  std::vector<OpId> coll_members(group_base[ngroups]);
  check_interrupt();  // between passes over every op (SIGINT/SIGTERM)
  for (OpId op = 0; op < n; ++op) {
    if (is_collective(w.kind(op))) {
      const GroupId gid = w.group(op);
      const auto gi = static_cast<std::size_t>(gid);
      const std::size_t size = w.groups()[gi].ranks.size();
      coll_members[group_base[gi] + seq[op] * size + index.position(gid, w.rank_of(op))] = op;
      g.instance_of_[op] = group_first_instance[gi] + seq[op];
    }
  }
  const std::uint32_t ncoll = group_first_instance[ngroups];
  g.members_ = std::move(coll_members);
  g.member_begin_.resize(ncoll + 1);
  for (std::size_t gi = 0; gi < ngroups; ++gi) {
    const std::size_t size = w.groups()[gi].ranks.size();
    for (std::uint32_t k = 0; k <= group_first_instance[gi + 1] - group_first_instance[gi]; ++k) {
      g.member_begin_[group_first_instance[gi] + k] = group_base[gi] + k * size;
    }
  }
  for (InstanceId i = 0; i < ncoll; ++i) {
    auto m = g.members(i);
    const OpId a = m.front();
    for (OpId b : m.subspan(1)) {
      if (w.kind(b) != w.kind(a) || w.bytes(b) != w.bytes(a) || w.peer(b) != w.peer(a)) {
        std::string what = w.kind(b) != w.kind(a)     ? "kind"
                           : w.bytes(b) != w.bytes(a) ? "size"
                                                      : "root";
        throw Error(fmt::format(
            "{}collective #{} on group '{}' differs in {} between ranks: {} is a {} of {} bytes{}, "
            "but {} is a {} of {} bytes{} (members of a group must issue the same collectives in "
            "the same order)",
            pre, i - group_first_instance[static_cast<std::size_t>(w.group(a))],
            w.group_info(w.group(a)).name, what, w.describe(a), to_string(w.kind(a)), w.bytes(a),
            has_root(w.kind(a)) ? fmt::format(" with root {}", w.peer(a)) : "", w.describe(b),
            to_string(w.kind(b)), w.bytes(b),
            has_root(w.kind(b)) ? fmt::format(" with root {}", w.peer(b)) : ""));
      }
      // NCCL's ranks run one configuration per collective; the model times an instance by its
      // first member's, so members that pin different ones would be timed by whichever is first.
      const nccl::ConfigOverride* pa = w.pinned_config(a);
      const nccl::ConfigOverride* pb = w.pinned_config(b);
      if ((pa == nullptr) != (pb == nullptr) || (pa != nullptr && *pa != *pb)) {
        throw Error(fmt::format(
            "{}collective #{} on group '{}': {} and {} pin different NCCL configurations (its "
            "'config'); every member of a collective must give the same one, or none",
            pre, i - group_first_instance[static_cast<std::size_t>(w.group(a))],
            w.group_info(w.group(a)).name, w.describe(a), w.describe(b)));
      }
    }
  }

  // --- Send/recv -----------------------------------------------------------------------------
  // Channel (src, dst, group); within a channel, sends and recvs in issue order pair up.
  struct P2p {
    Rank src, dst;
    GroupId group;
    bool is_recv;
    OpId op;
  };
  std::vector<P2p> p2p;
  check_interrupt();  // between passes over every op (SIGINT/SIGTERM)
  for (OpId op = 0; op < n; ++op) {
    const OpKind k = w.kind(op);
    if (k == OpKind::kSend) {
      p2p.push_back({w.rank_of(op), static_cast<Rank>(w.peer(op)), w.group(op), false, op});
    } else if (k == OpKind::kRecv) {
      p2p.push_back({static_cast<Rank>(w.peer(op)), w.rank_of(op), w.group(op), true, op});
    }
  }
  std::sort(p2p.begin(), p2p.end(), [](const P2p& a, const P2p& b) {
    return std::tie(a.src, a.dst, a.group, a.is_recv, a.op) <
           std::tie(b.src, b.dst, b.group, b.is_recv, b.op);
  });
  for (std::size_t i = 0; i < p2p.size();) {
    std::size_t j = i;
    while (j < p2p.size() && p2p[j].src == p2p[i].src && p2p[j].dst == p2p[i].dst &&
           p2p[j].group == p2p[i].group) {
      ++j;
    }
    std::size_t first_recv = i;
    while (first_recv < j && !p2p[first_recv].is_recv) {
      ++first_recv;
    }
    const std::size_t sends = first_recv - i;
    const std::size_t recvs = j - first_recv;
    const std::string on_group =
        p2p[i].group == kNoGroup ? std::string()
                                 : fmt::format(" on group '{}'", w.group_info(p2p[i].group).name);
    if (sends != recvs) {
      const bool extra_send = sends > recvs;
      const std::size_t k = std::min(sends, recvs);
      const OpId lonely = extra_send ? p2p[i + k].op : p2p[first_recv + k].op;
      throw Error(fmt::format(
          "{}deadlock: {} has no matching {} (rank {} sends {} time(s) to rank {}{}, rank {} "
          "receives {} time(s))",
          pre, w.describe(lonely), extra_send ? "recv" : "send", p2p[i].src, sends, p2p[i].dst,
          on_group, p2p[i].dst, recvs));
    }
    for (std::size_t k = 0; k < sends; ++k) {
      const OpId s = p2p[i + k].op;
      const OpId r = p2p[first_recv + k].op;
      if (w.bytes(s) != w.bytes(r)) {
        throw Error(fmt::format("{}{} sends {} bytes but the matching {} receives {} bytes", pre,
                                w.describe(s), w.bytes(s), w.describe(r), w.bytes(r)));
      }
      const auto inst = static_cast<InstanceId>(g.member_begin_.size() - 1);
      g.members_.push_back(s);
      g.members_.push_back(r);
      g.member_begin_.push_back(g.members_.size());
      g.instance_of_[s] = inst;
      g.instance_of_[r] = inst;
    }
    i = j;
  }

  // --- Dependents ----------------------------------------------------------------------------
  g.dependent_begin_.assign(n + 1, 0);
  check_interrupt();  // between passes over every op (SIGINT/SIGTERM)
  for (OpId op = 0; op < n; ++op) {
    for (OpId d : w.deps(op)) {
      ++g.dependent_begin_[d + 1];
    }
  }
  std::partial_sum(g.dependent_begin_.begin(), g.dependent_begin_.end(),
                   g.dependent_begin_.begin());
  g.dependents_.resize(w.dep_count());
  {
    std::vector<std::uint32_t> cursor(g.dependent_begin_.begin(), g.dependent_begin_.end() - 1);
    for (OpId op = 0; op < n; ++op) {
      for (OpId d : w.deps(op)) {
        g.dependents_[cursor[d]++] = op;
      }
    }
  }

  // --- Deadlock check ------------------------------------------------------------------------
  // Kahn's algorithm on the graph whose nodes are ops, with the members of each instance merged
  // into one node (a collective completes only when all its members can start). Edges: stream
  // order and deps. Whatever is left over lies on or behind a cycle.
  const std::uint32_t ninst = g.instance_count();
  auto node_of = [&](OpId op) -> std::uint32_t {
    return g.instance_of_[op] == kNoInstance ? op : n + g.instance_of_[op];
  };
  auto stream_prev = [&](OpId op) -> bool { return w.position(op) > 0; };
  std::vector<std::uint32_t> indegree(std::size_t{n} + ninst, 0);
  check_interrupt();  // between passes over every op (SIGINT/SIGTERM)
  for (OpId op = 0; op < n; ++op) {
    indegree[node_of(op)] +=
        static_cast<std::uint32_t>(w.deps(op).size()) + (stream_prev(op) ? 1 : 0);
  }
  std::vector<std::uint32_t> ready;
  for (std::uint32_t v = 0; v < n + ninst; ++v) {
    if (v < n && g.instance_of_[v] != kNoInstance) {
      continue;  // merged into its instance node
    }
    if (indegree[v] == 0) {
      ready.push_back(v);
    }
  }
  std::uint64_t done = 0;
  const std::uint64_t nodes = std::uint64_t{n} + ninst - (g.members_.size());
  auto release = [&](OpId op) {
    auto visit = [&](OpId next) {
      if (--indegree[node_of(next)] == 0) {
        ready.push_back(node_of(next));
      }
    };
    const Stream& s = w.stream(w.stream_of(op));
    if (op + 1 < s.first_op + s.op_count) {
      visit(op + 1);
    }
    for (OpId d : g.dependents(op)) {
      visit(d);
    }
  };
  while (!ready.empty()) {
    const std::uint32_t v = ready.back();
    ready.pop_back();
    ++done;
    if (v < n) {
      release(v);
    } else {
      for (OpId m : g.members(v - n)) {
        release(m);
      }
    }
  }
  if (done != nodes) {
    // Walk backwards through unfinished predecessors until a node repeats: that is a cycle.
    auto unfinished_pred = [&](std::uint32_t v) -> std::uint32_t {
      auto ops = v < n ? std::span<const OpId>(&v, 1) : g.members(v - n);
      for (OpId op : ops) {
        if (stream_prev(op) && indegree[node_of(op - 1)] > 0) {
          return node_of(op - 1);
        }
        for (OpId d : w.deps(op)) {
          if (indegree[node_of(d)] > 0) {
            return node_of(d);
          }
        }
      }
      return v;  // unreachable: a leftover node always has a leftover predecessor
    };
    std::uint32_t start = 0;
    while (indegree[start] == 0 || (start < n && g.instance_of_[start] != kNoInstance)) {
      ++start;
    }
    std::vector<std::uint32_t> path;
    std::vector<std::uint32_t> seen_at(std::size_t{n} + ninst, 0xffffffffu);
    std::uint32_t v = start;
    while (seen_at[v] == 0xffffffffu) {
      seen_at[v] = static_cast<std::uint32_t>(path.size());
      path.push_back(v);
      v = unfinished_pred(v);
    }
    std::vector<std::uint32_t> cycle(path.begin() + seen_at[v], path.end());
    std::reverse(cycle.begin(), cycle.end());
    bool through_collective = false;
    std::string text;
    for (std::size_t k = 0; k <= cycle.size(); ++k) {
      const std::uint32_t u = cycle[k % cycle.size()];
      if (k > 0) {
        text += " -> ";
      }
      if (k == 12 && cycle.size() > 13) {
        text += fmt::format("... ({} more) -> ", cycle.size() - k);
        k = cycle.size() - 1;
        continue;
      }
      if (u < n) {
        text += w.describe(u);
      } else {
        through_collective = true;
        text += describe_instance(w, g, u - n);
      }
    }
    throw Error(fmt::format(
        "{}{}: {}", pre,
        through_collective ? "deadlock: ranks wait for each other in a cycle" : "dependency cycle",
        text));
  }
  return g;
}

}  // namespace lagom::traces
