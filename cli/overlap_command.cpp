// `lagom overlap`: the Lagom paper's microbenchmark (its Figure 3) as a command — one collective
// beside a compute kernel sequence on every GPU, swept over channels and chunk sizes, each point
// simulated with the contention model and compared with both running alone.
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <boost/program_options.hpp>
#include <cmath>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "command_line.hpp"
#include "commands.hpp"
#include "hardware_options.hpp"
#include "lagom/common/build_info.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/numbers.hpp"
#include "lagom/common/units.hpp"
#include "lagom/models/kernels.hpp"
#include "lagom/sim/simulation.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "overlap_bench.hpp"
#include "report.hpp"

namespace lagom::cli {

namespace po = boost::program_options;

namespace {

using models::Kernel;

std::vector<std::int64_t> parse_list(const std::string& text, const char* what, bool bytes) {
  std::vector<std::int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (bytes) {
      const std::int64_t b = parse_bytes(item, what);
      if (b < 1) {
        throw Error(fmt::format("{}: '{}' is not a size of at least 1 byte", what, item));
      }
      out.push_back(b);
    } else {
      out.push_back(parse_integer(item, what, 1, kMaxCommandChannels, "channels"));
    }
  }
  if (out.empty()) {
    throw Error(fmt::format("{} needs at least one value", what));
  }
  return out;
}

}  // namespace

int overlap_command(const std::vector<std::string>& args) {
  HardwareOptions hw;
  std::string coll_name = "allreduce";
  std::string bytes_text = "32M";
  std::vector<std::string> compute_specs;
  std::string nchannels_text = "1,2,4,8,16,32";
  std::string chunk_text = "16K,64K,256K,1M,2M";
  int nthreads = 0;
  std::string algo;
  std::string proto;
  int ranks = 0;
  std::string rows_csv;
  po::options_description desc(
      "Usage: lagom overlap --cluster PRESET [--nodes N] [--ranks R] [--coll allreduce]\n"
      "                     [--bytes 32M] --compute SPEC [--compute SPEC ...]\n"
      "                     [--nchannels 1,2,4,8,16,32] [--chunk 16K,64K,256K,1M,2M]\n"
      "                     [--nthreads T] [--algo A] [--proto P] [--profile P] [--json]\n\n"
      "The Lagom paper's overlap microbenchmark: on every GPU one collective runs on one stream\n"
      "while compute kernels run on another, both from time 0. For each (channels, chunk) it\n"
      "simulates them together (SMs held by channels, shared HBM and links) and each alone, and\n"
      "prints communication and computation time, alone and overlapped, and the makespan.\n"
      "SPEC: gemm:m=8192,n=8192,k=8192 | ffn:tokens=4096,hidden=2560,ffn=10240 |\n"
      "elementwise:elems=1e8, each with optional ,repeat=N; several --compute run in order.\n\n"
      "Options");
  desc.add_options()("help,h", "show this help")(
      "coll", po::value(&coll_name),
      "allreduce (default), allgather, reducescatter, broadcast, "
      "reduce, alltoall")("bytes", po::value(&bytes_text),
                          "collective size, nccl-tests convention (default 32M)")(
      "compute", po::value(&compute_specs), "compute kernels (see above)")(
      "nchannels", po::value(&nchannels_text), "channel counts to sweep")(
      "chunk", po::value(&chunk_text), "chunk sizes to sweep")(
      "nthreads", integer_option(&nthreads, "--nthreads", 1, kMaxCommandThreads, "threads"),
      "threads per channel (default: NCCL's)")(
      "algo", po::value(&algo), "algorithm (default: NCCL's)")("proto", po::value(&proto),
                                                               "protocol (default: NCCL's)")(
      "ranks", integer_option(&ranks, "--ranks", 1, kMaxCommandRanks, "ranks"),
      "ranks 0..R-1 (default: every GPU of the cluster)")("json",
                                                          "print {\"context\", \"rows\"} as JSON")(
      "csv", po::value(&rows_csv),
      "also write the rows as CSV to FILE (units in the column names)");
  add_hardware_options(desc, hw);
  po::variables_map vm;
  if (!parse_command_line(args, desc, vm)) {
    return kExitOk;  // --help
  }
  if (compute_specs.empty()) {
    throw po::error("--compute is required (e.g. ffn:tokens=4096,hidden=2560,ffn=10240)");
  }
  const auto kind = traces::parse_op_kind(coll_name);
  if (!kind || !traces::is_collective(*kind)) {
    throw Error(
        fmt::format("--coll '{}' is not a collective (allreduce, allgather, "
                    "reducescatter, broadcast, reduce, alltoall)",
                    coll_name));
  }
  if (traces::has_root(*kind)) {
    throw Error(
        fmt::format("--coll {} needs a root; use allreduce, allgather, reducescatter or "
                    "alltoall",
                    coll_name));
  }
  const std::int64_t bytes = parse_bytes(bytes_text, "--bytes");
  if (bytes < 1) {
    throw Error(fmt::format("--bytes: '{}' is not a size of at least 1 byte", bytes_text));
  }
  std::vector<Kernel> kernels;
  for (const std::string& spec : compute_specs) {
    const auto more = parse_compute(spec);
    kernels.insert(kernels.end(), more.begin(), more.end());
  }
  const auto channel_list = parse_list(nchannels_text, "--nchannels", false);
  const auto chunk_list = parse_list(chunk_text, "--chunk", true);
  refuse_unsupported_what_ifs(
      hw, {false, true, false},
      "overlap measures a kernel against a collective on identical GPUs (--slow-link applies; "
      "use simulate for a slow GPU or a down node)");
  const Hardware h = load_hardware(hw);
  const int nranks = ranks == 0 ? h.cluster.gpu_count() : ranks;
  if (nranks < 1 || nranks > h.cluster.gpu_count()) {
    throw Error(fmt::format("--ranks {} does not fit cluster '{}' with {} GPUs", nranks,
                            h.cluster.name(), h.cluster.gpu_count()));
  }

  nccl::ConfigOverride base;
  if (!algo.empty()) {
    base.algo = nccl::algorithm_named(algo);
  }
  if (!proto.empty()) {
    base.proto = nccl::protocol_named(proto);
  }
  base.nthreads = nthreads;
  const std::vector<OverlapComm> none;
  const OverlapTimes compute_alone = run_overlap(h, nranks, none, kernels, false, true);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::vector<std::string> lines;
  for (std::int64_t nc : channel_list) {
    for (std::int64_t chunk : chunk_list) {
      std::vector<OverlapComm> comm{{*kind, bytes, base}};
      comm[0].pin.nchannels = static_cast<int>(nc);
      comm[0].pin.chunk_bytes = chunk;
      OverlapTimes alone;
      OverlapTimes both;
      try {
        alone = run_overlap(h, nranks, comm, kernels, true, false);
        both = run_overlap(h, nranks, comm, kernels, true, true);
      } catch (const Error& e) {
        throw Error(fmt::format("nchannels {} chunk {}: {}", nc, chunk, e.what()));
      }
      rows.push_back({{"nchannels", nc},
                      {"chunk_bytes", chunk},
                      {"comm_us", both.comm_span_us},
                      {"comm_alone_us", alone.comm_span_us},
                      {"compute_us", both.compute_us},
                      {"compute_alone_us", compute_alone.compute_us},
                      {"makespan_us", both.makespan_us}});
      lines.push_back(fmt::format(
          "{:>4} {:>9} {:>11.1f} {:>11.1f} {:>7.3f} {:>11.1f} {:>11.1f} "
          "{:>7.3f} {:>11.1f}",
          nc, format_bytes(chunk), both.comm_span_us, alone.comm_span_us,
          both.comm_span_us / alone.comm_span_us, both.compute_us, compute_alone.compute_us,
          both.compute_us / compute_alone.compute_us, both.makespan_us));
    }
  }
  if (!rows_csv.empty()) {
    write_rows_csv(rows_csv, rows);
  }
  if (vm.count("json")) {
    nlohmann::ordered_json out;
    out["context"] = context_block("overlap", {{"cluster", h.cluster.name()},
                                               {"nodes", h.cluster.nodes()},
                                               {"ranks", nranks},
                                               {"profile", h.profile.origin},
                                               {"coll", coll_name},
                                               {"bytes", bytes},
                                               {"compute", compute_specs}});
    if (!h.overrides.empty()) {
      out["context"]["overrides"] = h.overrides;
    }
    out["rows"] = std::move(rows);
    std::cout << out.dump(1) << "\n";
    return kExitOk;
  }
  fmt::print("# lagom {} overlap: {} of {} beside {} on {} ({} ranks), profile {}\n", version(),
             coll_name, format_bytes(bytes), fmt::join(compute_specs, " + "), h.cluster.name(),
             nranks, h.profile.origin);
  if (!h.overrides.empty()) {
    fmt::print("# what-if {}\n", fmt::join(h.overrides, ", "));
  }
  fmt::print("# {:>2} {:>9} {:>11} {:>11} {:>7} {:>11} {:>11} {:>7} {:>11}\n", "nc", "chunk",
             "comm_us", "comm_alone", "slower", "compute_us", "comp_alone", "slower",
             "makespan_us");
  for (const std::string& l : lines) {
    fmt::print("{}\n", l);
  }
  return kExitOk;
}

}  // namespace lagom::cli
