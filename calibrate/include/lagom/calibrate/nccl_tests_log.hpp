// Reading nccl-tests text output (raw, or annotated with a `key: value` header) into rows of
// size, time, algorithm and bus bandwidth, and recomputing bus bandwidth from time.
//
// Format (reference/nccl.md §4.2, nccl-tests src/util.cu): a `#` preamble ("# nccl-tests version
// ... nccl-library=22902", "# Collective test starting: all_reduce_perf", "# nThread 1 nGpus 8
// minBytes 8 maxBytes ... step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1
// graph: 0 ...", "# Using devices" and one "#  Rank  0 Group  0 Pid ... on host device  0 [...]
// NVIDIA H100 80GB HBM3" line per rank), then one row per size:
//     size  count  type  redop  root  | time algbw busbw #wrong | time algbw busbw #wrong
// (out-of-place, then in-place; `-I 1` adds i_min i_max i_p99 i_cv% to each half; `-c 0`
// prints N/A for #wrong; older versions have no root column), then "# Avg bus bandwidth : x"
// and "# Collective test concluded: all_reduce_perf". NCCL_DEBUG lines, MPI tags
// ("[1,0]<stdout>:") and other program output between them are skipped.
//
// The annotated files in calibrate/data/nccl-tests/ (see its README.md) start with `key: value`
// lines (source, gpu, gpus_per_node, nodes, nccl_version, collective, ...) ended by a `---` line;
// the rows follow.
//
// Units: sizes in bytes (the `size` column: the total buffer, NCCL's nBytes convention), times
// in µs, bandwidths in GB/s = 1e9 B/s, as nccl-tests prints them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lagom/common/embedded.hpp"

namespace lagom::calibrate {

// The nccl-tests programs (`<name>_perf`).
enum class NcclTestsCollective : std::uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kAllToAllv,
  kSendRecv,
  kGather,
  kScatter,
  kHypercube,
};

std::string_view to_string(NcclTestsCollective c);  // nccl-tests' name: "all_reduce", ...
// Accepts "all_reduce", "all_reduce_perf", "allreduce", "AllReduce" (case-insensitive).
std::optional<NcclTestsCollective> parse_nccl_tests_collective(std::string_view text);

// nccl-tests' bus-bandwidth factor (reference/nccl.md §4.3, src/*.cu *GetBw):
//   all_reduce 2(n-1)/n; reduce_scatter, all_gather, alltoall(v), gather, scatter (n-1)/n;
//   broadcast, reduce, sendrecv, hypercube 1.
double busbw_factor(NcclTestsCollective c, int nranks);
// algbw = bytes / time. For every test but hypercube the bytes are the `size` column.
double algbw_GBps(std::int64_t size_bytes, double time_us);
// busbw = algbw x busbw_factor.
double busbw_GBps(NcclTestsCollective c, int nranks, std::int64_t size_bytes, double time_us);

struct NcclTestsIterStats {  // `-I 1` per-iteration columns
  double min_us = 0;
  double max_us = 0;
  double p99_us = 0;
  double cv_pct = 0;
};

// One half of a row (out-of-place or in-place).
struct NcclTestsTiming {
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::optional<double> wrong;  // #wrong (older versions: max error); nullopt for N/A (-c 0)
  std::optional<NcclTestsIterStats> per_iter;
};

struct NcclTestsRow {
  std::int64_t size_bytes = 0;
  std::int64_t count = 0;  // elements passed to NCCL (per rank for all_gather/reduce_scatter)
  std::string type;        // "float", "double", "bfloat16", ...
  std::string redop;       // "sum", ..., "none"
  int root = -1;           // -1 where not applicable (and in versions without the column)
  std::optional<NcclTestsTiming> out_of_place;  // absent when nccl-tests prints only in-place
  std::optional<NcclTestsTiming> in_place;
  int line = 0;  // 1-based line in the source text
};

// "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 ..."
struct NcclTestsRunHeader {
  int nthreads = 0;
  int ngpus = 0;
  std::int64_t min_bytes = 0;
  std::int64_t max_bytes = 0;
  std::int64_t step = 0;
  bool step_is_factor = false;
  int warmup_iters = 0;
  int iters = 0;
  int agg_iters = 1;
  int validation = 0;
  int graph = 0;
};

struct NcclTestsDevice {  // "#  Rank  3 Group  0 Pid 123 on host device  3 [0000:...] <gpu>"
  int rank = 0;
  std::string host;
  int device = 0;
  std::string gpu;
};

struct NcclTestsLog {
  std::string source;  // the name given to the parser (file path or embedded name)
  std::optional<NcclTestsCollective> collective;  // metadata "collective:" or the program name
  // Ranks: metadata gpus_per_node x nodes, else the device lines, else nThread x nGpus (one
  // process assumed); 0 when unknown.
  int nranks = 0;
  int nodes = 0;             // metadata "nodes:", else distinct device hosts; 0 when unknown
  std::string gpu;           // metadata "gpu:", else the first device line's GPU name
  std::string nccl_version;  // "2.29.2"; "" when not stated
  std::string nccl_tests_version;
  std::optional<NcclTestsRunHeader> run;
  std::vector<NcclTestsDevice> devices;
  std::vector<std::pair<std::string, std::string>> metadata;  // annotated header, in order
  std::vector<NcclTestsRow> rows;
  std::optional<double> avg_busbw_GBps;  // "# Avg bus bandwidth"
  std::optional<int> out_of_bounds;      // "# Out of bounds values"

  // The value of metadata key `key`, if present.
  std::optional<std::string_view> meta(std::string_view key) const;
};

// Parses nccl-tests output. `source` names the input in errors ("<source>:<line>: ..."). Throws
// lagom::Error for text that is not nccl-tests output, a log without result rows, a malformed
// row, or an annotated header that is not `key: value` lines ended by `---`.
NcclTestsLog parse_nccl_tests_log(std::string_view text, std::string_view source);
// Reads and parses a file; errors name the path.
NcclTestsLog read_nccl_tests_log(const std::filesystem::path& path);

// The real logs embedded from calibrate/data/nccl-tests/ (file names, e.g.
// "01-h100x8-nvswitch-allreduce-nccl2.29.txt").
std::span<const EmbeddedFile> embedded_nccl_tests_logs();
// Parses one of them by file name (with or without ".txt"); the error lists the names.
NcclTestsLog embedded_nccl_tests_log(std::string_view name);

}  // namespace lagom::calibrate
