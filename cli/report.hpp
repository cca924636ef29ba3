// Reports of a simulated step: the human summary and the --json document.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "lagom/models/generator.hpp"
#include "lagom/sim/engine.hpp"
#include "lagom/sim/stats.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "lagom/traces/workload.hpp"

namespace lagom::cli {

// What produced a report; becomes the "context" block of every JSON output.
struct RunContext {
  std::string command;           // "simulate"
  std::string workload_source;   // path or builtin:NAME
  std::string input_hash;        // "fnv1a64:..."
  std::string cost_model;        // "fixed (duration_us)"
  std::string contention_model;  // "none"
  // Known when the hardware is (--cluster): each GPU's BF16 tensor peak, for MFU.
  double peak_flops_per_gpu = 0;
  // Known when the step was generated from a model (--model): the per-GPU memory estimate.
  std::optional<models::MemoryEstimate> memory;
  std::string plan;                    // --plan: "plan.json: 8 rules, 192 ops matched"
  std::string generated;               // what was generated ("llama3-8b, fsdp=16, ...")
  int folded_replicas = 1;             // GPUs each rank stands for (--fold)
  std::vector<std::string> overrides;  // --set/--scale, as written
  // Known for a generated step: its model FLOPs over the simulated ranks (recomputation left
  // out, as MFU counts them). Otherwise MFU and "flops" count every compute op's FLOPs.
  std::optional<double> model_flops;
  // A generated step's tokens (all GPUs), for tokens/s; with --tokens, the training run's tokens.
  std::optional<double> tokens_per_step;
  std::optional<double> train_tokens;
};

// The "context" block every JSON output of lagom starts with: lagom's version and git revision,
// the command, then `fields` (the inputs, their hashes, the effective configuration) in order.
// Every command builds its block here.
nlohmann::ordered_json context_block(std::string_view command,
                                     const nlohmann::ordered_json& fields = {});

// A simulated step's block: workload, input hash, models, and what was generated or planned.
nlohmann::ordered_json context_json(const RunContext& ctx);

void print_summary(std::ostream& out, const traces::Workload& w, const traces::ExecutionGraph& g,
                   const sim::SimResult& r, const sim::StepStats& s, const RunContext& ctx);

// {"context", "step_time_us", "events", "fingerprint", "workload", "flops", "comm_bytes",
// "compute_us", "exposed_comm_us", ["mfu"], ["memory_per_gpu_bytes", "memory"], "ranks",
// "overlap", "ops"};
// "ops" is left out when include_ops is false (it is one entry per op), and the overlap group
// list when the workload has more than 16 ranks (docs/formats/workload.md, "Reports").
nlohmann::ordered_json json_report(const traces::Workload& w, const traces::ExecutionGraph& g,
                                   const sim::SimResult& r, const sim::StepStats& s,
                                   const RunContext& ctx, bool include_ops);
// Writes json_report(...).dump(1) and a newline to `out`, byte for byte, without building the
// "ops" array: its entries stream as they are formatted (a 1.3 M-op step's report is 300 MB of
// text, and a document of it several GB of memory).
void write_json_report(std::ostream& out, const traces::Workload& w,
                       const traces::ExecutionGraph& g, const sim::SimResult& r,
                       const sim::StepStats& s, const RunContext& ctx, bool include_ops);

// Writes `rows` (a JSON array of objects with the same keys) as CSV to `path`: a header of the
// keys, then one line per row. Nested objects are flattened ("config": {"nchannels": 2} becomes
// a column config_nchannels); numbers keep their shortest exact form, null is an empty cell.
void write_rows_csv(const std::string& path, const nlohmann::ordered_json& rows);

}  // namespace lagom::cli
