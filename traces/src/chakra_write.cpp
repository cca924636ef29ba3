// Writing a Workload as a Chakra ET trace set (one file per rank, plus the comm-groups file),
// lossless through Lagom's own attributes (docs/formats/chakra.md).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <queue>

#include "chakra_format.hpp"
#include "chakra_stream.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/files.hpp"
#include "lagom/traces/chakra.hpp"

namespace lagom::traces {
namespace {

using namespace chakra;  // NOLINT(google-build-using-namespace): this format's own vocabulary

pb::AttributeProto& add_attr(google::protobuf::RepeatedPtrField<pb::AttributeProto>* attrs,
                             std::string_view name) {
  pb::AttributeProto* a = attrs->Add();
  a->set_name(std::string(name));
  return *a;
}

pb::Node make_node(const Workload& w, OpId op, std::int32_t tag) {
  pb::Node node;
  const OpKind k = w.kind(op);
  const Rank r = w.rank_of(op);
  node.set_id(op);
  node.set_name(w.name(op));
  auto* attrs = node.mutable_attr();
  const StreamId s = w.stream_of(op);
  if (w.position(op) > 0) {
    node.add_ctrl_deps(op - 1);
  }
  for (const OpId d : w.deps(op)) {
    node.add_data_deps(d);
  }
  const std::int64_t ns = w.duration_ns(op);
  if (ns != kNoDuration) {
    // Chakra's durations are whole microseconds; the exact value rides along for Lagom.
    node.set_duration_micros(static_cast<std::uint64_t>((ns + 500) / 1000));
    if (ns % 1000 != 0 || ns == 0) {
      add_attr(attrs, kDurationNs).set_int64_val(ns);
    }
  }
  add_attr(attrs, kStream).set_string_val(w.stream(s).name);
  switch (k) {
    case OpKind::kCompute: {
      node.set_type(pb::COMP_NODE);
      add_attr(attrs, kIsCpuOp).set_bool_val(false);
      if (w.bytes(op) > 0) {
        add_attr(attrs, kTensorSize).set_uint64_val(static_cast<std::uint64_t>(w.bytes(op)));
      }
      if (const ComputeShape* sh = w.compute_shape(op)) {
        if (sh->flops > 0) {
          if (sh->flops == std::floor(sh->flops) && sh->flops < 9.2e18) {
            add_attr(attrs, kNumOps).set_int64_val(static_cast<std::int64_t>(sh->flops));
          } else {
            add_attr(attrs, kNumOps).set_double_val(sh->flops);
          }
        }
        if (sh->blocks > 0) {
          add_attr(attrs, kBlocks).set_int32_val(sh->blocks);
        }
        if (sh->blocks_per_sm > 0) {
          add_attr(attrs, kBlocksPerSm).set_int32_val(sh->blocks_per_sm);
        }
        if (sh->cls != ComputeClass::kOther) {
          add_attr(attrs, kClass).set_string_val(std::string(to_string(sh->cls)));
        }
        if (sh->precision != Precision::kBf16) {
          add_attr(attrs, kPrecision).set_string_val(std::string(to_string(sh->precision)));
        }
      }
      break;
    }
    case OpKind::kMemcpy:
      node.set_type(pb::MEM_LOAD_NODE);
      add_attr(attrs, kTensorSize).set_uint64_val(static_cast<std::uint64_t>(w.bytes(op)));
      break;
    case OpKind::kSend:
    case OpKind::kRecv: {
      const bool send = k == OpKind::kSend;
      node.set_type(send ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE);
      const auto self = static_cast<std::int32_t>(r);
      add_attr(attrs, kCommSrc).set_int32_val(send ? self : w.peer(op));
      add_attr(attrs, kCommDst).set_int32_val(send ? w.peer(op) : self);
      add_attr(attrs, kCommTag).set_int32_val(tag);
      add_attr(attrs, kCommSize).set_int64_val(w.bytes(op));
      if (w.group(op) != kNoGroup) {
        add_attr(attrs, kPgName).set_string_val(w.group_info(w.group(op)).name);
      }
      break;
    }
    default:
      node.set_type(pb::COMM_COLL_NODE);
      add_attr(attrs, kCommType).set_int64_val(comm_type_of(k));
      add_attr(attrs, kCommSize).set_int64_val(w.bytes(op));
      add_attr(attrs, kPgName).set_string_val(w.group_info(w.group(op)).name);
      if (has_root(k)) {
        add_attr(attrs, kRoot).set_int32_val(w.peer(op));
      }
      break;
  }
  if (const nccl::ConfigOverride* c = w.pinned_config(op)) {
    if (c->algo) {
      add_attr(attrs, kAlgo).set_string_val(std::string(to_string(*c->algo)));
    }
    if (c->proto) {
      add_attr(attrs, kProto).set_string_val(std::string(to_string(*c->proto)));
    }
    if (c->nchannels > 0) {
      add_attr(attrs, kNchannels).set_int32_val(c->nchannels);
    }
    if (c->nthreads > 0) {
      add_attr(attrs, kNthreads).set_int32_val(c->nthreads);
    }
    if (c->chunk_bytes > 0) {
      add_attr(attrs, kChunkBytes).set_int64_val(c->chunk_bytes);
    }
  }
  return node;
}

// One rank's trace file, nodes in a dependency-compatible order (Kahn's algorithm, smallest op
// id first, so stream-major order wherever the dependencies allow it).
std::string rank_file(const Workload& w, Rank r) {
  const StreamId s0 = w.first_stream(r);
  const StreamId s1 = w.last_stream(r);
  const OpId lo = s0 < s1 ? w.stream(s0).first_op : 0;
  const OpId hi = s0 < s1 ? w.stream(s1 - 1).first_op + w.stream(s1 - 1).op_count : 0;
  const std::size_t n = hi - lo;

  std::string out;
  pb::GlobalMetadata meta;
  meta.set_version(std::string(kChakraWriteVersion));
  {
    auto* list = add_attr(meta.mutable_attr(), kStreams).mutable_string_list();
    for (StreamId s = s0; s < s1; ++s) {
      list->add_values(w.stream(s).name);
    }
    add_attr(meta.mutable_attr(), kNamesAreIds).set_bool_val(true);
  }
  append_message(out, meta);

  // Edges within the rank: stream predecessor and dependencies.
  std::vector<std::uint32_t> indegree(n, 0);
  std::vector<std::uint32_t> begin(n + 1, 0);
  for (OpId op = lo; op < hi; ++op) {
    for (const OpId d : w.deps(op)) {
      if (w.rank_of(d) != r) {
        throw Error(
            fmt::format("{} depends on {}: a Chakra trace holds one rank per file and "
                        "cannot express dependencies across ranks",
                        w.describe(op), w.describe(d)));
      }
      ++begin[d - lo + 1];
    }
    if (w.position(op) > 0) {
      ++begin[op - 1 - lo + 1];
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    begin[i + 1] += begin[i];
  }
  std::vector<OpId> dependents(begin[n]);
  {
    std::vector<std::uint32_t> cursor(begin.begin(), begin.end() - 1);
    for (OpId op = lo; op < hi; ++op) {
      for (const OpId d : w.deps(op)) {
        dependents[cursor[d - lo]++] = op;
        ++indegree[op - lo];
      }
      if (w.position(op) > 0) {
        dependents[cursor[op - 1 - lo]++] = op;
        ++indegree[op - lo];
      }
    }
  }
  // comm_tag of sends and receives: the k-th transfer between the same pair on the same group,
  // counted in Lagom's matching order (op id order).
  std::vector<std::int32_t> tag(n, 0);
  {
    std::map<std::tuple<bool, std::int32_t, GroupId>, std::int32_t> count;
    for (OpId op = lo; op < hi; ++op) {
      if (is_p2p(w.kind(op))) {
        tag[op - lo] = count[{w.kind(op) == OpKind::kSend, w.peer(op), w.group(op)}]++;
      }
    }
  }
  std::priority_queue<OpId, std::vector<OpId>, std::greater<>> ready;
  for (OpId op = lo; op < hi; ++op) {
    if (indegree[op - lo] == 0) {
      ready.push(op);
    }
  }
  std::size_t written = 0;
  while (!ready.empty()) {
    const OpId op = ready.top();
    ready.pop();
    append_message(out, make_node(w, op, tag[op - lo]));
    ++written;
    for (std::uint32_t e = begin[op - lo]; e < begin[op - lo + 1]; ++e) {
      if (--indegree[dependents[e] - lo] == 0) {
        ready.push(dependents[e]);
      }
    }
  }
  if (written != n) {
    OpId stuck = lo;
    while (indegree[stuck - lo] == 0) {
      ++stuck;
    }
    throw Error(fmt::format("rank {}: dependencies and stream order form a cycle through {}", r,
                            w.describe(stuck)));
  }
  return out;
}

}  // namespace

std::vector<std::string> write_chakra(const Workload& w, const std::string& prefix) {
  // Chakra ranks are GPUs: a workload whose ranks run elsewhere (a placement, replicas dropped
  // around a down node) or stand for more GPUs (folded replicas) would read back as another
  // step. Refuse rather than lose it.
  for (const Group& g : w.groups()) {
    if (g.folded()) {
      throw Error(fmt::format(
          "group '{}' spans {} GPUs with {} ranks{} (a folded step): Chakra traces have one rank "
          "per GPU; export it unfolded, or as workload JSON",
          g.name, g.cluster_gpus().size(), g.ranks.size(),
          g.mirrors.empty() ? ""
                            : fmt::format(" and stands for {} more instances", g.mirrors.size())));
    }
  }
  for (Rank r = 0; r < w.rank_count(); ++r) {
    if (w.gpu_of(r) != r) {
      throw Error(fmt::format(
          "rank {} runs on GPU {} (a placement or a down node): Chakra traces carry no rank "
          "placement and would read back packed; export it as workload JSON",
          r, w.gpu_of(r)));
    }
  }
  std::vector<std::string> paths;
  std::vector<std::string> contents;
  for (Rank r = 0; r < w.rank_count(); ++r) {
    contents.push_back(rank_file(w, r));  // all errors before any file is written
  }
  for (Rank r = 0; r < w.rank_count(); ++r) {
    paths.push_back(fmt::format("{}.{}.et", prefix, r));
    write_file(paths.back(), contents[r]);
  }
  nlohmann::ordered_json groups = nlohmann::ordered_json::object();
  for (const Group& g : w.groups()) {
    groups[g.name] = g.ranks;
  }
  paths.push_back(chakra_comm_groups_path(prefix));
  write_file(paths.back(), groups.dump() + "\n");
  return paths;
}

}  // namespace lagom::traces
