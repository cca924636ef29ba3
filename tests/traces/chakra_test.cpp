// Chakra ET: the reader against files built here with the protobuf classes (every integer width,
// gzip, groups, send/recv, dependencies), the bad-input catalogue, the writer, and round trips.
#include "lagom/traces/chakra.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_runner.hpp"
#include "lagom/traces/et_def.pb.h"
#include "lagom/traces/workload_json.hpp"
#include "strings.hpp"
#include "synthetic.hpp"
#include "test_util.hpp"

namespace lagom::traces {
namespace {

namespace pb = ChakraProtoMsg;
namespace fs = std::filesystem;
using test::error_of;

// ---------------------------------------------------------------------------------------------
// A trace writer independent of the one under test: protobuf classes plus hand-made framing.

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void frame(std::string& out, const google::protobuf::MessageLite& m) {
  const std::string bytes = m.SerializeAsString();
  put_varint(out, bytes.size());
  out += bytes;
}

std::string gzip(const std::string& in) {
  z_stream zs{};
  EXPECT_EQ(
      deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
      Z_OK);
  std::string out(deflateBound(&zs, static_cast<uLong>(in.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Integer attribute widths a producer may choose.
enum class Width {
  kInt32,
  kInt64,
  kUint32,
  kUint64,
  kSint32,
  kSint64,
  kFixed32,
  kFixed64,
  kSfixed32,
  kSfixed64
};
constexpr Width kWidths[] = {Width::kInt32,    Width::kInt64,   Width::kUint32,  Width::kUint64,
                             Width::kSint32,   Width::kSint64,  Width::kFixed32, Width::kFixed64,
                             Width::kSfixed32, Width::kSfixed64};

pb::AttributeProto* attr(pb::Node& n, const std::string& name) {
  pb::AttributeProto* a = n.add_attr();
  a->set_name(name);
  return a;
}

void set_int(pb::Node& n, const std::string& name, std::int64_t v, Width w = Width::kInt64) {
  pb::AttributeProto* a = attr(n, name);
  switch (w) {
    case Width::kInt32:
      a->set_int32_val(static_cast<std::int32_t>(v));
      break;
    case Width::kInt64:
      a->set_int64_val(v);
      break;
    case Width::kUint32:
      a->set_uint32_val(static_cast<std::uint32_t>(v));
      break;
    case Width::kUint64:
      a->set_uint64_val(static_cast<std::uint64_t>(v));
      break;
    case Width::kSint32:
      a->set_sint32_val(static_cast<std::int32_t>(v));
      break;
    case Width::kSint64:
      a->set_sint64_val(v);
      break;
    case Width::kFixed32:
      a->set_fixed32_val(static_cast<std::uint32_t>(v));
      break;
    case Width::kFixed64:
      a->set_fixed64_val(static_cast<std::uint64_t>(v));
      break;
    case Width::kSfixed32:
      a->set_sfixed32_val(static_cast<std::int32_t>(v));
      break;
    case Width::kSfixed64:
      a->set_sfixed64_val(v);
      break;
  }
}

void set_str(pb::Node& n, const std::string& name, const std::string& v) {
  attr(n, name)->set_string_val(v);
}

pb::Node comp(std::uint64_t id, std::uint64_t duration_us, std::vector<std::uint64_t> deps = {}) {
  pb::Node n;
  n.set_id(id);
  n.set_name("comp");
  n.set_type(pb::COMP_NODE);
  n.set_duration_micros(duration_us);
  for (std::uint64_t d : deps) {
    n.add_data_deps(d);
  }
  return n;
}

pb::Node coll(std::uint64_t id, pb::CollectiveCommType type, std::int64_t bytes,
              std::uint64_t duration_us, const std::string& pg = "",
              std::vector<std::uint64_t> deps = {}) {
  pb::Node n;
  n.set_id(id);
  n.set_name("coll");
  n.set_type(pb::COMM_COLL_NODE);
  n.set_duration_micros(duration_us);
  set_int(n, "comm_type", type);
  set_int(n, "comm_size", bytes);
  if (!pg.empty()) {
    set_str(n, "pg_name", pg);
  }
  for (std::uint64_t d : deps) {
    n.add_data_deps(d);
  }
  return n;
}

pb::Node p2p(std::uint64_t id, bool send, std::int32_t peer, std::int64_t bytes,
             std::uint64_t duration_us, std::vector<std::uint64_t> deps = {}) {
  pb::Node n;
  n.set_id(id);
  n.set_name(send ? "send" : "recv");
  n.set_type(send ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE);
  n.set_duration_micros(duration_us);
  set_int(n, send ? "comm_dst" : "comm_src", peer, Width::kInt32);
  set_int(n, "comm_size", bytes);
  for (std::uint64_t d : deps) {
    n.add_ctrl_deps(d);
  }
  return n;
}

// One rank's file: GlobalMetadata then the nodes.
std::string file_bytes(const std::vector<pb::Node>& nodes, const std::string& version = "0.0.4") {
  std::string out;
  pb::GlobalMetadata meta;
  meta.set_version(version);
  frame(out, meta);
  for (const pb::Node& n : nodes) {
    frame(out, n);
  }
  return out;
}

class ChakraTest : public ::testing::Test {
 protected:
  std::string prefix(const std::string& name = "trace") const {
    return (dir_.path() / name).string();
  }
  std::string rank_path(int r, const std::string& name = "trace") const {
    return prefix(name) + "." + std::to_string(r) + ".et";
  }
  void write_rank(int r, const std::vector<pb::Node>& nodes, const std::string& name = "trace") {
    write_bytes(rank_path(r, name), file_bytes(nodes));
  }
  void write_raw(int r, const std::string& bytes, const std::string& name = "trace") {
    write_bytes(rank_path(r, name), bytes);
  }
  std::string write_groups(const std::string& json) {
    const std::string p = (dir_.path() / "groups.json").string();
    write_bytes(p, json);
    return p;
  }
  Workload read(const std::optional<std::string>& groups = std::nullopt,
                const std::string& name = "trace") {
    return read_chakra(prefix(name), groups);
  }
  std::string read_error(const std::optional<std::string>& groups = std::nullopt) {
    return error_of([&] { read_chakra(prefix(), groups); });
  }

  test::TempDir dir_;
};

using test::contains;

std::string to_json(const Workload& w) {
  std::ostringstream out;
  write_workload_json(w, out);
  return out.str();
}

OpId op(const Workload& w, std::string_view id) {
  const std::optional<OpId> o = w.find_op(id);
  EXPECT_TRUE(o.has_value()) << "no op " << id;
  return o.value_or(0);
}

// ---------------------------------------------------------------------------------------------
// Reading.

TEST_F(ChakraTest, AcceptsEveryIntegerWidthForTheSameAttributes) {
  for (const Width width : kWidths) {
    SCOPED_TRACE(static_cast<int>(width));
    for (int r = 0; r < 2; ++r) {
      pb::Node c = comp(1, 5);
      set_int(c, "num_ops", 1000000, width);
      set_int(c, "tensor_size", 4096, width);
      pb::Node ar;
      ar.set_id(2);
      ar.set_type(pb::COMM_COLL_NODE);
      ar.set_duration_micros(7);
      set_int(ar, "comm_type", pb::REDUCE_SCATTER, width);
      set_int(ar, "comm_size", 1 << 20, width);
      ar.add_data_deps(1);
      pb::Node s = p2p(3, r == 0, 1 - r, 0, 1);
      s.clear_attr();
      set_int(s, r == 0 ? "comm_dst" : "comm_src", 1 - r, width);
      set_int(s, "comm_size", 300, width);
      write_rank(r, {c, ar, s});
    }
    const Workload w = read();
    ASSERT_EQ(w.rank_count(), 2u);
    const OpId c = op(w, "r1.n1");
    EXPECT_EQ(w.kind(c), OpKind::kCompute);
    EXPECT_EQ(w.bytes(c), 4096);
    ASSERT_NE(w.compute_shape(c), nullptr);
    EXPECT_EQ(w.compute_shape(c)->flops, 1e6);
    EXPECT_EQ(w.duration_ns(c), 5000);
    const OpId ar = op(w, "r1.n2");
    EXPECT_EQ(w.kind(ar), OpKind::kReduceScatter);
    EXPECT_EQ(w.bytes(ar), 1 << 20);
    EXPECT_EQ(w.duration_ns(ar), 7000);
    const OpId recv = op(w, "r1.n3");
    EXPECT_EQ(w.kind(recv), OpKind::kRecv);
    EXPECT_EQ(w.peer(recv), 0);
    EXPECT_EQ(w.bytes(recv), 300);
    EXPECT_EQ(w.kind(op(w, "r0.n3")), OpKind::kSend);
    EXPECT_EQ(w.peer(op(w, "r0.n3")), 1);
  }
}

TEST_F(ChakraTest, BooleansAsBoolOrInteger) {
  pb::Node a = comp(1, 1);
  attr(a, "is_cpu_op")->set_bool_val(true);
  pb::Node b = comp(2, 1);
  set_int(b, "is_cpu_op", 1, Width::kUint32);
  pb::Node c = comp(3, 1);
  set_int(c, "is_cpu_op", 0, Width::kInt64);
  write_rank(0, {a, b, c});
  const Workload w = read();
  EXPECT_EQ(w.stream(w.stream_of(op(w, "r0.n1"))).name, "cpu");
  EXPECT_EQ(w.stream(w.stream_of(op(w, "r0.n2"))).name, "cpu");
  EXPECT_EQ(w.stream(w.stream_of(op(w, "r0.n3"))).name, "compute");
}

TEST_F(ChakraTest, MapsNodeTypesToOpsAndStreams) {
  pb::Node load;
  load.set_id(10);
  load.set_type(pb::MEM_LOAD_NODE);
  set_int(load, "tensor_size", 512, Width::kUint64);
  load.set_duration_micros(2);
  pb::Node store;
  store.set_id(11);
  store.set_type(pb::MEM_STORE_NODE);
  set_int(store, "tensor_size", 256, Width::kInt32);
  pb::Node bc = coll(12, pb::BROADCAST, 64, 3);
  pb::Node red = coll(13, pb::REDUCE, 64, 3);
  set_int(red, "root", 0, Width::kInt32);
  pb::Node ag = coll(14, pb::ALL_GATHER, 128, 3);
  pb::Node a2a = coll(15, pb::ALL_TO_ALL, 128, 3);
  pb::Node ar = coll(16, pb::ALL_REDUCE, 128, 3);
  write_rank(0, {comp(9, 4), load, store, bc, red, ag, a2a, ar});
  const Workload w = read();
  const OpId l = op(w, "r0.n10");
  EXPECT_EQ(w.kind(l), OpKind::kMemcpy);
  EXPECT_EQ(w.bytes(l), 512);
  EXPECT_EQ(w.kind(op(w, "r0.n11")), OpKind::kMemcpy);
  EXPECT_EQ(w.bytes(op(w, "r0.n11")), 256);
  EXPECT_EQ(w.duration_ns(op(w, "r0.n11")), kNoDuration);  // duration_micros 0: no duration
  EXPECT_EQ(w.kind(op(w, "r0.n12")), OpKind::kBroadcast);
  EXPECT_EQ(w.peer(op(w, "r0.n12")), 0);  // no root attribute: the group's first rank
  EXPECT_EQ(w.kind(op(w, "r0.n13")), OpKind::kReduce);
  EXPECT_EQ(w.kind(op(w, "r0.n14")), OpKind::kAllGather);
  EXPECT_EQ(w.kind(op(w, "r0.n15")), OpKind::kAllToAll);
  EXPECT_EQ(w.kind(op(w, "r0.n16")), OpKind::kAllReduce);
  // Compute and memory on "compute", communication on "comm", each in file order.
  ASSERT_EQ(w.last_stream(0) - w.first_stream(0), 2u);
  const Stream& compute = w.stream(w.first_stream(0));
  const Stream& comm = w.stream(w.first_stream(0) + 1);
  EXPECT_EQ(compute.name, "compute");
  EXPECT_EQ(compute.op_count, 3u);
  EXPECT_EQ(w.name(compute.first_op + 1), "r0.n10");
  EXPECT_EQ(comm.name, "comm");
  EXPECT_EQ(comm.op_count, 5u);
  EXPECT_EQ(w.name(comm.first_op), "r0.n12");
  EXPECT_EQ(w.name(comm.first_op + 4), "r0.n16");
  // Without a pg_name, collectives are on "world", all ranks.
  ASSERT_EQ(w.groups().size(), 1u);
  EXPECT_EQ(w.groups()[0].name, "world");
}

TEST_F(ChakraTest, TwoRankAllReduceOnACommGroup) {
  // Rank 0 computes 10 us, rank 1 30 us; the all-reduce (20 us) starts when rank 1 arrives.
  write_rank(0, {comp(1, 10), coll(2, pb::ALL_REDUCE, 1 << 26, 20, "0", {1})});
  write_rank(1, {comp(1, 30), coll(2, pb::ALL_REDUCE, 1 << 26, 20, "0", {1})});
  const std::string groups = write_groups(R"({"0": [1, 0], "unused": [0]})");
  const test::Simulated s = test::simulate(read(groups));
  ASSERT_EQ(s.w.groups().size(), 2u);
  EXPECT_EQ(s.w.groups()[0].name, "0");
  EXPECT_EQ(s.w.groups()[0].ranks, (std::vector<Rank>{1, 0}));  // file order kept
  EXPECT_EQ(s.w.group_info(s.w.group(s.op("r0.n2"))).name, "0");
  EXPECT_EQ(s.w.deps(s.op("r0.n2")).size(), 1u);
  EXPECT_EQ(s.start_ns("r0.n2"), test::us(30));
  EXPECT_EQ(s.end_ns("r1.n2"), test::us(30 + 20));
  EXPECT_EQ(s.r.step_time.count_ns(), test::us(50));
}

TEST_F(ChakraTest, CommGroupsGiveSubgroupsTheirRanks) {
  for (int r = 0; r < 4; ++r) {
    write_rank(r, {coll(1, pb::ALL_REDUCE, 1024, 5, r < 2 ? "tp0" : "tp1"),
                   coll(2, pb::ALL_REDUCE, 1024, 5, "dp" + std::to_string(r % 2))});
  }
  const std::string groups =
      write_groups(R"({"tp0": [0, 1], "tp1": [2, 3], "dp0": [0, 2], "dp1": [1, 3]})");
  const test::Simulated s = test::simulate(read(groups));
  EXPECT_EQ(s.w.group_info(s.w.group(s.op("r3.n1"))).ranks, (std::vector<Rank>{2, 3}));
  EXPECT_EQ(s.w.group_info(s.w.group(s.op("r3.n2"))).ranks, (std::vector<Rank>{1, 3}));
  EXPECT_EQ(s.g.instance_count(), 4u);
  EXPECT_EQ(s.r.step_time.count_ns(), test::us(10));
}

TEST_F(ChakraTest, WithoutCommGroupsEveryPgNameIsAllRanks) {
  for (int r = 0; r < 2; ++r) {
    write_rank(r, {coll(1, pb::ALL_REDUCE, 1024, 5, "7"), coll(2, pb::ALL_GATHER, 1024, 5)});
  }
  const Workload w = read();
  ASSERT_EQ(w.groups().size(), 2u);
  EXPECT_EQ(w.groups()[0].name, "7");
  EXPECT_EQ(w.groups()[0].ranks, (std::vector<Rank>{0, 1}));
  EXPECT_EQ(w.groups()[1].name, "world");
  EXPECT_EQ(w.groups()[1].ranks, (std::vector<Rank>{0, 1}));
}

TEST_F(ChakraTest, CommGroupsFileMustListEveryPgName) {
  for (int r = 0; r < 2; ++r) {
    write_rank(r, {coll(1, pb::ALL_REDUCE, 1024, 5, "3")});
  }
  const std::string groups = write_groups(R"({"0": [0, 1]})");
  const std::string e = read_error(groups);
  EXPECT_TRUE(contains(e, "trace.0.et")) << e;
  EXPECT_TRUE(contains(e, "node 1")) << e;
  EXPECT_TRUE(contains(e, "pg_name '3' is not a group in the comm-groups file")) << e;
  EXPECT_TRUE(contains(e, "groups.json")) << e;
}

TEST_F(ChakraTest, SendAndRecvPairUp) {
  // Rank 0 computes 10 us then sends; rank 1 receives (5 us transfer), then computes.
  write_rank(0, {comp(1, 10), p2p(2, true, 1, 4096, 5, {1})});
  write_rank(1, {p2p(7, false, 0, 4096, 5), comp(8, 20, {7})});
  const test::Simulated s = test::simulate(read());
  EXPECT_EQ(s.w.kind(s.op("r0.n2")), OpKind::kSend);
  EXPECT_EQ(s.w.peer(s.op("r0.n2")), 1);
  EXPECT_EQ(s.w.kind(s.op("r1.n7")), OpKind::kRecv);
  EXPECT_EQ(s.w.peer(s.op("r1.n7")), 0);
  EXPECT_EQ(s.w.group(s.op("r1.n7")), kNoGroup);
  EXPECT_EQ(s.start_ns("r1.n7"), test::us(10));
  EXPECT_EQ(s.start_ns("r1.n8"), test::us(15));
  EXPECT_EQ(s.r.step_time.count_ns(), test::us(35));
}

TEST_F(ChakraTest, DependenciesForwardBackwardAndThroughMetadataNodes) {
  // File order: a (depends on c, later in the file), meta (depends on b), b, c, d (depends on
  // meta -> b, ctrl and data deps both). All compute: one stream in file order a, b, c, d.
  pb::Node a = comp(1, 1, {3});
  pb::Node meta;
  meta.set_id(5);
  meta.set_type(pb::METADATA_NODE);
  meta.add_ctrl_deps(2);
  pb::Node b = comp(2, 1);
  pb::Node c = comp(3, 1);
  pb::Node d = comp(4, 1, {5});
  d.add_ctrl_deps(3);
  d.add_ctrl_deps(1);
  write_rank(0, {a, meta, b, c, d});
  const Workload w = read();
  EXPECT_EQ(w.op_count(), 4u);  // the metadata node is no op
  auto names = [&](std::string_view id) {
    std::vector<std::string> out;
    for (OpId dep : w.deps(op(w, id))) {
      out.push_back(w.name(dep));
    }
    return out;
  };
  EXPECT_EQ(names("r0.n1"), (std::vector<std::string>{"r0.n3"}));
  EXPECT_TRUE(names("r0.n2").empty());
  // d: c is its stream predecessor (implied, dropped); b through the metadata node; a.
  EXPECT_EQ(names("r0.n4"), (std::vector<std::string>{"r0.n1", "r0.n2"}));
  // a waits for c, which is after a on the same stream: a cycle the analysis reports.
  const std::string e = error_of([&] { analyze(w, "t"); });
  EXPECT_TRUE(contains(e, "cycle")) << e;
}

TEST_F(ChakraTest, OpIdsAreRankAndNodeIdUnlessTheFileSaysNamesAre) {
  pb::Node a = comp(1, 1);
  a.set_name("fwd");
  pb::Node b = comp(2, 1, {1});
  b.set_name("fwd");  // PyTorch traces repeat kernel names
  write_rank(0, {a, b});
  Workload w = read();
  EXPECT_EQ(w.name(w.stream(w.first_stream(0)).first_op + 1), "r0.n2");
  // Files Lagom writes flag their names as op ids.
  pb::GlobalMetadata meta;
  meta.set_version("0.0.4");
  pb::AttributeProto* flag = meta.add_attr();
  flag->set_name("lagom_names_are_op_ids");
  flag->set_bool_val(true);
  auto with_flag = [&](const std::vector<pb::Node>& nodes) {
    std::string out;
    frame(out, meta);
    for (const pb::Node& n : nodes) {
      frame(out, n);
    }
    return out;
  };
  b.set_name("bwd");
  write_raw(0, with_flag({a, b}));
  w = read();
  EXPECT_EQ(w.name(w.stream(w.first_stream(0)).first_op + 1), "bwd");
  b.set_name("fwd");
  write_raw(0, with_flag({a, b}));
  const std::string e = read_error();
  EXPECT_TRUE(contains(e, "duplicate op id 'fwd'")) << e;
}

// Ranks whose files hold the same bytes share one parse; the workload must be what parsing each
// file gives: ops named for their own rank, groups and dependencies the same, and errors that
// depend on the rank (membership of a group) still raised for the rank they concern.
TEST_F(ChakraTest, IdenticalFilesAreReadOnceAndGiveEachRankItsOwnOps) {
  const std::vector<pb::Node> nodes = {comp(1, 10), coll(2, pb::ALL_REDUCE, 4096, 0, "dp", {1}),
                                       comp(3, 5, {2})};
  for (int r = 0; r < 4; ++r) {
    write_rank(r, nodes);
  }
  const Workload w = read();
  ASSERT_EQ(w.rank_count(), 4u);
  ASSERT_EQ(w.op_count(), 12u);
  for (Rank r = 0; r < 4; ++r) {
    SCOPED_TRACE(r);
    const OpId c = op(w, fmt::format("r{}.n1", r));
    const OpId ar = op(w, fmt::format("r{}.n2", r));
    const OpId last = op(w, fmt::format("r{}.n3", r));
    EXPECT_EQ(w.rank_of(c), r);
    EXPECT_EQ(w.rank_of(ar), r);
    EXPECT_EQ(w.duration_ns(c), 10'000);
    ASSERT_EQ(w.deps(ar).size(), 1u);
    EXPECT_EQ(w.deps(ar)[0], c);
    ASSERT_EQ(w.deps(last).size(), 1u);
    EXPECT_EQ(w.deps(last)[0], ar);
    EXPECT_EQ(w.group_info(w.group(ar)).name, "dp");
  }
  EXPECT_EQ(w.groups().size(), 1u);
  // The same set with every file parsed on its own (distinct bytes: another version string)
  // gives the same workload file.
  for (int r = 0; r < 4; ++r) {
    write_raw(r, file_bytes(nodes, "0.0." + std::to_string(r)), "distinct");
  }
  EXPECT_EQ(to_json(read(std::nullopt, "distinct")), to_json(w));
  // A group that leaves out rank 2: its copy of the shared program is the one refused.
  const std::string groups = write_groups(R"({"dp": [0, 1, 3]})");
  const std::string e = read_error(groups);
  EXPECT_TRUE(contains(e, "'r2.n2' is on rank 2, which is not a member of group 'dp'")) << e;
}

// Chakra's converter numbers nodes on from one rank's file to the next, so files differ; node ids
// far apart take the hash-map index instead of the table.
TEST_F(ChakraTest, NodeIdsNumberedOnOrFarApartResolve) {
  for (int r = 0; r < 2; ++r) {
    const std::uint64_t base = r == 0 ? 0 : std::uint64_t{1} << 40;
    write_rank(r, {comp(base + 7, 10), coll(base + 9, pb::ALL_REDUCE, 4096, 2, "", {base + 7}),
                   comp(base + 1'000'000'000, 1, {base + 9})});
  }
  const Workload w = read();
  const OpId ar = op(w, "r1.n1099511627785");
  ASSERT_EQ(w.deps(ar).size(), 1u);
  EXPECT_EQ(w.name(w.deps(ar)[0]), "r1.n1099511627783");
  const OpId last = op(w, "r0.n1000000000");
  ASSERT_EQ(w.deps(last).size(), 1u);
  EXPECT_EQ(w.name(w.deps(last)[0]), "r0.n9");
  // A duplicate id is found by either index.
  write_rank(0, {comp(5, 1), comp(6, 1), comp(5, 1)});
  write_rank(1, {comp(5, 1)});
  EXPECT_TRUE(contains(read_error(), "node id 5 appears twice")) << read_error();
  write_rank(0, {comp(5, 1), comp(std::uint64_t{1} << 50, 1), comp(5, 1)});
  EXPECT_TRUE(contains(read_error(), "node id 5 appears twice")) << read_error();
}

// A set mixing files whose names are op ids (written by Lagom) with plain ones: the plain ranks'
// ops are r<rank>.n<id> beside the written names, and a written name that equals one of those is
// a duplicate.
TEST_F(ChakraTest, NamedAndNumberedFilesMix) {
  pb::GlobalMetadata meta;
  meta.set_version("0.0.4");
  pb::AttributeProto* flag = meta.add_attr();
  flag->set_name("lagom_names_are_op_ids");
  flag->set_bool_val(true);
  auto named = [&](const std::string& name) {
    pb::Node n = comp(1, 1);
    n.set_name(name);
    std::string out;
    frame(out, meta);
    frame(out, n);
    return out;
  };
  write_raw(0, named("fwd"));
  write_rank(1, {comp(1, 1)});
  const Workload w = read();
  EXPECT_EQ(w.name(w.stream(w.first_stream(0)).first_op), "fwd");
  EXPECT_EQ(w.name(w.stream(w.first_stream(1)).first_op), "r1.n1");
  write_raw(0, named("r1.n1"));
  const std::string e = read_error();
  EXPECT_TRUE(contains(e, "duplicate op id 'r1.n1'")) << e;
  // The largest node id is a legal id that no number can hold: it is named as text, alone or
  // beside a file whose names are ids.
  constexpr std::uint64_t kLast = std::numeric_limits<std::uint64_t>::max();
  write_rank(1, {comp(kLast, 1)});
  write_raw(0, named("fwd"));
  EXPECT_EQ(read().name(1), "r1.n18446744073709551615");
  write_rank(0, {comp(kLast, 1)});
  EXPECT_EQ(read().name(0), "r0.n18446744073709551615");
}

TEST_F(ChakraTest, ReadsGzipAndPlainFilesAlike) {
  const std::vector<pb::Node> r0 = {comp(1, 10), coll(2, pb::ALL_REDUCE, 4096, 3, "", {1})};
  const std::vector<pb::Node> r1 = {comp(1, 12), coll(2, pb::ALL_REDUCE, 4096, 3, "", {1})};
  write_rank(0, r0);
  write_rank(1, r1);
  const std::string plain = to_json(read());
  ChakraReadInfo info;
  read_chakra(prefix(), std::nullopt, &info);
  EXPECT_EQ(info.files, (std::vector<std::string>{rank_path(0), rank_path(1)}));
  EXPECT_EQ(info.version, "0.0.4");
  EXPECT_NE(info.input_hash, 0u);
  write_raw(0, gzip(file_bytes(r0)), "gz");
  write_raw(1, file_bytes(r1), "gz");  // a set may mix them
  EXPECT_EQ(to_json(read(std::nullopt, "gz")), plain);
  // Concatenated gzip members are one stream.
  const std::string bytes = file_bytes(r0);
  write_raw(0, gzip(bytes.substr(0, 7)) + gzip(bytes.substr(7)), "gz");
  EXPECT_EQ(to_json(read(std::nullopt, "gz")), plain);
}

TEST_F(ChakraTest, FindsRankFilesAndNamesGaps) {
  write_rank(0, {comp(1, 1)});
  write_rank(1, {comp(1, 1)});
  write_rank(3, {comp(1, 1)});
  write_bytes(prefix() + ".x.et", "ignored");
  write_bytes(prefix() + ".04.et", "ignored");
  write_bytes(prefix() + ".5.et.bak", "ignored");
  std::string e = read_error();
  EXPECT_TRUE(contains(e, "trace.2.et is missing")) << e;
  EXPECT_TRUE(contains(e, "missing ranks: 2")) << e;
  fs::remove(rank_path(3));
  EXPECT_EQ(chakra_rank_files(prefix()), (std::vector<std::string>{rank_path(0), rank_path(1)}));
  e = error_of([&] { read_chakra(prefix("nothing"), std::nullopt); });
  EXPECT_TRUE(contains(e, "no Chakra trace files")) << e;
  EXPECT_TRUE(contains(e, "nothing.0.et")) << e;
  e = error_of([&] { read_chakra((dir_.path() / "no-such-dir" / "x").string(), std::nullopt); });
  EXPECT_TRUE(contains(e, "no Chakra trace files")) << e;
}

// ---------------------------------------------------------------------------------------------
// Bad input: every error names the file, where in it, and what was expected.

TEST_F(ChakraTest, BadFramingAndNotChakraFiles) {
  const std::string good = file_bytes({comp(1, 1), comp(2, 1)});
  struct Case {
    std::string bytes;
    std::vector<std::string> expect;
  };
  std::string long_prefix;
  put_varint(long_prefix, 1000);
  const std::vector<Case> cases = {
      {"", {"trace.0.et", "the file is empty", "GlobalMetadata"}},
      {R"({"format": "lagom.workload", "version": 1})", {"trace.0.et", "looks like JSON"}},
      {good.substr(0, good.size() - 3), {"trace.0.et", "message 2", "only", "remain", "truncated"}},
      {good + long_prefix + "abc", {"trace.0.et", "message 3", "says 1000 bytes", "only 3 remain"}},
      {good + "\x80", {"trace.0.et", "message 3", "length prefix is cut off"}},
      {good + std::string("\xff\xff\xff\xff\xff\x01", 6), {"message 3", "more than 5 bytes"}},
      {std::string("\x03\xff\xff\xff", 4), {"trace.0.et", "message 0", "not a Chakra ET file"}},
  };
  for (const Case& c : cases) {
    write_raw(0, c.bytes);
    const std::string e = read_error();
    for (const std::string& want : c.expect) {
      EXPECT_TRUE(contains(e, want)) << "want '" << want << "' in: " << e;
    }
  }
}

TEST_F(ChakraTest, FirstMessageMustBeGlobalMetadata) {
  std::string bytes;
  frame(bytes, comp(1, 1));
  write_raw(0, bytes);
  const std::string e = read_error();
  EXPECT_TRUE(contains(e, "trace.0.et: message 0")) << e;
  EXPECT_TRUE(contains(e, "not a Chakra ET file")) << e;
}

TEST_F(ChakraTest, MalformedProtobuf) {
  std::string bytes = file_bytes({comp(1, 1)});
  const std::string junk("\x0a\x05\x01", 3);  // field 1 as a 5-byte string, 1 byte present
  put_varint(bytes, junk.size());
  bytes += junk;
  write_raw(0, bytes);
  std::string e = read_error();
  EXPECT_TRUE(contains(e, "trace.0.et: message 2")) << e;
  EXPECT_TRUE(contains(e, "malformed protobuf: not a valid Node")) << e;
  // Invalid UTF-8 in a string field: protobuf's own explanation is in the error.
  pb::Node n = comp(1, 1);
  n.set_name("@@");
  std::string invalid = file_bytes({n});
  invalid.replace(invalid.find("@@"), 2, "\xc3\x28");  // not UTF-8, same length
  write_raw(0, invalid);
  e = read_error();
  EXPECT_TRUE(contains(e, "malformed protobuf")) << e;
  EXPECT_TRUE(contains(e, "UTF-8")) << e;
}

TEST_F(ChakraTest, GzipErrors) {
  const std::string z = gzip(file_bytes({comp(1, 1), comp(2, 1), comp(3, 1)}));
  write_raw(0, z.substr(0, z.size() / 2));
  std::string e = read_error();
  EXPECT_TRUE(contains(e, "trace.0.et")) << e;
  EXPECT_TRUE(contains(e, "gzip data ends early")) << e;
  std::string corrupt = z;
  for (std::size_t i = 12; i < corrupt.size() - 8; ++i) {
    corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  }
  write_raw(0, corrupt);
  e = read_error();
  EXPECT_TRUE(contains(e, "trace.0.et")) << e;
  EXPECT_TRUE(contains(e, "gzip")) << e;
  write_raw(0, z + "trailing");
  e = read_error();
  EXPECT_TRUE(contains(e, "trailing data after the gzip stream")) << e;
}

TEST_F(ChakraTest, BadNodes) {
  struct Case {
    pb::Node node;
    std::vector<std::string> expect;
  };
  std::vector<Case> cases;
  {
    pb::Node n = comp(4, 1);
    n.set_type(pb::INVALID_NODE);
    cases.push_back({n, {"node 4", "unknown node type 0 (INVALID_NODE)"}});
    n.set_type(static_cast<pb::NodeType>(99));
    cases.push_back({n, {"node 4", "unknown node type 99"}});
  }
  cases.push_back({coll(4, pb::GATHER, 8, 1), {"node 4", "comm_type 3 (GATHER) is not supported"}});
  cases.push_back({coll(4, static_cast<pb::CollectiveCommType>(42), 8, 1),
                   {"node 4", "comm_type 42 (not a CollectiveCommType)"}});
  {
    pb::Node n = coll(4, pb::ALL_REDUCE, 8, 1);
    n.clear_attr();
    set_int(n, "comm_size", 8);
    cases.push_back({n, {"node 4", "missing attribute 'comm_type'"}});
    n.clear_attr();
    set_int(n, "comm_type", pb::ALL_REDUCE);
    cases.push_back({n, {"node 4", "missing attribute 'comm_size'"}});
    n.clear_attr();
    set_int(n, "comm_type", pb::ALL_REDUCE);
    set_str(n, "comm_size", "8");
    cases.push_back({n, {"node 4", "attribute 'comm_size'", "expected an integer", "string_val"}});
    n.clear_attr();
    set_int(n, "comm_type", pb::ALL_REDUCE);
    attr(n, "comm_size")->set_uint64_val(std::uint64_t{1} << 63);
    cases.push_back({n, {"node 4", "attribute 'comm_size'", "out of range"}});
    n.clear_attr();
    set_int(n, "comm_type", pb::ALL_REDUCE);
    set_int(n, "comm_size", -5);
    cases.push_back({n, {"node 4", "attribute 'comm_size'", "-5 is out of range"}});
  }
  {
    pb::Node n = p2p(4, true, 1, 8, 1);
    n.clear_attr();
    set_int(n, "comm_size", 8);
    cases.push_back({n, {"node 4", "missing attribute 'comm_dst'"}});
  }
  {
    pb::Node n = comp(4, 1);
    n.set_name("gemm");
    attr(n, "tensor_size")->mutable_int64_list()->add_values(1);
    cases.push_back({n, {"node 4 ('gemm')", "attribute 'tensor_size'", "int64_list"}});
  }
  {
    pb::Node n = comp(4, 1, {77});
    cases.push_back({n, {"trace.0.et", "node 4", "depends on node 77, which is not in the file"}});
  }
  for (const Case& c : cases) {
    write_rank(0, {comp(1, 1), c.node});
    const std::string e = read_error();
    EXPECT_TRUE(contains(e, "trace.0.et")) << e;
    for (const std::string& want : c.expect) {
      EXPECT_TRUE(contains(e, want)) << "want '" << want << "' in: " << e;
    }
  }
  write_rank(0, {comp(1, 1), comp(1, 2)});
  const std::string e = read_error();
  EXPECT_TRUE(contains(e, "node id 1 appears twice")) << e;
}

TEST_F(ChakraTest, BadCommGroupsFiles) {
  for (int r = 0; r < 2; ++r) {
    write_rank(r, {coll(1, pb::ALL_REDUCE, 1024, 5, "0")});
  }
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"0\": [0, 1]", "not valid JSON"},
      {"[[0, 1]]", "expected a JSON object"},
      {R"({"0": 1})", "group '0': expected an array of ranks"},
      {R"({"0": [0, "1"]})", "expected ranks (integers >= 0)"},
      {R"({"0": [0, 2]})", "rank 2 does not exist (the trace set has ranks 0..1)"},
      {R"({"0": [0, 0]})", "lists rank 0 twice"},
  };
  for (const auto& [json, want] : cases) {
    const std::string e = read_error(write_groups(json));
    EXPECT_TRUE(contains(e, "groups.json")) << e;
    EXPECT_TRUE(contains(e, want)) << "want '" << want << "' in: " << e;
  }
  const std::string e = read_error((dir_.path() / "absent.json").string());
  EXPECT_TRUE(contains(e, "cannot open comm-groups file")) << e;
}

// ---------------------------------------------------------------------------------------------
// Writing.

std::vector<pb::Node> read_back(const std::string& path, pb::GlobalMetadata* meta = nullptr) {
  const std::string bytes = test::slurp(path);
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  std::vector<pb::Node> nodes;
  bool first = true;
  std::uint32_t len = 0;
  while (in.ReadVarint32(&len)) {
    std::string msg;
    EXPECT_TRUE(in.ReadString(&msg, static_cast<int>(len)));
    if (first) {
      pb::GlobalMetadata m;
      EXPECT_TRUE(m.ParseFromString(msg));
      if (meta != nullptr) {
        *meta = m;
      }
      first = false;
    } else {
      nodes.emplace_back();
      EXPECT_TRUE(nodes.back().ParseFromString(msg));
    }
  }
  return nodes;
}

const pb::AttributeProto* find_attr(const pb::Node& n, const std::string& name) {
  for (const pb::AttributeProto& a : n.attr()) {
    if (a.name() == name) {
      return &a;
    }
  }
  return nullptr;
}

TEST_F(ChakraTest, WritesWhatChakraConsumersRead) {
  // Rank 0: compute "c" (waits for the all-reduce of the other stream), all-reduce "ar" first in
  // its stream; sub-microsecond durations; a send to rank 1.
  const Workload w = test::workload(R"([
    {"rank": 0, "streams": [
      {"stream": "main", "ops": [
        {"id": "c", "kind": "compute", "duration_us": 2.4, "bytes": 100, "flops": 3e9,
         "deps": ["ar"]},
        {"id": "s", "kind": "send", "peer": 1, "bytes": 64, "duration_us": 0.0004}]},
      {"stream": "nccl", "ops": [
        {"id": "ar", "kind": "allreduce", "group": "g", "bytes": 4096, "duration_us": 3,
         "config": {"algo": "Ring", "nchannels": 2}},
        {"id": "bc", "kind": "broadcast", "group": "g", "root": 1, "bytes": 8,
         "duration_us": 1}]}]},
    {"rank": 1, "streams": [
      {"stream": "main", "ops": [
        {"id": "ar1", "kind": "allreduce", "group": "g", "bytes": 4096, "duration_us": 3,
         "config": {"algo": "Ring", "nchannels": 2}},
        {"id": "bc1", "kind": "broadcast", "group": "g", "root": 1, "bytes": 8, "duration_us": 1},
        {"id": "r", "kind": "recv", "peer": 0, "bytes": 64, "duration_us": 0.0004}]}]}])",
                                    R"({"g": [1, 0]})");
  const std::vector<std::string> files = write_chakra(w, prefix("out"));
  EXPECT_EQ(files, (std::vector<std::string>{rank_path(0, "out"), rank_path(1, "out"),
                                             prefix("out") + ".comm_groups.json"}));
  EXPECT_EQ(nlohmann::json::parse(test::slurp(files[2])),
            nlohmann::json::parse(R"({"g": [1, 0]})"));
  pb::GlobalMetadata meta;
  const std::vector<pb::Node> nodes = read_back(files[0], &meta);
  EXPECT_EQ(meta.version(), "0.0.4");
  ASSERT_EQ(nodes.size(), 4u);
  // Dependency-compatible order: ar before c; stream order ar -> bc and c -> s.
  std::vector<std::string> order;
  for (const pb::Node& n : nodes) {
    order.push_back(n.name());
  }
  EXPECT_EQ(order, (std::vector<std::string>{"ar", "c", "s", "bc"}));
  const pb::Node& ar = nodes[0];
  const pb::Node& c = nodes[1];
  const pb::Node& s = nodes[2];
  const pb::Node& bc = nodes[3];
  EXPECT_EQ(ar.type(), pb::COMM_COLL_NODE);
  EXPECT_EQ(find_attr(ar, "comm_type")->int64_val(), pb::ALL_REDUCE);
  EXPECT_EQ(find_attr(ar, "comm_size")->int64_val(), 4096);
  EXPECT_EQ(find_attr(ar, "pg_name")->string_val(), "g");
  EXPECT_EQ(ar.duration_micros(), 3u);
  EXPECT_EQ(find_attr(ar, "lagom_duration_ns"), nullptr);  // whole microseconds
  EXPECT_EQ(c.type(), pb::COMP_NODE);
  EXPECT_EQ(c.duration_micros(), 2u);  // 2.4 us rounds to 2
  EXPECT_EQ(find_attr(c, "lagom_duration_ns")->int64_val(), 2400);
  EXPECT_EQ(find_attr(c, "num_ops")->int64_val(), 3000000000);
  EXPECT_EQ(find_attr(c, "tensor_size")->uint64_val(), 100u);
  EXPECT_EQ(std::vector<std::uint64_t>(c.data_deps().begin(), c.data_deps().end()),
            (std::vector<std::uint64_t>{ar.id()}));
  EXPECT_TRUE(c.ctrl_deps().empty());
  EXPECT_EQ(s.type(), pb::COMM_SEND_NODE);
  EXPECT_EQ(std::vector<std::uint64_t>(s.ctrl_deps().begin(), s.ctrl_deps().end()),
            (std::vector<std::uint64_t>{c.id()}));
  EXPECT_EQ(find_attr(s, "comm_src")->int32_val(), 0);
  EXPECT_EQ(find_attr(s, "comm_dst")->int32_val(), 1);
  EXPECT_EQ(find_attr(s, "comm_size")->int64_val(), 64);
  EXPECT_EQ(s.duration_micros(), 0u);  // 0.4 ns rounds to 0 ns, then to 0 us
  EXPECT_EQ(find_attr(s, "lagom_duration_ns")->int64_val(), 0);
  EXPECT_EQ(find_attr(bc, "comm_type")->int64_val(), pb::BROADCAST);
  EXPECT_EQ(find_attr(bc, "root")->int32_val(), 1);
  // Back in: the same workload, streams and all, and the same simulation.
  const Workload back = read_chakra(prefix("out"), files[2]);
  EXPECT_EQ(to_json(back), to_json(w));
  const test::Simulated a = test::simulate(Workload(w));
  const test::Simulated b = test::simulate(Workload(back));
  EXPECT_EQ(a.r.step_time, b.r.step_time);
  EXPECT_EQ(a.r.fingerprint, b.r.fingerprint);
}

TEST_F(ChakraTest, WriterRejectsWhatChakraCannotExpress) {
  const Workload w = test::workload(R"([
    {"rank": 0, "streams": [{"stream": "s", "ops": [
      {"id": "a", "kind": "compute", "duration_us": 1}]}]},
    {"rank": 1, "streams": [{"stream": "s", "ops": [
      {"id": "b", "kind": "compute", "duration_us": 1, "deps": ["a"]}]}]}])");
  std::string e = error_of([&] { write_chakra(w, prefix("x")); });
  EXPECT_TRUE(contains(e, "op 'b'")) << e;
  EXPECT_TRUE(contains(e, "across ranks")) << e;
  EXPECT_FALSE(fs::exists(rank_path(0, "x")));  // nothing written
  e = error_of([&] {
    write_chakra(test::workload(R"([{"rank": 0, "streams": []}])"),
                 (dir_.path() / "no-dir" / "x").string());
  });
  EXPECT_TRUE(contains(e, "cannot write")) << e;
}

TEST_F(ChakraTest, RoundTripKeepsShapesConfigsAndSubMicrosecondDurations) {
  const Workload w = test::workload(R"([
    {"rank": 0, "streams": [
      {"stream": "compute", "ops": [
        {"id": "g", "kind": "compute", "flops": 1.5e3, "bytes": 10, "blocks": 132,
         "blocks_per_sm": 2, "class": "gemm"},
        {"id": "g8", "kind": "compute", "flops": 3e3, "class": "gemm", "precision": "fp8"},
        {"id": "g32", "kind": "compute", "flops": 3e3, "class": "attention", "precision": "fp32"},
        {"id": "z", "kind": "compute", "duration_us": 0},
        {"id": "m", "kind": "memcpy", "bytes": 4, "duration_us": 0.123}]},
      {"stream": "empty", "ops": []},
      {"stream": "comm", "ops": [
        {"id": "rs", "kind": "reducescatter", "group": "w", "bytes": 1024,
         "config": {"algo": "Ring", "proto": "LL128", "nchannels": 4, "nthreads": 256,
                    "chunk_bytes": 131072}}]}]}])",
                                    R"({"w": [0]})");
  write_chakra(w, prefix("rt"));
  const Workload back = read_chakra(prefix("rt"), chakra_comm_groups_path(prefix("rt")));
  EXPECT_EQ(to_json(back), to_json(w));
  EXPECT_EQ(back.last_stream(0) - back.first_stream(0), 3u);  // the empty stream too
  EXPECT_EQ(back.duration_ns(back.find_op("m").value()), 123);
  EXPECT_EQ(back.duration_ns(back.find_op("z").value()), 0);
  EXPECT_EQ(back.compute_shape(back.find_op("g8").value())->precision, Precision::kFp8);
  EXPECT_EQ(back.compute_shape(back.find_op("g").value())->precision, Precision::kBf16);
}

// `w` with every duration rounded to whole microseconds, Chakra's resolution.
Workload whole_microseconds(const Workload& w) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(to_json(w));
  for (auto& rank : doc["ranks"]) {
    for (auto& stream : rank["streams"]) {
      for (auto& o : stream["ops"]) {
        if (o.contains("duration_us")) {
          o["duration_us"] = std::round(o["duration_us"].get<double>());
        }
      }
    }
  }
  return parse_workload_json(doc.dump(), "rounded");
}

// Whether any node of the trace set carries `attr`.
bool any_node_has(const std::vector<std::string>& files, const std::string& attr);

// The issue's requirement: export then import gives the same step time and fingerprint. Once
// with the examples' durations rounded to whole microseconds (nothing but Chakra's own
// duration_micros carries them), once as they are (sub-microsecond parts ride in
// lagom_duration_ns).
TEST_F(ChakraTest, RoundTripOfTheExamplesSimulatesIdentically) {
  int checked = 0;
  for (const fs::directory_entry& e :
       fs::directory_iterator(fs::path(LAGOM_SOURCE_DIR) / "examples" / "workloads")) {
    if (e.path().extension() != ".json") {
      continue;
    }
    const Workload original = load_workload_file(e.path().string());
    for (const bool round : {true, false}) {
      SCOPED_TRACE(e.path().string() + (round ? " (whole us)" : " (as is)"));
      const Workload w = round ? whole_microseconds(original) : Workload(original);
      const std::string p = prefix(e.path().stem().string() + (round ? ".us" : ""));
      const std::vector<std::string> files = write_chakra(w, p);
      if (round) {
        EXPECT_FALSE(any_node_has(files, "lagom_duration_ns"));
      }
      const Workload back = read_chakra(p, chakra_comm_groups_path(p));
      const test::Simulated a = test::simulate(Workload(w));
      const test::Simulated b = test::simulate(Workload(back));
      EXPECT_EQ(a.r.step_time, b.r.step_time);
      EXPECT_EQ(a.r.fingerprint, b.r.fingerprint);
      EXPECT_EQ(to_json(back), to_json(w));
    }
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

bool any_node_has(const std::vector<std::string>& files, const std::string& attr) {
  for (const std::string& f : files) {
    if (f.ends_with(".et")) {
      for (const pb::Node& n : read_back(f)) {
        if (find_attr(n, attr) != nullptr) {
          return true;
        }
      }
    }
  }
  return false;
}

TEST_F(ChakraTest, RoundTripOfAGeneratedStepWithSubgroups) {
  const Workload w = bench::synthetic_step({16, 6, 4, 7});
  write_chakra(w, prefix("syn"));
  const Workload back = read_chakra(prefix("syn"), chakra_comm_groups_path(prefix("syn")));
  EXPECT_EQ(to_json(back), to_json(w));
  const test::Simulated a = test::simulate(Workload(w));
  const test::Simulated b = test::simulate(Workload(back));
  EXPECT_EQ(a.r.step_time, b.r.step_time);
  EXPECT_EQ(a.r.fingerprint, b.r.fingerprint);
}

}  // namespace
}  // namespace lagom::traces
