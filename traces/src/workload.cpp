// Workload storage and the builder that checks and freezes it.
#include "lagom/traces/workload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "lagom/common/error.hpp"

namespace lagom::traces {
namespace {

constexpr std::array<std::string_view, kOpKindCount> kKindNames = {
    "compute",   "memcpy", "allreduce", "allgather", "reducescatter",
    "broadcast", "reduce", "alltoall",  "send",      "recv"};

// Hashes a ComputeShape by its fields' bits (with -0.0 flops taken as 0.0, which equals it).
struct ComputeShapeHash {
  std::size_t operator()(const ComputeShape& s) const {
    std::uint64_t h = std::bit_cast<std::uint64_t>(s.flops + 0.0);  // -0.0 + 0.0 is +0.0
    for (std::uint64_t v : {std::uint64_t{static_cast<std::uint32_t>(s.blocks)},
                            std::uint64_t{static_cast<std::uint32_t>(s.blocks_per_sm)},
                            std::uint64_t{static_cast<std::uint8_t>(s.cls)},
                            std::uint64_t{static_cast<std::uint8_t>(s.precision)}}) {
      h = (h ^ v) * 0x100000001b3ULL + (h >> 29);
    }
    return static_cast<std::size_t>(h);
  }
};

std::string prefix(std::string_view where) {
  return where.empty() ? std::string() : fmt::format("{}: ", where);
}

}  // namespace

std::string_view to_string(OpKind kind) {
  return kKindNames[static_cast<std::size_t>(kind)];
}

namespace {
constexpr std::array<std::string_view, kComputeClassCount> kClassNames = {
    "other", "gemm", "attention", "elementwise", "norm", "optimizer"};
}  // namespace

std::string_view to_string(ComputeClass c) {
  return kClassNames[static_cast<std::size_t>(c)];
}

std::optional<ComputeClass> parse_compute_class(std::string_view name) {
  for (std::size_t i = 0; i < kClassNames.size(); ++i) {
    if (kClassNames[i] == name) {
      return static_cast<ComputeClass>(i);
    }
  }
  return std::nullopt;
}

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp8:
      return "fp8";
    case Precision::kFp32:
      return "fp32";
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view name) {
  if (name == "bf16" || name == "fp16") {
    return Precision::kBf16;
  }
  if (name == "fp8") {
    return Precision::kFp8;
  }
  if (name == "fp32") {
    return Precision::kFp32;
  }
  return std::nullopt;
}

std::optional<nccl::CollKind> coll_kind_of(OpKind kind) {
  using nccl::CollKind;
  switch (kind) {
    case OpKind::kAllReduce:
      return CollKind::kAllReduce;
    case OpKind::kAllGather:
      return CollKind::kAllGather;
    case OpKind::kReduceScatter:
      return CollKind::kReduceScatter;
    case OpKind::kBroadcast:
      return CollKind::kBroadcast;
    case OpKind::kReduce:
      return CollKind::kReduce;
    case OpKind::kAllToAll:
      return CollKind::kAllToAll;
    case OpKind::kSend:
    case OpKind::kRecv:
      return CollKind::kSendRecv;
    case OpKind::kCompute:
    case OpKind::kMemcpy:
      return std::nullopt;
  }
  return std::nullopt;
}

std::string_view article(std::string_view word) {
  return !word.empty() && std::string_view("aeiou").find(word.front()) != std::string_view::npos
             ? "an"
             : "a";
}

std::optional<OpKind> parse_op_kind(std::string_view name) {
  for (std::size_t i = 0; i < kKindNames.size(); ++i) {
    if (kKindNames[i] == name) {
      return static_cast<OpKind>(i);
    }
  }
  return std::nullopt;
}

std::optional<GroupId> Workload::find_group(std::string_view name) const {
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g].name == name) {
      return static_cast<GroupId>(g);
    }
  }
  return std::nullopt;
}

std::string Workload::name(OpId op) const {
  std::string out;
  append_name(out, op);
  return out;
}

void Workload::append_name(std::string& out, OpId op) const {
  if (!name_begin_.empty()) {
    out.append(names_, name_begin_[op], name_begin_[op + 1] - name_begin_[op]);
    return;
  }
  const Stream& s = streams_[stream_[op]];
  // By hand: this runs for every op of a streamed report.
  std::array<char, 24> digits{};
  if (!number_.empty() && number_[op] != kNoNumber) {
    out += 'r';
    out.append(digits.data(), std::to_chars(digits.begin(), digits.end(), s.rank).ptr);
    out += ".n";
    out.append(digits.data(), std::to_chars(digits.begin(), digits.end(), number_[op]).ptr);
    return;
  }
  if (!label_of_.empty() && label_of_[op] != kNoLabel) {
    out += 'r';
    out.append(digits.data(), std::to_chars(digits.begin(), digits.end(), s.rank).ptr);
    out += '/';
    out += labels_[label_of_[op]];
    if (label_mb_[op] >= 0) {
      out += ".mb";
      out.append(digits.data(), std::to_chars(digits.begin(), digits.end(), label_mb_[op]).ptr);
    }
    return;
  }
  fmt::format_to(std::back_inserter(out), "r{}/{}/{}", s.rank, s.name, op - s.first_op);
}

std::string Workload::label(OpId op) const {
  if (label_of_.empty() || label_of_[op] == kNoLabel) {
    return {};
  }
  const std::string& what = labels_[label_of_[op]];
  return label_mb_[op] < 0 ? what : fmt::format("{}.mb{}", what, label_mb_[op]);
}

std::optional<OpId> Workload::find_op(std::string_view name) const {
  for (OpId op = 0; op < op_count(); ++op) {
    if (this->name(op) == name) {
      return op;
    }
  }
  return std::nullopt;
}

const nccl::ConfigOverride* Workload::pinned_config(OpId op) const {
  auto it = std::lower_bound(pinned_.begin(), pinned_.end(), op,
                             [](const auto& e, OpId o) { return e.first < o; });
  return it != pinned_.end() && it->first == op ? &it->second : nullptr;
}

const ComputeShape* Workload::compute_shape(OpId op) const {
  if (shape_of_.empty() || shape_of_[op] == kNoShape) {
    return nullptr;
  }
  return &shapes_[shape_of_[op]];
}

std::string Workload::describe(OpId op) const {
  const Stream& s = streams_[stream_[op]];
  return fmt::format("op '{}' (rank {}, stream '{}', #{})", name(op), s.rank, s.name,
                     op - s.first_op);
}

std::size_t Workload::memory_bytes() const {
  auto vec = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
  std::size_t total = vec(kind_) + vec(stream_) + vec(group_) + vec(peer_) + vec(bytes_) +
                      vec(duration_ns_) + vec(dep_begin_) + vec(deps_) + vec(name_begin_) +
                      names_.capacity() + vec(streams_) + vec(rank_streams_) + vec(pinned_) +
                      vec(shapes_) + vec(shape_of_) + vec(number_) + vec(label_of_) +
                      vec(label_mb_) + vec(labels_);
  for (const std::string& l : labels_) {
    total += l.capacity();
  }
  for (const Stream& s : streams_) {
    total += s.name.capacity();
  }
  for (const Group& g : groups_) {
    total += vec(g.ranks) + vec(g.gpus) + vec(g.mirrors) + g.name.capacity();
    for (const std::vector<std::uint32_t>& m : g.mirrors) {
      total += vec(m);
    }
  }
  return total;
}

WorkloadBuilder::WorkloadBuilder(std::uint32_t rank_count) : rank_count_(rank_count) {
  if (rank_count == 0) {
    throw Error("a workload needs at least one rank");
  }
}

GroupId WorkloadBuilder::add_group(std::string name, std::vector<Rank> ranks,
                                   std::vector<std::uint32_t> gpus,
                                   std::vector<std::vector<std::uint32_t>> mirrors) {
  if (group_names_.contains(name)) {
    throw Error(fmt::format("group '{}' is defined twice", name));
  }
  if (ranks.empty()) {
    throw Error(fmt::format("group '{}' has no ranks", name));
  }
  std::vector<Rank> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] >= rank_count_) {
      throw Error(fmt::format("group '{}' lists rank {}, but the workload has ranks 0..{}", name,
                              sorted[i], rank_count_ - 1));
    }
    if (i > 0 && sorted[i] == sorted[i - 1]) {
      throw Error(fmt::format("group '{}' lists rank {} twice", name, sorted[i]));
    }
  }
  if (!gpus.empty()) {
    if (gpus.size() < ranks.size()) {
      throw Error(
          fmt::format("group '{}' spans {} GPUs but has {} ranks: 'gpus' must list at "
                      "least as many",
                      name, gpus.size(), ranks.size()));
    }
    std::vector<std::uint32_t> g = gpus;
    std::sort(g.begin(), g.end());
    if (std::adjacent_find(g.begin(), g.end()) != g.end()) {
      throw Error(fmt::format("group '{}' lists a GPU twice in 'gpus'", name));
    }
  }
  if (!mirrors.empty()) {
    const std::size_t span = gpus.empty() ? ranks.size() : gpus.size();
    std::vector<std::uint32_t> all = gpus;
    if (gpus.empty()) {
      all.assign(ranks.begin(), ranks.end());
    }
    for (std::size_t m = 0; m < mirrors.size(); ++m) {
      if (mirrors[m].size() != span) {
        throw Error(fmt::format(
            "group '{}': mirror {} lists {} GPUs, but the group spans {}: each mirror is another "
            "instance of the same communicator",
            name, m, mirrors[m].size(), span));
      }
      all.insert(all.end(), mirrors[m].begin(), mirrors[m].end());
    }
    std::sort(all.begin(), all.end());
    if (auto dup = std::adjacent_find(all.begin(), all.end()); dup != all.end()) {
      throw Error(fmt::format(
          "group '{}': GPU {} is in two of its instances ('gpus' or the ranks, and 'mirrors')",
          name, *dup));
    }
  }
  group_names_.insert(name);
  groups_.push_back(Group{std::move(name), std::move(ranks), std::move(gpus), std::move(mirrors)});
  return static_cast<GroupId>(groups_.size() - 1);
}

StreamId WorkloadBuilder::add_stream(Rank rank, std::string name) {
  if (rank >= rank_count_) {
    throw Error(fmt::format("stream '{}' is on rank {}, but the workload has ranks 0..{}", name,
                            rank, rank_count_ - 1));
  }
  stream_rank_.push_back(rank);
  stream_name_.push_back(std::move(name));
  return static_cast<StreamId>(stream_rank_.size() - 1);
}

void WorkloadBuilder::reserve_ops(std::size_t n, std::size_t deps, std::size_t shapes) {
  deps_.reserve(deps);
  shapes_.reserve(shapes);
  kind_.reserve(n);
  stream_.reserve(n);
  group_.reserve(n);
  peer_.reserve(n);
  bytes_.reserve(n);
  duration_ns_.reserve(n);
}

OpId WorkloadBuilder::add_op(StreamId stream, const OpSpec& spec, std::string_view id) {
  if (kind_.size() >= std::numeric_limits<OpId>::max() - 1) {
    throw Error("a workload holds at most 4,294,967,293 ops");
  }
  if (stream >= stream_rank_.size()) {
    throw Error(fmt::format("op '{}' is added to stream {}, which does not exist", id, stream));
  }
  kind_.push_back(spec.kind);
  stream_.push_back(stream);
  group_.push_back(spec.group);
  peer_.push_back(spec.peer);
  bytes_.push_back(spec.bytes);
  duration_ns_.push_back(spec.duration_ns);
  // Name offsets are only kept once some op has an id, so that programmatically generated
  // workloads (tens of millions of ops, no ids) pay nothing for names.
  if (!id.empty() && !any_name_) {
    any_name_ = true;
    name_begin_.assign(kind_.size(), 0);  // ops so far: empty names
  }
  if (any_name_) {
    names_.append(id);
    name_begin_.push_back(names_.size());
  }
  if (!label_of_.empty()) {
    label_of_.push_back(Workload::kNoLabel);
    label_mb_.push_back(-1);
  }
  if (!number_.empty()) {
    number_.push_back(Workload::kNoNumber);
  }
  return static_cast<OpId>(kind_.size() - 1);
}

void WorkloadBuilder::set_number(OpId op, std::uint64_t number) {
  if (number == Workload::kNoNumber) {
    throw Error(
        fmt::format("op #{}: number {} is reserved (give the op that id as text)", op, number));
  }
  if (number_.empty()) {
    number_.assign(kind_.size(), Workload::kNoNumber);  // ops so far: none
    number_.reserve(kind_.capacity());
  }
  number_.at(op) = number;
}

void WorkloadBuilder::set_label(OpId op, std::string_view label, std::int32_t micro_batch) {
  if (label_of_.empty()) {
    label_of_.assign(kind_.size(), Workload::kNoLabel);  // ops so far: none
    label_mb_.assign(kind_.size(), -1);
    label_of_.reserve(kind_.capacity());
    label_mb_.reserve(kind_.capacity());
  }
  // Looked up without a copy: most labels repeat (every rank of a stage emits the same ones).
  auto it = label_index_.find(label);
  if (it == label_index_.end()) {
    it = label_index_.emplace(std::string(label), static_cast<std::uint32_t>(labels_.size())).first;
    labels_.emplace_back(label);
  }
  label_of_.at(op) = it->second;
  label_mb_[op] = micro_batch;
}

void WorkloadBuilder::add_dep(OpId op, OpId must_finish_first) {
  deps_.emplace_back(op, must_finish_first);
}

void WorkloadBuilder::pin_config(OpId op, nccl::ConfigOverride config) {
  pinned_.emplace_back(op, std::move(config));
}

void WorkloadBuilder::set_compute_shape(OpId op, ComputeShape shape) {
  shapes_.emplace_back(op, shape);
}

Workload WorkloadBuilder::build(std::string_view where) && {
  const std::string pre = prefix(where);
  const std::size_t n = kind_.size();
  const std::size_t nstreams = stream_rank_.size();
  if (n >= std::numeric_limits<OpId>::max()) {
    throw Error(pre + "too many ops");
  }

  // Streams: sort by rank (stable, so a rank's streams keep their order), renumber.
  std::vector<StreamId> stream_order(nstreams);
  std::iota(stream_order.begin(), stream_order.end(), 0);
  std::stable_sort(stream_order.begin(), stream_order.end(),
                   [&](StreamId a, StreamId b) { return stream_rank_[a] < stream_rank_[b]; });
  std::vector<StreamId> new_stream(nstreams);
  for (std::size_t i = 0; i < nstreams; ++i) {
    new_stream[stream_order[i]] = static_cast<StreamId>(i);
  }
  // A rank's streams must have distinct names (streams per rank are few: quadratic is fine).
  for (std::size_t i = 0; i < nstreams;) {
    std::size_t j = i;
    while (j < nstreams && stream_rank_[stream_order[j]] == stream_rank_[stream_order[i]]) {
      ++j;
    }
    for (std::size_t a = i; a < j; ++a) {
      for (std::size_t b = a + 1; b < j; ++b) {
        if (stream_name_[stream_order[a]] == stream_name_[stream_order[b]]) {
          throw Error(fmt::format("{}rank {} has two streams named '{}'", pre,
                                  stream_rank_[stream_order[a]], stream_name_[stream_order[a]]));
        }
      }
    }
    i = j;
  }

  // Ops: counting sort by new stream id, stable (issue order within a stream is kept).
  std::vector<std::uint32_t> stream_count(nstreams + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    ++stream_count[new_stream[stream_[i]] + 1];
  }
  std::partial_sum(stream_count.begin(), stream_count.end(), stream_count.begin());
  std::vector<OpId> new_id(n);
  {
    std::vector<std::uint32_t> cursor(stream_count.begin(), stream_count.end() - 1);
    for (std::size_t i = 0; i < n; ++i) {
      new_id[i] = cursor[new_stream[stream_[i]]]++;
    }
  }

  // Each rank runs on one GPU, whatever group names it, and no two ranks share one.
  std::vector<std::uint32_t> rank_gpu(rank_count_);
  std::iota(rank_gpu.begin(), rank_gpu.end(), 0u);
  {
    std::vector<std::int64_t> from(rank_count_, -1);  // the group that set rank_gpu[r]
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
      const Group& g = groups_[gi];
      if (g.gpus.empty()) {
        continue;
      }
      for (std::size_t i = 0; i < g.ranks.size(); ++i) {
        const Rank r = g.ranks[i];
        if (from[r] >= 0 && rank_gpu[r] != g.gpus[i]) {
          throw Error(fmt::format(
              "{}rank {} runs on GPU {} in group '{}' but on GPU {} in group '{}' (the i-th rank "
              "of a group runs on its i-th GPU)",
              pre, r, rank_gpu[r], groups_[static_cast<std::size_t>(from[r])].name, g.gpus[i],
              g.name));
        }
        rank_gpu[r] = g.gpus[i];
        from[r] = static_cast<std::int64_t>(gi);
      }
    }
    for (const Group& g : groups_) {
      if (!g.gpus.empty()) {
        continue;
      }
      for (Rank r : g.ranks) {
        if (from[r] >= 0 && rank_gpu[r] != r) {
          throw Error(fmt::format(
              "{}rank {} runs on GPU {} in group '{}', but group '{}' lists its ranks without "
              "'gpus' (which makes rank {} GPU {}): give '{}' its 'gpus' too",
              pre, r, rank_gpu[r], groups_[static_cast<std::size_t>(from[r])].name, g.name, r, r,
              g.name));
        }
      }
    }
    std::vector<std::uint32_t> sorted = rank_gpu;
    std::sort(sorted.begin(), sorted.end());
    if (auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end()) {
      std::vector<Rank> on;
      for (Rank r = 0; r < rank_count_; ++r) {
        if (rank_gpu[r] == *dup) {
          on.push_back(r);
        }
      }
      throw Error(
          fmt::format("{}ranks {} would all run on GPU {}", pre, fmt::join(on, " and "), *dup));
    }
    // A mirror stands for GPUs the workload does not simulate: none may run a rank.
    for (const Group& g : groups_) {
      for (const std::vector<std::uint32_t>& m : g.mirrors) {
        for (std::uint32_t gpu : m) {
          if (std::binary_search(sorted.begin(), sorted.end(), gpu)) {
            const auto r = static_cast<Rank>(std::find(rank_gpu.begin(), rank_gpu.end(), gpu) -
                                             rank_gpu.begin());
            throw Error(fmt::format(
                "{}group '{}' has a mirror on GPU {}, where rank {} runs: mirrors stand for "
                "instances on GPUs the workload does not simulate",
                pre, g.name, gpu, r));
          }
        }
      }
    }
  }

  Workload w;
  w.rank_gpu_ = std::move(rank_gpu);
  w.groups_ = std::move(groups_);
  w.streams_.resize(nstreams);
  w.rank_streams_.assign(rank_count_ + 1, 0);
  for (std::size_t i = 0; i < nstreams; ++i) {
    StreamId old = stream_order[i];
    w.streams_[i] = Stream{stream_rank_[old], std::move(stream_name_[old]), stream_count[i],
                           stream_count[i + 1] - stream_count[i]};
    ++w.rank_streams_[stream_rank_[old] + 1];
  }
  std::partial_sum(w.rank_streams_.begin(), w.rank_streams_.end(), w.rank_streams_.begin());

  // A numbered op's name, as its id would be written.
  auto numbered_name = [&](std::size_t i) {
    return fmt::format("r{}.n{}", stream_rank_[stream_[i]], number_[i]);
  };
  auto op_name = [&](std::size_t i) -> std::string {
    std::string id =
        any_name_ ? names_.substr(name_begin_[i], name_begin_[i + 1] - name_begin_[i]) : "";
    if (id.empty() && !number_.empty() && number_[i] != Workload::kNoNumber) {
      id = numbered_name(i);
    }
    return id.empty() ? fmt::format("#{} on rank {} stream '{}'", i, stream_rank_[stream_[i]],
                                    w.streams_[new_stream[stream_[i]]].name)
                      : fmt::format("'{}'", id);
  };
  // Ops added stream by stream in stream order keep their ids: their columns move as they are.
  bool identity = true;
  for (std::size_t i = 0; i < n && identity; ++i) {
    identity = new_id[i] == i;
  }
  auto permute = [&](auto& src, auto& dst) {
    if (identity) {
      dst = std::move(src);
      if (dst.capacity() > dst.size() + dst.size() / 4) {
        dst.shrink_to_fit();
      }
      return;
    }
    dst.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      dst[new_id[i]] = src[i];
    }
    src.clear();
    src.shrink_to_fit();
  };
  std::vector<StreamId> stream_new(n);
  for (std::size_t i = 0; i < n; ++i) {
    stream_new[new_id[i]] = new_stream[stream_[i]];
  }
  w.stream_ = std::move(stream_new);

  // Op-local checks, in original (file) order so the first error reported is the first in the file.
  // Membership by binary search in each group's sorted ranks (a world group's collectives would
  // otherwise cost ranks x ranks).
  std::vector<std::vector<Rank>> sorted_members(w.groups_.size());
  for (std::size_t gi = 0; gi < w.groups_.size(); ++gi) {
    sorted_members[gi] = w.groups_[gi].ranks;
    std::sort(sorted_members[gi].begin(), sorted_members[gi].end());
  }
  auto is_member = [&](GroupId g, Rank r) {
    const std::vector<Rank>& m = sorted_members[static_cast<std::size_t>(g)];
    return std::binary_search(m.begin(), m.end(), r);
  };
  for (std::size_t i = 0; i < n; ++i) {
    const OpKind k = kind_[i];
    const Rank r = stream_rank_[stream_[i]];
    if (bytes_[i] < 0) {
      throw Error(fmt::format("{}op {}: bytes must be >= 0, got {}", pre, op_name(i), bytes_[i]));
    }
    if (duration_ns_[i] < kNoDuration) {
      throw Error(fmt::format("{}op {}: duration must be >= 0", pre, op_name(i)));
    }
    const GroupId g = group_[i];
    if (g != kNoGroup && (g < 0 || static_cast<std::size_t>(g) >= w.groups_.size())) {
      throw Error(fmt::format("{}op {}: unknown group #{}", pre, op_name(i), g));
    }
    if (is_collective(k) && g == kNoGroup) {
      throw Error(fmt::format("{}op {}: {} {} needs a group", pre, op_name(i),
                              article(to_string(k)), to_string(k)));
    }
    if (g != kNoGroup) {
      if (!is_member(g, r)) {
        throw Error(fmt::format("{}op {} is on rank {}, which is not a member of group '{}'", pre,
                                op_name(i), r, w.groups_[static_cast<std::size_t>(g)].name));
      }
    }
    if (is_p2p(k)) {
      const std::int32_t p = peer_[i];
      if (p < 0 || static_cast<std::uint32_t>(p) >= rank_count_) {
        throw Error(fmt::format("{}op {}: a {} needs a peer rank in 0..{}, got {}", pre, op_name(i),
                                to_string(k), rank_count_ - 1, p));
      }
      if (static_cast<Rank>(p) == r) {
        throw Error(fmt::format("{}op {}: {} {} to its own rank {}", pre, op_name(i),
                                article(to_string(k)), to_string(k), r));
      }
      if (g != kNoGroup) {
        if (!is_member(g, static_cast<Rank>(p))) {
          throw Error(fmt::format("{}op {}: peer rank {} is not a member of group '{}'", pre,
                                  op_name(i), p, w.groups_[static_cast<std::size_t>(g)].name));
        }
      }
    } else if (has_root(k)) {
      const std::int32_t root = peer_[i];
      if (root < 0 || !is_member(g, static_cast<Rank>(root))) {
        throw Error(
            fmt::format("{}op {}: {} {} needs a root that is a member of group '{}', got {}", pre,
                        op_name(i), article(to_string(k)), to_string(k),
                        w.groups_[static_cast<std::size_t>(g)].name, root));
      }
    } else if (peer_[i] != kNoPeer) {
      throw Error(fmt::format("{}op {}: {} {} takes no peer or root", pre, op_name(i),
                              article(to_string(k)), to_string(k)));
    }
  }

  // Dependencies: CSR by new op id, sorted and deduplicated.
  for (auto& [op, dep] : deps_) {
    if (op >= n || dep >= n) {
      throw Error(
          fmt::format("{}dependency on op #{} which does not exist", pre, std::max(op, dep)));
    }
    if (op == dep) {
      throw Error(fmt::format("{}dependency cycle: op {} depends on itself", pre, op_name(op)));
    }
    op = new_id[op];
    dep = new_id[dep];
  }
  std::sort(deps_.begin(), deps_.end());
  deps_.erase(std::unique(deps_.begin(), deps_.end()), deps_.end());
  if (deps_.size() >= std::numeric_limits<std::uint32_t>::max()) {
    throw Error(pre + "too many dependencies (at most 4,294,967,294)");
  }
  w.dep_begin_.assign(n + 1, 0);
  w.deps_.reserve(deps_.size());
  for (const auto& [op, dep] : deps_) {
    ++w.dep_begin_[op + 1];
    w.deps_.push_back(dep);
  }
  std::partial_sum(w.dep_begin_.begin(), w.dep_begin_.end(), w.dep_begin_.begin());
  deps_.clear();
  deps_.shrink_to_fit();

  // Numbers: where every other op has an explicit id, numbered ops get theirs written out and
  // are checked with them; otherwise (rank, number) pairs must be unique.
  if (!number_.empty() && any_name_) {
    std::string names;
    std::vector<std::uint64_t> begin{0};
    begin.reserve(n + 1);
    for (std::size_t i = 0; i < n; ++i) {
      if (name_begin_[i + 1] == name_begin_[i] && number_[i] != Workload::kNoNumber) {
        names += numbered_name(i);
      } else {
        names.append(names_, name_begin_[i], name_begin_[i + 1] - name_begin_[i]);
      }
      begin.push_back(names.size());
    }
    names_ = std::move(names);
    name_begin_ = std::move(begin);
  } else if (!number_.empty()) {
    // Unique when they ascend in the order added (a trace's node ids usually do); else sorted.
    auto key = [&](std::size_t i) { return std::pair(stream_rank_[stream_[i]], number_[i]); };
    bool ascending = true;
    std::optional<std::pair<Rank, std::uint64_t>> last;
    for (std::size_t i = 0; i < n && ascending; ++i) {
      if (number_[i] != Workload::kNoNumber) {
        ascending = !last || *last < key(i);
        last = key(i);
      }
    }
    if (!ascending) {
      std::vector<OpId> numbered;
      for (std::size_t i = 0; i < n; ++i) {
        if (number_[i] != Workload::kNoNumber) {
          numbered.push_back(static_cast<OpId>(i));
        }
      }
      std::sort(numbered.begin(), numbered.end(), [&](OpId a, OpId b) { return key(a) < key(b); });
      for (std::size_t i = 1; i < numbered.size(); ++i) {
        if (key(numbered[i]) == key(numbered[i - 1])) {
          throw Error(fmt::format("{}duplicate op id '{}'", pre, numbered_name(numbered[i])));
        }
      }
    }
    permute(number_, w.number_);
  }

  // Names: unique when given.
  if (any_name_) {
    std::vector<OpId> by_name(n);
    std::iota(by_name.begin(), by_name.end(), 0);
    auto name_of = [&](OpId i) {
      return std::string_view(names_).substr(name_begin_[i], name_begin_[i + 1] - name_begin_[i]);
    };
    std::sort(by_name.begin(), by_name.end(),
              [&](OpId a, OpId b) { return name_of(a) < name_of(b); });
    for (std::size_t i = 0; i < n; ++i) {
      if (name_of(by_name[i]).empty()) {
        throw Error(fmt::format("{}op {} has no id while others do; give every op an id", pre,
                                op_name(by_name[i])));
      }
      if (i > 0 && name_of(by_name[i]) == name_of(by_name[i - 1])) {
        throw Error(fmt::format("{}duplicate op id '{}'", pre, name_of(by_name[i])));
      }
    }
    std::vector<std::uint64_t> length(n + 1, 0);
    for (std::size_t i = 0; i < n; ++i) {
      length[new_id[i] + 1] = name_begin_[i + 1] - name_begin_[i];
    }
    std::partial_sum(length.begin(), length.end(), length.begin());
    std::string names(names_.size(), '\0');
    for (std::size_t i = 0; i < n; ++i) {
      names.replace(length[new_id[i]], name_begin_[i + 1] - name_begin_[i],
                    name_of(static_cast<OpId>(i)));
    }
    w.names_ = std::move(names);
    w.name_begin_ = std::move(length);
  }

  // Labels: per op, renumbered; the table as it is.
  if (!label_of_.empty()) {
    w.label_of_.assign(n, Workload::kNoLabel);
    w.label_mb_.assign(n, -1);
    for (std::size_t i = 0; i < n; ++i) {
      w.label_of_[new_id[i]] = label_of_[i];
      w.label_mb_[new_id[i]] = label_mb_[i];
    }
    w.labels_ = std::move(labels_);
    label_of_.clear();
    label_of_.shrink_to_fit();
    label_mb_.clear();
    label_mb_.shrink_to_fit();
    label_index_.clear();
  }

  // Pinned configs: communication ops only, at most one each.
  for (auto& [op, cfg] : pinned_) {
    if (op >= n) {
      throw Error(fmt::format("{}config pinned on op #{} which does not exist", pre, op));
    }
    if (!is_comm(kind_[op])) {
      throw Error(fmt::format("{}op {}: a {} op takes no NCCL 'config'", pre, op_name(op),
                              to_string(kind_[op])));
    }
    if (cfg.nchannels < 0 || cfg.nthreads < 0 || cfg.chunk_bytes < 0) {
      throw Error(fmt::format("{}op {}: 'config' values must be positive", pre, op_name(op)));
    }
    op = new_id[op];
  }
  std::sort(pinned_.begin(), pinned_.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 1; i < pinned_.size(); ++i) {
    if (pinned_[i].first == pinned_[i - 1].first) {
      throw Error(fmt::format("{}op #{} has two pinned configs", pre, pinned_[i].first));
    }
  }
  w.pinned_ = std::move(pinned_);

  // Compute shapes: compute ops only, at most one each, non-negative.
  for (auto& [op, shape] : shapes_) {
    if (op >= n) {
      throw Error(fmt::format("{}compute shape given for op #{} which does not exist", pre, op));
    }
    if (kind_[op] != OpKind::kCompute) {
      throw Error(fmt::format("{}op {}: a {} op has no compute shape", pre, op_name(op),
                              to_string(kind_[op])));
    }
    if (!(shape.flops >= 0) || shape.blocks < 0 || shape.blocks_per_sm < 0) {
      throw Error(
          fmt::format("{}op {}: flops, blocks and blocks_per_sm must be >= 0", pre, op_name(op)));
    }
    op = new_id[op];
  }
  std::sort(shapes_.begin(), shapes_.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 1; i < shapes_.size(); ++i) {
    if (shapes_[i].first == shapes_[i - 1].first) {
      throw Error(fmt::format("{}op #{} has two compute shapes", pre, shapes_[i].first));
    }
  }
  if (!shapes_.empty()) {
    // Equal shapes are stored once: a generated step repeats a few dozen shapes over every layer,
    // micro-batch and rank, and the simulation reads an op's shape when it starts, in time order,
    // which a small table keeps in cache. (Deduplicating in set_compute_shape instead, 8 bytes per
    // op in the builder rather than 32, measured a higher peak: 91 MB against 85 on GPT-3 175B's
    // tune, 625 against 618 MB on Llama 3.1 405B at 1,024 GPUs.)
    std::unordered_map<ComputeShape, std::uint32_t, ComputeShapeHash> index;
    w.shape_of_.assign(n, Workload::kNoShape);
    for (const auto& [op, shape] : shapes_) {
      const auto [it, fresh] = index.emplace(shape, static_cast<std::uint32_t>(w.shapes_.size()));
      if (fresh) {
        w.shapes_.push_back(shape);
      }
      w.shape_of_[op] = it->second;
    }
    w.shapes_.shrink_to_fit();
  }
  shapes_.clear();
  shapes_.shrink_to_fit();

  permute(kind_, w.kind_);
  permute(group_, w.group_);
  permute(peer_, w.peer_);
  permute(bytes_, w.bytes_);
  permute(duration_ns_, w.duration_ns_);
  return w;
}

ComputeShape gemm_shape(double m, double n, double k) {
  const auto padded = [](double d) { return std::ceil(d / kGemmTile) * kGemmTile; };
  ComputeShape g;
  g.flops = 2.0 * padded(m) * padded(n) * k;
  g.blocks =
      static_cast<std::int32_t>(std::min(1e9, std::ceil(m / kGemmTile) * std::ceil(n / kGemmTile)));
  g.blocks_per_sm = 1;
  g.cls = ComputeClass::kGemm;
  return g;
}

}  // namespace lagom::traces
