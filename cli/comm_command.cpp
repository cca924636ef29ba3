// `lagom comm`: nccl-tests in silico — time one collective over a range of sizes on a cluster,
// with NCCL's own choice or any pinned algorithm, protocol, channels, threads and chunk size.
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <boost/program_options.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "command_line.hpp"
#include "commands.hpp"
#include "hardware_options.hpp"
#include "lagom/common/build_info.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/units.hpp"
#include "lagom/nccl/config_override.hpp"
#include "lagom/nccl/tuning.hpp"
#include "lagom/sim/collective_model.hpp"
#include "lagom/topologies/communicator.hpp"
#include "lagom/topologies/nccl_comm_info.hpp"
#include "report.hpp"
#include "warnings.hpp"

namespace lagom::cli {

namespace po = boost::program_options;

namespace {

// nccl-tests' element counts: float elements, per rank for AllGather/ReduceScatter/AllToAll.
std::int64_t element_count(nccl::CollKind kind, std::int64_t bytes, int nranks) {
  const std::int64_t elems = bytes / 4;
  switch (kind) {
    case nccl::CollKind::kAllGather:
    case nccl::CollKind::kReduceScatter:
    case nccl::CollKind::kAllToAll:
      return elems / nranks;
    default:
      return elems;
  }
}

}  // namespace

int comm_command(const std::vector<std::string>& args) {
  HardwareOptions hw;
  std::string coll_name;
  std::string min_text = "8";
  std::string max_text = "1G";
  int factor = 2;
  int ranks = 0;
  std::string rows_csv;
  std::string algo_text;
  std::string proto_text;
  int nchannels = 0;
  int nthreads = 0;
  std::string chunk_text;
  po::options_description desc(
      "Usage: lagom comm --coll KIND --cluster PRESET [--nodes N] [--ranks R] [-b MIN] [-e MAX]\n"
      "                  [-f FACTOR] [--algo A] [--proto P] [--nchannels N] [--nthreads T]\n"
      "                  [--chunk BYTES] [--profile FILE] [--json]\n\n"
      "Times one collective alone, like nccl-tests' *_perf programs: sizes from -b to -e (the\n"
      "nccl-tests 'size' column: total bytes of the largest buffer), NCCL's own choice of\n"
      "algorithm, protocol, channels, threads and chunk for each size unless pinned (NCCL 2.28's,\n"
      "or 2.18's with --nccl-version 2.18).\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "coll", po::value(&coll_name),
      "allreduce | allgather | reducescatter | broadcast | reduce | alltoall | sendrecv")(
      "ranks", integer_option(&ranks, "--ranks", 1, kMaxCommandRanks, "ranks"),
      "ranks 0..R-1 of the cluster (default: all its GPUs)")(
      ",b", po::value(&min_text), "smallest size (8, 32K, 1M, 16G; default 8)")(
      ",e", po::value(&max_text), "largest size (default 1G)")(
      ",f", integer_option(&factor, "-f", 1, 1024, "times"),
      "size multiplication factor (default 2)")(
      "algo", po::value(&algo_text),
      "Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT")(
      "proto", po::value(&proto_text), "LL, LL128, Simple")(
      "nchannels", integer_option(&nchannels, "--nchannels", 1, kMaxCommandChannels, "channels"),
      "channels (CTAs), 1..64 (1..32 under --nccl-version 2.18)")(
      "nthreads", integer_option(&nthreads, "--nthreads", 1, kMaxCommandThreads, "threads"),
      "threads per channel, a multiple of 32")("chunk", po::value(&chunk_text),
                                               "chunk size in bytes (e.g. 512K)")(
      "json", "print {\"context\", \"rows\"} as JSON")(
      "csv", po::value(&rows_csv),
      "also write the rows as CSV to FILE (units in the column names)");
  add_hardware_options(desc, hw);
  po::variables_map vm;
  if (!parse_command_line(args, desc, vm)) {
    return kExitOk;  // --help
  }
  if (coll_name.empty()) {
    throw po::error("--coll is required");
  }
  const auto kind = nccl::parse_coll_kind(coll_name);
  if (!kind) {
    throw Error(
        fmt::format("unknown collective '{}' (known: allreduce, allgather, "
                    "reducescatter, broadcast, reduce, alltoall, sendrecv)",
                    coll_name));
  }
  const std::int64_t min_bytes = parse_bytes(min_text, "-b");
  const std::int64_t max_bytes = parse_bytes(max_text, "-e");
  if (min_bytes > max_bytes) {
    throw Error(fmt::format("-b ({}) is larger than -e ({})", min_text, max_text));
  }
  if (min_bytes < 1 && max_bytes > min_bytes) {
    // 0 x F stays 0: the sweep would never reach -e.
    throw Error(
        fmt::format("-b {}: a sweep starts at 1 byte or more (-b 0 -e 0 times one empty "
                    "collective)",
                    min_text));
  }
  if (factor < 2 && min_bytes != max_bytes) {
    throw Error(fmt::format("-f {} sweeps nothing: a factor below 2 needs -b equal to -e", factor));
  }
  nccl::ConfigOverride pin;
  if (!algo_text.empty()) {
    pin.algo = nccl::algorithm_named(algo_text);
  }
  if (!proto_text.empty()) {
    pin.proto = nccl::protocol_named(proto_text);
  }
  pin.nchannels = nchannels;
  pin.nthreads = nthreads;
  pin.chunk_bytes = chunk_text.empty() ? 0 : parse_bytes(chunk_text, "--chunk");
  if (!chunk_text.empty() && pin.chunk_bytes == 0) {
    throw Error("--chunk must be at least 1 byte");
  }

  refuse_unsupported_what_ifs(
      hw, {false, true, false},
      "comm times one collective alone: its kernels are bound by links, not by a GPU's clock "
      "(--slow-link applies), and it generates no training step to drop replicas from");
  const Hardware h = load_hardware(hw);
  const int nranks = vm.count("ranks") ? ranks : h.cluster.gpu_count();
  if (nranks < 1 || nranks > h.cluster.gpu_count()) {
    throw Error(
        fmt::format("--ranks {} does not fit cluster '{}' with {} GPUs ({} node(s) x {}); "
                    "pass --nodes to make it larger",
                    nranks, h.cluster.name(), h.cluster.gpu_count(), h.cluster.nodes(),
                    h.cluster.gpus_per_node()));
  }
  std::vector<int> members(static_cast<std::size_t>(nranks));
  std::iota(members.begin(), members.end(), 0);
  const topologies::CommunicatorInfo info = topologies::describe_communicator(h.cluster, members);
  const nccl::CommInfo nccl = topologies::nccl_comm_info(h.cluster, info);
  const nccl::Tables tables = nccl::tune_model(nccl);
  const sim::CollectiveModel model(h.profile, info);

  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::vector<std::string> lines;
  double last_fixed_share = 0;
  const int sms = static_cast<int>(h.profile.gpu.sms.value);
  bool warned_sms = false;
  for (std::int64_t size = min_bytes;; size *= factor) {
    nccl::CommConfig cfg;
    try {
      cfg = nccl::resolve_config(tables, *kind, size, pin);
    } catch (const Error& e) {
      throw Error(fmt::format("at {} bytes: {}", size, e.what()));
    }
    // One CTA per channel, each on an SM of its own: more channels than SMs cannot all run at
    // once (simulate says so too); the model times them as if they did.
    if (!warned_sms && sms > 0 && cfg.nchannels > sms) {
      warned_sms = true;
      warn(
          fmt::format("{} channels at {} bytes: more NCCL CTAs than the GPU's {} SMs (gpu.sms), "
                      "which cannot all run at once; the time assumes they do",
                      cfg.nchannels, size, sms));
    }
    const sim::CollectiveEstimate e = model.estimate(*kind, size, cfg);
    const double algbw = e.time_us > 0 ? static_cast<double>(size) / (e.time_us * 1e3) : 0.0;
    const double busbw = algbw * sim::busbw_factor(*kind, nranks);
    rows.push_back({{"size_bytes", size},
                    {"count", element_count(*kind, size, nranks)},
                    {"time_us", e.time_us},
                    {"algbw_GBps", algbw},
                    {"busbw_GBps", busbw},
                    {"algo", std::string(nccl::to_string(cfg.algo))},
                    {"proto", std::string(nccl::to_string(cfg.proto))},
                    {"nchannels", cfg.nchannels},
                    {"nthreads", cfg.nthreads},
                    {"chunk_bytes", cfg.chunk_bytes},
                    {"bottleneck", e.bottleneck},
                    {"launch_us", e.launch_us},
                    {"hop_us", e.hop_us},
                    {"sync_us", e.sync_us},
                    {"transfer_us", e.transfer_us},
                    {"fill_us", e.fill_us}});
    // What no bandwidth buys back: launch, hop latencies, chunk-step overheads (the pipeline
    // fill is a share of the transfer, so it shrinks with bandwidth; the contention model
    // shares it with the transfer too).
    const double fixed = e.launch_us + e.hop_us + e.sync_us;
    last_fixed_share = e.time_us > 0 ? fixed / e.time_us : 0;
    lines.push_back(
        fmt::format("{:>12}  {:>12}  {:>6}  {:>9.2f}  {:>7.2f}  {:>7.2f}  {:<8} {:<6} "
                    "{:>4} {:>5} {:>9}  {:<16} {:>9.2f}",
                    size, element_count(*kind, size, nranks), "float", e.time_us, algbw, busbw,
                    nccl::to_string(cfg.algo), nccl::to_string(cfg.proto), cfg.nchannels,
                    cfg.nthreads, cfg.chunk_bytes, e.bottleneck, fixed));
    if (size >= max_bytes || size > max_bytes / factor || factor < 2) {
      break;
    }
  }
  nlohmann::ordered_json context = context_block("comm");
  context["coll"] = std::string(nccl::to_string(*kind));
  context["cluster"] = h.cluster.name();
  context["nodes"] = h.cluster.nodes();
  context["gpus_per_node"] = h.cluster.gpus_per_node();
  context["ranks"] = nranks;
  context["profile"] = h.profile.origin;
  context["nccl_version"] = std::string(nccl::to_string(h.cluster.spec().nccl_version));
  if (!h.overrides.empty()) {
    context["overrides"] = h.overrides;
  }
  if (!rows_csv.empty()) {
    write_rows_csv(rows_csv, rows);
  }
  if (vm.count("json")) {
    nlohmann::ordered_json out;
    out["context"] = std::move(context);
    out["rows"] = std::move(rows);
    std::cout << out.dump(1) << "\n";
    return kExitOk;
  }
  fmt::print("# lagom {} comm: {} on {} ({} node(s) x {} {}), {} ranks\n", version(),
             nccl::to_string(*kind), h.cluster.name(), h.cluster.nodes(), h.cluster.gpus_per_node(),
             h.cluster.spec().gpu_type, nranks);
  fmt::print("# profile {}; NCCL {} (emulated); model: docs/models.md\n", h.profile.origin,
             nccl::to_string(h.cluster.spec().nccl_version));
  if (!h.overrides.empty()) {
    fmt::print("# what-if {}\n", fmt::join(h.overrides, ", "));
  }
  fmt::print("#\n");
  fmt::print(
      "# {:>10}  {:>12}  {:>6}  {:>9}  {:>7}  {:>7}  {:<8} {:<6} {:>4} {:>5} {:>9}  {:<16} {:>9}\n",
      "size", "count", "type", "time", "algbw", "busbw", "algo", "proto", "nch", "nthr", "chunk",
      "bottleneck", "fixed");
  fmt::print(
      "# {:>10}  {:>12}  {:>6}  {:>9}  {:>7}  {:>7}  {:<8} {:<6} {:>4} {:>5} {:>9}  {:<16} {:>9}\n",
      "(B)", "(elements)", "", "(us)", "(GB/s)", "(GB/s)", "", "", "", "", "(B)", "", "(us)");
  for (const std::string& l : lines) {
    fmt::print("{}\n", l);
  }
  fmt::print(
      "#\n# fixed: launch, hop latencies (the cluster's wire plus the protocol's per-hop cost)\n"
      "# and chunk-step overheads: the part of the time no bandwidth buys back (a pipelined\n"
      "# algorithm's fill is a share of its transfer, not in it).\n");
  if (last_fixed_share > 0.1) {
    fmt::print(
        "# At the largest size it is {:.0f}% of the time: busbw stays below the bottleneck's\n"
        "# bandwidth, and for Ring it grows with the 2(n-1) hops of {} ranks.\n",
        100 * last_fixed_share, nranks);
  }
  return kExitOk;
}

}  // namespace lagom::cli
