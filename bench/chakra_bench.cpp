// Chakra traces at scale (issue: scale, item 2): a data-parallel step of 96 layers with a 64 MiB
// all-reduce per layer, as Chakra's converter writes ASTRA-sim's DATA workloads, read, analysed
// and simulated on dgx-h100 nodes with and without contention; the rank files either the same
// bytes or numbered on from rank to rank as the converter numbers them. LAGOM_BENCH_SCALE=1 adds
// 4,096 ranks. LAGOM_BENCH_CHAKRA_DIR=DIR keeps the trace sets there.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "lagom/hardware/profile.hpp"
#include "lagom/sim/simulation.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/traces/chakra.hpp"
#include "lagom/traces/et_def.pb.h"

namespace lagom::bench {
namespace {

namespace pb = ChakraProtoMsg;
namespace fs = std::filesystem;

constexpr int kLayers = 96;
constexpr std::int64_t kAllReduceBytes = std::int64_t{64} << 20;
constexpr std::uint64_t kFwdMicros = 1000;

void put_message(std::string& out, const google::protobuf::MessageLite& m) {
  const std::string bytes = m.SerializeAsString();
  for (std::uint64_t v = bytes.size(); true; v >>= 7) {
    if (v < 0x80) {
      out.push_back(static_cast<char>(v));
      break;
    }
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
  }
  out += bytes;
}

pb::AttributeProto* attr(pb::Node& n, const char* name) {
  pb::AttributeProto* a = n.add_attr();
  a->set_name(name);
  return a;
}

// One rank's file in the layout of Chakra's text converter for ASTRA-sim's DATA workloads
// (chakra src/converter/text_converter.py): per layer a forward COMP_NODE; then from the last
// layer a weight-gradient COMP_NODE, its ALL_REDUCE, and (but for the first layer) an
// input-gradient COMP_NODE, each depending on the one before. Compute nodes carry
// duration_micros. The converter numbers nodes on from one rank's file to the next, so files
// differ in their ids unless `first_id` is the same for all.
std::string data_parallel_rank_file(std::uint64_t first_id) {
  std::string out;
  pb::GlobalMetadata meta;
  meta.set_version("0.0.4");
  put_message(out, meta);
  std::uint64_t id = first_id;
  auto comp = [&](const std::string& name, std::uint64_t micros, std::uint64_t parent) {
    pb::Node n;
    n.set_id(id++);
    n.set_name(name);
    n.set_type(pb::COMP_NODE);
    n.set_duration_micros(micros);
    if (parent != ~std::uint64_t{0}) {
      n.add_data_deps(parent);
    }
    put_message(out, n);
    return n.id();
  };
  std::uint64_t last = ~std::uint64_t{0};
  for (int l = 0; l < kLayers; ++l) {
    last = comp("COMP_NODE_layer" + std::to_string(l) + "_FWD", kFwdMicros, last);
  }
  for (int l = kLayers - 1; l >= 0; --l) {
    const std::string layer = "layer" + std::to_string(l);
    const std::uint64_t wg = comp("COMP_NODE_" + layer + "_BWD_WG", kFwdMicros, last);
    pb::Node n;
    n.set_id(id++);
    n.set_name("COMM_COLL_NODE_" + layer + "_ALLREDUCE");
    n.set_type(pb::COMM_COLL_NODE);
    attr(n, "comm_type")->set_int64_val(pb::ALL_REDUCE);
    attr(n, "comm_size")->set_int64_val(kAllReduceBytes);
    n.add_data_deps(wg);
    put_message(out, n);
    last = l > 0 ? comp("COMP_NODE_" + layer + "_BWD_IG", kFwdMicros, wg) : wg;
  }
  return out;
}

// Nodes per rank file.
constexpr std::uint64_t kNodesPerRank = 4 * kLayers - 1;

// The trace set of `ranks` ranks under a fresh directory (LAGOM_BENCH_CHAKRA_DIR: under that
// one, kept for `lagom simulate --chakra`); returns its prefix.
std::string write_trace_set(int ranks, bool identical) {
  const char* keep = std::getenv("LAGOM_BENCH_CHAKRA_DIR");
  const fs::path dir =
      (keep != nullptr ? fs::path(keep) : fs::temp_directory_path()) /
      ("lagom-bench-chakra-" + std::to_string(ranks) + (identical ? "-same" : "-numbered-on") +
       (keep != nullptr ? "" : "-" + std::to_string(::getpid())));
  fs::create_directories(dir);
  const std::string same = data_parallel_rank_file(0);
  for (int r = 0; r < ranks; ++r) {
    const std::string bytes =
        identical ? same : data_parallel_rank_file(static_cast<std::uint64_t>(r) * kNodesPerRank);
    std::ofstream out(dir / ("dp." + std::to_string(r) + ".et"), std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  return (dir / "dp").string();
}

double peak_rss_MB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

void BM_ChakraDpAllReduce(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const bool contention = state.range(1) != 0;
  const bool identical = state.range(2) != 0;
  const std::string prefix = write_trace_set(ranks, identical);
  const topologies::Cluster cluster = topologies::load_cluster("dgx-h100", ranks / 8);
  const hardware::HardwareProfile profile = hardware::load_profile("h100-sxm");
  auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const traces::Workload w = traces::read_chakra(prefix, std::nullopt);
    const auto t1 = std::chrono::steady_clock::now();
    sim::Simulation simulation(w, cluster, profile, sim::SimulationOptions{contention, {}});
    const auto t2 = std::chrono::steady_clock::now();
    const sim::SimResult r = simulation.run();
    const auto t3 = std::chrono::steady_clock::now();
    state.counters["ops"] = static_cast<double>(w.op_count());
    state.counters["read_s"] = secs(t0, t1);
    state.counters["setup_s"] = secs(t1, t2);
    state.counters["run_s"] = secs(t2, t3);
    state.counters["step_s"] = r.step_time.us() / 1e6;
  }
  state.counters["peak_rss_MB"] = peak_rss_MB();
  if (std::getenv("LAGOM_BENCH_CHAKRA_DIR") == nullptr) {
    std::error_code ec;
    fs::remove_all(fs::path(prefix).parent_path(), ec);
  }
}

}  // namespace

void register_chakra_benchmarks() {
  auto* b = benchmark::RegisterBenchmark("BM_ChakraDpAllReduce", BM_ChakraDpAllReduce)
                ->ArgNames({"ranks", "contention", "same_files"})
                ->Args({512, 1, 1})
                ->Args({512, 0, 1})
                ->Args({512, 1, 0})
                ->Args({512, 0, 0})
                ->Unit(benchmark::kSecond)
                ->Iterations(1);
  if (const char* env = std::getenv("LAGOM_BENCH_SCALE"); env != nullptr && env[0] == '1') {
    b->Args({4096, 1, 1})->Args({4096, 0, 1})->Args({4096, 1, 0})->Args({4096, 0, 0});
  }
}

}  // namespace lagom::bench
