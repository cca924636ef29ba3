// Reading Chakra ET trace sets into a Workload: file discovery, attributes of any integer width,
// nodes to ops, communicator groups, dependencies (docs/formats/chakra.md).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <queue>
#include <span>
#include <unordered_map>

#include "chakra_format.hpp"
#include "chakra_stream.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/hash.hpp"
#include "lagom/common/json_reader.hpp"
#include "lagom/traces/chakra.hpp"
#include "lagom/traces/workload_json.hpp"

namespace lagom::traces {
namespace {

using namespace chakra;  // NOLINT(google-build-using-namespace): this format's own vocabulary
namespace fs = std::filesystem;

// Attributes: any integer width for integers, ints or bool for booleans, string or bytes for text.

std::string_view value_name(const pb::AttributeProto& a) {
  const auto* field = pb::AttributeProto::descriptor()->FindFieldByNumber(a.value_case());
  return field != nullptr ? std::string_view(field->name()) : std::string_view("no value");
}

class NodeAttrs {
 public:
  // `where` names the node in errors; it is only called when there is one.
  NodeAttrs(const google::protobuf::RepeatedPtrField<pb::AttributeProto>& attrs,
            std::function<std::string()> where)
      : attrs_(attrs), where_(std::move(where)) {}

  const pb::AttributeProto* find(std::string_view name) const {
    for (const pb::AttributeProto& a : attrs_) {
      if (a.name() == name) {
        return &a;
      }
    }
    return nullptr;
  }

  std::optional<std::int64_t> integer(std::string_view name) const {
    const pb::AttributeProto* a = find(name);
    if (a == nullptr) {
      return std::nullopt;
    }
    using V = pb::AttributeProto;
    switch (a->value_case()) {
      case V::kInt32Val:
        return a->int32_val();
      case V::kInt64Val:
        return a->int64_val();
      case V::kSint32Val:
        return a->sint32_val();
      case V::kSint64Val:
        return a->sint64_val();
      case V::kSfixed32Val:
        return a->sfixed32_val();
      case V::kSfixed64Val:
        return a->sfixed64_val();
      case V::kUint32Val:
        return a->uint32_val();
      case V::kFixed32Val:
        return a->fixed32_val();
      case V::kUint64Val:
      case V::kFixed64Val: {
        const std::uint64_t v =
            a->value_case() == V::kUint64Val ? a->uint64_val() : a->fixed64_val();
        if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
          fail(name, fmt::format("{} is out of range (at most 2^63 - 1)", v));
        }
        return static_cast<std::int64_t>(v);
      }
      default:
        fail(name, fmt::format("expected an integer (int32/int64/uint32/uint64/sint*/fixed*/"
                               "sfixed* value), got {}",
                               value_name(*a)));
    }
  }

  // An integer that must lie in [lo, hi].
  std::optional<std::int64_t> integer(std::string_view name, std::int64_t lo,
                                      std::int64_t hi) const {
    const std::optional<std::int64_t> v = integer(name);
    if (v && (*v < lo || *v > hi)) {
      fail(name, fmt::format("{} is out of range (expected {}..{})", *v, lo, hi));
    }
    return v;
  }

  std::optional<std::int64_t> required_integer(std::string_view name, std::string_view why,
                                               std::int64_t lo, std::int64_t hi) const {
    std::optional<std::int64_t> v = integer(name, lo, hi);
    if (!v) {
      throw Error(fmt::format("{}: missing attribute '{}' ({})", where_(), name, why));
    }
    return v;
  }

  std::optional<double> number(std::string_view name) const {
    const pb::AttributeProto* a = find(name);
    if (a == nullptr) {
      return std::nullopt;
    }
    if (a->value_case() == pb::AttributeProto::kDoubleVal) {
      return a->double_val();
    }
    if (a->value_case() == pb::AttributeProto::kFloatVal) {
      return a->float_val();
    }
    if (a->value_case() % 2 == 0 || a->value_case() >= pb::AttributeProto::kBoolVal) {
      fail(name, fmt::format("expected a number, got {}", value_name(*a)));
    }
    return static_cast<double>(*integer(name));
  }

  bool boolean(std::string_view name) const {
    const pb::AttributeProto* a = find(name);
    if (a == nullptr) {
      return false;
    }
    if (a->value_case() == pb::AttributeProto::kBoolVal) {
      return a->bool_val();
    }
    const pb::AttributeProto::ValueCase c = a->value_case();
    if (c == pb::AttributeProto::kDoubleVal || c == pb::AttributeProto::kFloatVal ||
        c == pb::AttributeProto::kStringVal || c == pb::AttributeProto::kBytesVal || c % 2 == 0) {
      fail(name, fmt::format("expected a bool or an integer, got {}", value_name(*a)));
    }
    return *integer(name) != 0;
  }

  std::optional<std::string> text(std::string_view name) const {
    const pb::AttributeProto* a = find(name);
    if (a == nullptr) {
      return std::nullopt;
    }
    if (a->value_case() == pb::AttributeProto::kStringVal) {
      return a->string_val();
    }
    if (a->value_case() == pb::AttributeProto::kBytesVal) {
      return a->bytes_val();
    }
    fail(name, fmt::format("expected a string, got {}", value_name(*a)));
  }

  std::vector<std::string> text_list(std::string_view name) const {
    const pb::AttributeProto* a = find(name);
    if (a == nullptr) {
      return {};
    }
    if (a->value_case() != pb::AttributeProto::kStringList) {
      fail(name, fmt::format("expected a string_list, got {}", value_name(*a)));
    }
    return {a->string_list().values().begin(), a->string_list().values().end()};
  }

  [[noreturn]] void fail(std::string_view name, const std::string& what) const {
    throw Error(fmt::format("{}: attribute '{}': {}", where_(), name, what));
  }

  std::string where() const { return where_(); }

 private:
  const google::protobuf::RepeatedPtrField<pb::AttributeProto>& attrs_;
  std::function<std::string()> where_;
};

// A rank file's content parsed once: its streams, its ops in file order and their dependencies,
// with nothing that depends on which rank runs it. Ranks whose files hold the same bytes share
// one (ASTRA-sim's data-parallel traces are the same file for every rank).
struct Program {
  struct Op {
    OpSpec spec;                   // the group resolved
    std::uint32_t stream = 0;      // index into streams
    std::uint64_t node_id = 0;     // names the op r<rank>.n<node id> ...
    std::uint32_t name = kNone;    // ... or, when the file's names are op ids, names[name]
    std::uint32_t shape = kNone;   // index into shapes
    std::uint32_t config = kNone;  // index into configs
  };
  static constexpr std::uint32_t kNone = 0xffffffffu;
  std::vector<std::string> streams;  // in the order the file introduces them
  std::vector<Op> ops;
  std::vector<std::string> names;
  std::vector<ComputeShape> shapes;
  std::vector<nccl::ConfigOverride> configs;
  std::vector<std::uint32_t> dep_begin{0};  // op k waits for ops deps[dep_begin[k]..[k+1]) ...
  std::vector<std::uint32_t> deps;          // ... besides the op before it on its stream
  std::string version;

  std::size_t memory_bytes() const {
    std::size_t m = ops.capacity() * sizeof(Op) + deps.capacity() * 4 + dep_begin.capacity() * 4 +
                    shapes.capacity() * sizeof(ComputeShape) +
                    configs.capacity() * sizeof(nccl::ConfigOverride) +
                    names.capacity() * sizeof(std::string);
    for (const std::string& n : names) {
      m += n.capacity();
    }
    return m;
  }
};

// What a node leaves behind while its file is read: enough to resolve dependencies.
struct ReadNode {
  std::uint64_t id = 0;
  std::uint32_t op = Program::kNone;              // kNone: a METADATA_NODE (its deps pass through)
  std::uint32_t prev_in_stream = Program::kNone;  // the op before it on its stream
  std::uint32_t dep_begin = 0, dep_end = 0;       // ctrl_deps then data_deps, as node ids, in
                                                  // the reader's node_deps_
};

// Node id -> position in the file: a table when the ids are dense (they usually count up), a
// hash map otherwise. Throws on an id that appears twice.
class NodeIndex {
 public:
  NodeIndex(const std::vector<ReadNode>& nodes, const std::string& file) {
    const std::size_t n = nodes.size();
    if (n == 0) {
      return;
    }
    std::uint64_t lo = nodes[0].id, hi = nodes[0].id;
    for (const ReadNode& node : nodes) {
      lo = std::min(lo, node.id);
      hi = std::max(hi, node.id);
    }
    auto twice = [&](std::uint64_t id) {
      return Error(fmt::format("{}: node id {} appears twice in the file", file, id));
    };
    if (hi - lo < 4 * n + 64) {
      base_ = lo;
      table_.assign(hi - lo + 1, kAbsent);
      for (std::size_t i = 0; i < n; ++i) {
        std::uint32_t& slot = table_[nodes[i].id - lo];
        if (slot != kAbsent) {
          throw twice(nodes[i].id);
        }
        slot = static_cast<std::uint32_t>(i);
      }
      return;
    }
    map_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (!map_.emplace(nodes[i].id, static_cast<std::uint32_t>(i)).second) {
        throw twice(nodes[i].id);
      }
    }
  }

  // The position of node `id`, or nullopt.
  std::optional<std::uint32_t> find(std::uint64_t id) const {
    if (!table_.empty()) {
      if (id < base_ || id - base_ >= table_.size() || table_[id - base_] == kAbsent) {
        return std::nullopt;
      }
      return table_[id - base_];
    }
    auto it = map_.find(id);
    return it == map_.end() ? std::nullopt : std::optional(it->second);
  }

 private:
  static constexpr std::uint32_t kAbsent = 0xffffffffu;
  std::uint64_t base_ = 0;
  std::vector<std::uint32_t> table_;
  std::unordered_map<std::uint64_t, std::uint32_t> map_;
};

// Groups as the trace set defines them: from the comm-groups file, then created on demand.
class GroupTable {
 public:
  GroupTable(WorkloadBuilder& b, std::uint32_t nranks, const std::optional<std::string>& file)
      : b_(b), nranks_(nranks), file_(file) {
    if (file) {
      load(*file);
    }
  }

  // The group of a collective or p2p op with pg_name `pg` (nullopt: none given).
  GroupId resolve(const std::optional<std::string>& pg, const std::string& where) {
    const std::string name = pg ? *pg : std::string(kWorldGroup);
    if (auto it = ids_.find(name); it != ids_.end()) {
      return it->second;
    }
    if (pg && file_) {
      throw Error(fmt::format("{}: pg_name '{}' is not a group in the comm-groups file '{}'", where,
                              name, *file_));
    }
    // Without a comm-groups file every communicator spans all ranks.
    std::vector<Rank> all(nranks_);
    for (Rank r = 0; r < nranks_; ++r) {
      all[r] = r;
    }
    ranks_.push_back(all);
    return ids_[name] = b_.add_group(name, std::move(all));
  }

  const std::vector<Rank>& ranks(GroupId g) const { return ranks_.at(static_cast<std::size_t>(g)); }

 private:
  void load(const std::string& path) {
    const std::string text = read_text_file(path, "comm-groups file");
    const nlohmann::ordered_json doc = json_reader::parse_ordered_json(text, path);
    if (!doc.is_object()) {
      throw Error(
          fmt::format("{}: expected a JSON object {{\"<pg name>\": [ranks...], ...}}, got {}", path,
                      doc.type_name()));
    }
    for (const auto& [name, members] : doc.items()) {
      if (!members.is_array()) {
        throw Error(fmt::format("{}: group '{}': expected an array of ranks, got {}", path, name,
                                members.type_name()));
      }
      std::vector<Rank> rs;
      for (const auto& m : members) {
        if (!m.is_number_integer() || m.get<std::int64_t>() < 0) {
          throw Error(fmt::format("{}: group '{}': expected ranks (integers >= 0), got {}", path,
                                  name, m.dump()));
        }
        if (m.get<std::int64_t>() >= nranks_) {
          throw Error(
              fmt::format("{}: group '{}': rank {} does not exist (the trace set has "
                          "ranks 0..{})",
                          path, name, m.get<std::int64_t>(), nranks_ - 1));
        }
        rs.push_back(static_cast<Rank>(m.get<std::int64_t>()));
      }
      try {
        ids_[name] = b_.add_group(name, rs);
      } catch (const Error& e) {
        throw Error(fmt::format("{}: {}", path, e.what()));
      }
      ranks_.push_back(std::move(rs));  // ranks_[g] for GroupId g: only this table adds groups
    }
  }

  WorkloadBuilder& b_;
  std::uint32_t nranks_;
  std::optional<std::string> file_;
  std::unordered_map<std::string, GroupId> ids_;
  std::vector<std::vector<Rank>> ranks_;  // by GroupId
};

// Parses one rank file into a Program; groups are created as they appear.
class ProgramReader {
 public:
  ProgramReader(GroupTable& groups, std::string file) : groups_(groups), file_(std::move(file)) {}

  Program read(std::string_view bytes) && {
    const std::string& file = file_;
    if (bytes.empty()) {
      throw Error(
          fmt::format("{}: the file is empty; expected a Chakra ET stream (a "
                      "GlobalMetadata message, then nodes)",
                      file));
    }
    if (bytes.front() == '{' || bytes.front() == '[') {
      throw Error(
          fmt::format("{}: not a Chakra ET file: it looks like JSON (expected a stream of "
                      "length-prefixed protobuf messages)",
                      file));
    }
    MessageStream stream(bytes, file);
    std::string_view msg;
    try {
      stream.next(msg);
    } catch (const Error& e) {
      throw Error(fmt::format("{} (not a Chakra ET file?)", e.what()));
    }
    {
      pb::GlobalMetadata meta;
      std::string why;
      if (!parse_message(meta, msg, why)) {
        throw Error(
            fmt::format("{}: not a Chakra ET file: the first message is not a valid "
                        "GlobalMetadata{}",
                        stream.where(), why.empty() ? "" : ": " + why));
      }
      if (meta.version().empty() && !meta.GetReflection()->GetUnknownFields(meta).empty()) {
        throw Error(
            fmt::format("{}: not a Chakra ET file: the first message has fields a "
                        "GlobalMetadata does not (a Node? every file starts with a "
                        "GlobalMetadata)",
                        stream.where()));
      }
      p_.version = meta.version();
      const NodeAttrs attrs(meta.attr(), [&] { return stream.where() + " (GlobalMetadata)"; });
      for (const std::string& s : attrs.text_list(kStreams)) {
        stream_id(s);
      }
      names_are_ids_ = attrs.boolean(kNamesAreIds);
    }
    // Converted traces spend 40-60 bytes a node.
    nodes_.reserve(bytes.size() / 32);
    p_.ops.reserve(bytes.size() / 32);
    node_deps_.reserve(bytes.size() / 16);
    pb::Node node;
    while (stream.next(msg)) {
      node.Clear();
      std::string why;
      if (!parse_message(node, msg, why)) {
        throw Error(fmt::format("{}: malformed protobuf: not a valid Node{}", stream.where(),
                                why.empty() ? "" : ": " + why));
      }
      auto where = [&] {
        return fmt::format("{}: node {}{}", stream.where(), node.id(),
                           node.name().empty() ? "" : fmt::format(" ('{}')", node.name()));
      };
      nodes_.push_back(convert(node, where));
    }
    link();
    // Reserved by the file's size, which may be much more than its ops take.
    p_.ops.shrink_to_fit();
    p_.deps.shrink_to_fit();
    p_.dep_begin.shrink_to_fit();
    return std::move(p_);
  }

 private:
  std::uint32_t stream_id(const std::string& name) {
    if (auto it = streams_.find(name); it != streams_.end()) {
      return it->second;
    }
    p_.streams.push_back(name);
    return streams_[name] = static_cast<std::uint32_t>(p_.streams.size() - 1);
  }

  GroupId group(const NodeAttrs& a) { return groups_.resolve(a.text(kPgName), a.where()); }

  ReadNode convert(const pb::Node& node, const std::function<std::string()>& where) {
    ReadNode n;
    n.id = node.id();
    n.dep_begin = static_cast<std::uint32_t>(node_deps_.size());
    node_deps_.insert(node_deps_.end(), node.ctrl_deps().begin(), node.ctrl_deps().end());
    node_deps_.insert(node_deps_.end(), node.data_deps().begin(), node.data_deps().end());
    if (node_deps_.size() >= Program::kNone) {
      throw Error(fmt::format("{}: more than 4 billion dependencies in the file", where()));
    }
    n.dep_end = static_cast<std::uint32_t>(node_deps_.size());
    const NodeAttrs a(node.attr(), where);
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    constexpr std::int64_t kMaxRank = std::numeric_limits<std::int32_t>::max();
    std::string_view default_stream = kComputeStream;
    OpSpec s;
    std::optional<ComputeShape> compute_shape;
    std::optional<nccl::ConfigOverride> config;
    switch (node.type()) {
      case pb::METADATA_NODE:
        return n;
      case pb::COMP_NODE: {
        s.kind = OpKind::kCompute;
        s.bytes = a.integer(kTensorSize, 0, kMax).value_or(0);
        if (a.boolean(kIsCpuOp)) {
          default_stream = kCpuStream;
        }
        ComputeShape shape;
        bool any = false;
        if (const std::optional<double> f = a.number(kNumOps)) {
          if (!(*f >= 0) || *f > 1e30) {
            a.fail(kNumOps, fmt::format("{} is out of range (expected 0..1e30)", *f));
          }
          shape.flops = *f;
          any = true;
        }
        if (auto v = a.integer(kBlocks, 1, std::int64_t{1} << 30)) {
          shape.blocks = static_cast<std::int32_t>(*v);
          any = true;
        }
        if (auto v = a.integer(kBlocksPerSm, 1, 64)) {
          shape.blocks_per_sm = static_cast<std::int32_t>(*v);
          any = true;
        }
        if (auto c = a.text(kClass)) {
          const std::optional<ComputeClass> cls = parse_compute_class(*c);
          if (!cls) {
            a.fail(kClass, fmt::format("unknown compute class '{}'", *c));
          }
          shape.cls = *cls;
          any = true;
        }
        if (auto pr = a.text(kPrecision)) {
          const std::optional<Precision> precision = parse_precision(*pr);
          if (!precision) {
            a.fail(kPrecision,
                   fmt::format("unknown precision '{}' (known: bf16, fp16, fp8, fp32)", *pr));
          }
          shape.precision = *precision;
          any = true;
        }
        if (any) {
          compute_shape = shape;
        }
        break;
      }
      case pb::MEM_LOAD_NODE:
      case pb::MEM_STORE_NODE:
        s.kind = OpKind::kMemcpy;
        s.bytes = a.integer(kTensorSize, 0, kMax).value_or(0);
        break;
      case pb::COMM_COLL_NODE: {
        const std::int64_t type = *a.required_integer(
            kCommType, "the CollectiveCommType of a COMM_COLL_NODE",
            std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max());
        const std::optional<OpKind> kind = collective_kind(type);
        if (!kind) {
          const bool known = pb::CollectiveCommType_IsValid(static_cast<int>(type));
          throw Error(fmt::format(
              "{}: comm_type {}{} is not supported (Lagom simulates ALL_REDUCE, ALL_GATHER, "
              "REDUCE_SCATTER, BROADCAST, REDUCE and ALL_TO_ALL)",
              where(), type,
              known ? fmt::format(" ({})", pb::CollectiveCommType_Name(
                                               static_cast<pb::CollectiveCommType>(type)))
                    : std::string(" (not a CollectiveCommType)")));
        }
        s.kind = *kind;
        s.bytes = *a.required_integer(kCommSize, "the collective's size in bytes", 0, kMax);
        s.group = group(a);
        if (has_root(s.kind)) {
          s.peer = static_cast<std::int32_t>(
              a.integer(kRoot, 0, kMaxRank).value_or(groups_.ranks(s.group).front()));
        }
        default_stream = kCommStream;
        break;
      }
      case pb::COMM_SEND_NODE:
      case pb::COMM_RECV_NODE: {
        const bool send = node.type() == pb::COMM_SEND_NODE;
        s.kind = send ? OpKind::kSend : OpKind::kRecv;
        s.bytes = *a.required_integer(kCommSize, "the message size in bytes", 0, kMax);
        s.peer = static_cast<std::int32_t>(
            *a.required_integer(send ? kCommDst : kCommSrc,
                                send ? "the receiving rank" : "the sending rank", 0, kMaxRank));
        if (a.find(kPgName) != nullptr) {
          s.group = group(a);
        }
        default_stream = kCommStream;
        break;
      }
      default:
        throw Error(fmt::format(
            "{}: unknown node type {} ({}); expected METADATA_NODE, "
            "MEM_LOAD_NODE, MEM_STORE_NODE, COMP_NODE, COMM_SEND_NODE, "
            "COMM_RECV_NODE or COMM_COLL_NODE",
            where(), static_cast<int>(node.type()), node_type_name(static_cast<int>(node.type()))));
    }
    if (const std::optional<std::int64_t> ns = a.integer(kDurationNs, 0, kMax)) {
      s.duration_ns = *ns;
    } else if (node.duration_micros() > 0) {
      if (node.duration_micros() > static_cast<std::uint64_t>(kMax / 1000)) {
        throw Error(
            fmt::format("{}: duration_micros {} is out of range", where(), node.duration_micros()));
      }
      s.duration_ns = static_cast<std::int64_t>(node.duration_micros()) * 1000;
    }
    if (is_comm(s.kind)) {
      nccl::ConfigOverride c;
      bool any = false;
      if (auto v = a.text(kAlgo)) {
        try {
          c.algo = nccl::algorithm_named(*v);
        } catch (const Error& e) {
          throw Error(fmt::format("{}: {}: {}", a.where(), kAlgo, e.what()));
        }
        any = true;
      }
      if (auto v = a.text(kProto)) {
        try {
          c.proto = nccl::protocol_named(*v);
        } catch (const Error& e) {
          throw Error(fmt::format("{}: {}: {}", a.where(), kProto, e.what()));
        }
        any = true;
      }
      if (auto v = a.integer(kNchannels, 1, 1024)) {
        c.nchannels = static_cast<int>(*v);
        any = true;
      }
      if (auto v = a.integer(kNthreads, 1, 1 << 20)) {
        c.nthreads = static_cast<int>(*v);
        any = true;
      }
      if (auto v = a.integer(kChunkBytes, 1, kMax)) {
        c.chunk_bytes = *v;
        any = true;
      }
      if (any) {
        config = std::move(c);
      }
    }
    const std::optional<std::string> stream_name = a.text(kStream);
    Program::Op op;
    op.spec = s;
    op.stream = stream_id(stream_name ? *stream_name : std::string(default_stream));
    op.node_id = node.id();
    if (names_are_ids_) {
      op.name = static_cast<std::uint32_t>(p_.names.size());
      p_.names.push_back(node.name());
    }
    if (compute_shape) {
      op.shape = static_cast<std::uint32_t>(p_.shapes.size());
      p_.shapes.push_back(*compute_shape);
    }
    if (config) {
      op.config = static_cast<std::uint32_t>(p_.configs.size());
      p_.configs.push_back(std::move(*config));
    }
    n.op = static_cast<std::uint32_t>(p_.ops.size());
    p_.ops.push_back(std::move(op));
    if (auto [it, added] = last_op_.try_emplace(p_.ops.back().stream, n.op); !added) {
      n.prev_in_stream = it->second;
      it->second = n.op;
    }
    return n;
  }

  // Dependencies, through metadata nodes to what they depend on.
  void link() {
    const std::size_t n = nodes_.size();
    const NodeIndex index(nodes_, file_);
    auto deps_of = [&](std::size_t i) {
      return std::span<const std::uint64_t>(node_deps_.data() + nodes_[i].dep_begin,
                                            nodes_[i].dep_end - nodes_[i].dep_begin);
    };
    auto missing = [&](std::size_t i, std::uint64_t d) {
      return Error(fmt::format("{}: node {} depends on node {}, which is not in the file", file_,
                               nodes_[i].id, d));
    };
    std::vector<std::uint8_t> on_path(n, 0);
    std::vector<std::uint32_t> found;
    std::function<void(std::size_t)> collect = [&](std::size_t i) {
      for (const std::uint64_t d : deps_of(i)) {
        const std::optional<std::uint32_t> at = index.find(d);
        if (!at) {
          throw missing(i, d);
        }
        const std::size_t j = *at;
        if (nodes_[j].op != Program::kNone) {
          found.push_back(nodes_[j].op);
          continue;
        }
        if (on_path[j] != 0) {
          throw Error(
              fmt::format("{}: dependency cycle through metadata node {}", file_, nodes_[j].id));
        }
        on_path[j] = 1;
        collect(j);
        on_path[j] = 0;
      }
    };
    for (std::size_t i = 0; i < n; ++i) {
      const ReadNode& node = nodes_[i];
      if (node.op == Program::kNone) {
        // A dangling dependency of a metadata node is still an error.
        for (const std::uint64_t d : deps_of(i)) {
          if (!index.find(d)) {
            throw missing(i, d);
          }
        }
        continue;
      }
      found.clear();
      collect(i);
      std::sort(found.begin(), found.end());
      found.erase(std::unique(found.begin(), found.end()), found.end());
      for (const std::uint32_t d : found) {
        // The previous op of the stream is waited for anyway (stream order).
        if (d != node.prev_in_stream) {
          p_.deps.push_back(d);
        }
      }
      p_.dep_begin.push_back(static_cast<std::uint32_t>(p_.deps.size()));
    }
  }

  GroupTable& groups_;
  std::string file_;
  bool names_are_ids_ = false;
  Program p_;
  std::vector<ReadNode> nodes_;
  std::vector<std::uint64_t> node_deps_;
  std::map<std::string, std::uint32_t> streams_;
  std::unordered_map<std::uint32_t, std::uint32_t> last_op_;
};

// Adds rank `rank` running `p` to the builder: its streams, ops and dependencies.
void add_rank(WorkloadBuilder& b, Rank rank, const Program& p) {
  std::vector<StreamId> stream(p.streams.size());
  for (std::size_t i = 0; i < p.streams.size(); ++i) {
    stream[i] = b.add_stream(rank, p.streams[i]);
  }
  const auto first = static_cast<OpId>(b.op_count());
  for (const Program::Op& o : p.ops) {
    // r<rank>.n<node id>, as a number; the one id a number cannot hold, as text.
    constexpr std::uint64_t kLastId = std::numeric_limits<std::uint64_t>::max();
    const bool numbered = o.name == Program::kNone && o.node_id != kLastId;
    std::string last;
    std::string_view id;
    if (o.name != Program::kNone) {
      id = p.names[o.name];
    } else if (!numbered) {
      last = fmt::format("r{}.n{}", rank, kLastId);
      id = last;
    }
    const OpId op = b.add_op(stream[o.stream], o.spec, id);
    if (numbered) {
      b.set_number(op, o.node_id);
    }
    if (o.shape != Program::kNone) {
      b.set_compute_shape(op, p.shapes[o.shape]);
    }
    if (o.config != Program::kNone) {
      b.pin_config(op, p.configs[o.config]);
    }
  }
  for (std::size_t k = 0; k + 1 < p.dep_begin.size(); ++k) {
    for (std::uint32_t i = p.dep_begin[k]; i < p.dep_begin[k + 1]; ++i) {
      b.add_dep(first + static_cast<OpId>(k), first + p.deps[i]);
    }
  }
}

// Programs by the bytes of the files they were read from, so that identical files are parsed
// once. Holds at most kMaxBytes of files and programs together, and stops keeping them after 64
// files that all differ; past that, files are parsed each time.
class ProgramCache {
 public:
  static constexpr std::size_t kMaxBytes = std::size_t{64} << 20;

  const Program* find(std::string_view bytes) {
    auto [lo, hi] = by_hash_.equal_range(std::hash<std::string_view>{}(bytes));
    for (auto it = lo; it != hi; ++it) {
      if (entries_[it->second].bytes == bytes) {
        ++hits_;
        return &entries_[it->second].program;
      }
    }
    return nullptr;
  }

  // Keeps `p`, read from `bytes`, if it fits; returns it either way.
  const Program& add(std::string&& bytes, Program p) {
    const std::size_t size = bytes.size() + p.memory_bytes();
    // 64 files in a row that differ: a trace whose ranks all differ, which keeping cannot help.
    if (held_ + size > kMaxBytes || (hits_ == 0 && entries_.size() >= 64)) {
      last_ = std::move(p);
      return last_;
    }
    held_ += size;
    by_hash_.emplace(std::hash<std::string_view>{}(bytes), entries_.size());
    entries_.push_back(Entry{std::move(bytes), std::move(p)});
    return entries_.back().program;
  }

 private:
  struct Entry {
    std::string bytes;
    Program program;
  };
  std::deque<Entry> entries_;  // stable addresses
  std::unordered_multimap<std::size_t, std::size_t> by_hash_;
  std::size_t held_ = 0;
  std::size_t hits_ = 0;
  Program last_;  // a program not kept
};

}  // namespace

std::vector<std::string> chakra_rank_files(const std::string& prefix) {
  const fs::path p(prefix);
  const std::string stem = p.filename().string();
  if (stem.empty()) {
    throw Error(
        fmt::format("Chakra prefix '{}' ends in a directory separator; expected a path "
                    "prefix PREFIX of files PREFIX.<rank>.et",
                    prefix));
  }
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    throw Error(fmt::format("no Chakra trace files {}.<rank>.et: cannot list directory '{}': {}",
                            prefix, dir.string(), ec.message()));
  }
  std::map<std::uint32_t, bool> found;
  for (const fs::directory_entry& e : it) {
    const std::string name = e.path().filename().string();
    if (name.size() <= stem.size() + 4 || !name.starts_with(stem + ".") || !name.ends_with(".et")) {
      continue;
    }
    const std::string mid = name.substr(stem.size() + 1, name.size() - stem.size() - 4);
    if (mid.empty() || mid.size() > 9 || (mid.size() > 1 && mid[0] == '0') ||
        !std::all_of(mid.begin(), mid.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    found[static_cast<std::uint32_t>(std::stoul(mid))] = true;
  }
  if (found.empty()) {
    throw Error(fmt::format("no Chakra trace files {}.<rank>.et (expected {}.0.et, {}.1.et, ...)",
                            prefix, prefix, prefix));
  }
  const std::uint32_t last = found.rbegin()->first;
  if (found.size() != std::size_t{last} + 1) {
    std::vector<std::uint32_t> missing;
    for (std::uint32_t r = 0; r <= last && missing.size() < 8; ++r) {
      if (!found.contains(r)) {
        missing.push_back(r);
      }
    }
    throw Error(fmt::format(
        "Chakra trace set {}: found {} rank files up to {}.{}.et, but {}.{}.et is missing "
        "(missing ranks: {}{}); ranks must be 0..N-1 without gaps",
        prefix, found.size(), prefix, last, prefix, missing.front(), fmt::join(missing, ", "),
        last + 1 - found.size() > missing.size() ? ", ..." : ""));
  }
  std::vector<std::string> files;
  files.reserve(found.size());
  for (std::uint32_t r = 0; r <= last; ++r) {
    files.push_back(fmt::format("{}.{}.et", prefix, r));
  }
  return files;
}

Workload read_chakra(const std::string& prefix, const std::optional<std::string>& comm_groups_file,
                     ChakraReadInfo* info) {
  const std::vector<std::string> files = chakra_rank_files(prefix);
  const auto nranks = static_cast<std::uint32_t>(files.size());
  WorkloadBuilder b(nranks);
  GroupTable groups(b, nranks, comm_groups_file);
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  std::string version;
  ProgramCache cache;
  for (Rank r = 0; r < nranks; ++r) {
    std::string bytes = read_text_file(files[r], "Chakra trace file");
    hash = fnv1a64(bytes, hash);
    const Program* p = cache.find(bytes);
    if (p == nullptr) {
      ProgramReader reader(groups, files[r]);
      Program read = is_gzip(bytes) ? std::move(reader).read(gunzip(files[r], bytes))
                                    : std::move(reader).read(bytes);
      p = &cache.add(std::move(bytes), std::move(read));
    }
    if (r == 0) {
      version = p->version;
    }
    add_rank(b, r, *p);
  }
  if (info != nullptr) {
    info->files = files;
    info->version = version;
    info->input_hash = hash;
  }
  return std::move(b).build(prefix);
}

std::string chakra_comm_groups_path(const std::string& prefix) {
  return prefix + ".comm_groups.json";
}

}  // namespace lagom::traces
