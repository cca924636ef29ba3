// --model / --parallel / --mbs / --gbs / --seq / --precision / --overlap.
#include "model_input.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>

#include "command_line.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/json_reader.hpp"
#include "lagom/models/model_spec.hpp"
#include "lagom/models/placement.hpp"
#include "memory_budget.hpp"
#include "warnings.hpp"

namespace lagom::cli {

namespace po = boost::program_options;

namespace {

// Batch sizes in sequences and lengths in tokens: what an int holds and the model format allows.
constexpr std::int64_t kMaxSequences = std::numeric_limits<int>::max();
constexpr std::int64_t kMaxTokens = 1 << 24;

}  // namespace

void add_model_options(po::options_description& desc, ModelOptions& opts) {
  desc.add_options()("model", po::value(&opts.model),
                     "generate the step from a model: zoo name (--list-models) or model JSON file")(
      "parallel", po::value(&opts.parallel),
      "parallelism, e.g. \"fsdp=16\", \"tp=8,dp=2\", \"ep=8\", \"tp=8,pp=4,dp=4\", with "
      "optional sp, cp=C, vpp=V, zero=Z")(
      "mbs", integer_option(&opts.mbs, "--mbs", 1, kMaxSequences, "sequences")->default_value("1"),
      "micro-batch size (sequences)")(
      "gbs", integer_option(&opts.gbs, "--gbs", 1, kMaxSequences, "sequences"),
      "global batch size (sequences; default: mbs x data-parallel "
      "degree x pipeline stages, or mbs x data-parallel degree "
      "without pipelining)")("seq", integer_option(&opts.seq, "--seq", 1, kMaxTokens, "tokens"),
                             "sequence length (default: the model's)")(
      "precision", po::value(&opts.precision)->default_value("bf16"),
      "bf16, fp16, fp8 (Transformer Engine: the layers' linear GEMMs and their sequence-parallel "
      "all-gathers in FP8; needs a GPU with FP8 tensor cores) or fp32")(
      "fp8-param-gather", po::bool_switch(&opts.fp8_param_gather),
      "with --precision fp8: data-parallel parameter all-gathers (ZeRO, FSDP) carry the linear "
      "weights in FP8 (Megatron's --fp8-param-gather)")(
      "overlap", po::value(&opts.overlap)->default_value("none"),
      "none, domino (TP communication under the other half-batch's compute) or two-batch "
      "(expert all-to-alls under the other half-batch's compute)")(
      "recompute", po::value(&opts.recompute)->implicit_value("full"),
      "activation recomputation: full (the bare flag: keep each layer's input only, rerun its "
      "forward before its backward), selective (rerun the attention core's forward only) or "
      "none")("fold", po::bool_switch(&opts.fold),
              "simulate one data-parallel replica for all (they behave identically; data-parallel "
              "collectives still span every GPU): same step time, dp times fewer ranks")(
      "placement", po::value(&opts.placement),
      "rank placement file (docs/formats/placement.md): the order the job fills the nodes, or a "
      "GPU per rank; default: packed (rank i on GPU i)")("list-models",
                                                         "list the models in the zoo and exit");
}

bool model_requested(const ModelOptions& opts, const po::variables_map& vm) {
  if (!opts.model.empty()) {
    return true;
  }
  for (const char* key : {"parallel", "gbs", "seq", "overlap", "precision"}) {
    if (vm.count(key) && !vm[key].defaulted()) {
      throw po::error(fmt::format("--{} describes a generated step: it needs --model", key));
    }
  }
  if (!opts.recompute.empty() || opts.fold || opts.fp8_param_gather) {
    throw po::error(
        "--recompute, --fold and --fp8-param-gather describe a generated step: they need --model");
  }
  if (!opts.placement.empty()) {
    throw po::error(
        "--placement places a generated step's ranks: it needs --model (a workload file's ranks "
        "are fixed)");
  }
  return false;
}

namespace {

struct Prepared {
  models::ModelSpec model;
  models::Parallelism par;
  models::TrainingConfig cfg;
};

Prepared prepare(const ModelOptions& opts, int gpus, int gpus_per_node) {
  if (opts.parallel.empty()) {
    throw Error("--model needs --parallel (e.g. \"fsdp=16\" or \"tp=8,dp=2\")");
  }
  const models::ModelSpec model = models::load_model(opts.model);
  const models::Parallelism par = models::parse_parallelism(opts.parallel);
  models::TrainingConfig cfg;
  cfg.mbs = opts.mbs;
  cfg.seq = opts.seq;
  const std::optional<traces::Precision> precision = traces::parse_precision(opts.precision);
  if (!precision) {
    throw Error(fmt::format("--precision '{}': expected bf16, fp16, fp8 or fp32", opts.precision));
  }
  cfg.precision = *precision;
  cfg.bytes_per_element = cfg.precision == traces::Precision::kFp32 ? 4 : 2;
  cfg.fp8_param_gather = opts.fp8_param_gather;
  if (opts.overlap == "none") {
    cfg.overlap = models::Overlap::kNone;
  } else if (opts.overlap == "domino") {
    cfg.overlap = models::Overlap::kDomino;
  } else if (opts.overlap == "two-batch") {
    cfg.overlap = models::Overlap::kTwoBatch;
  } else {
    throw Error(fmt::format("--overlap '{}': expected none, domino or two-batch", opts.overlap));
  }
  if (opts.recompute == "full") {
    cfg.recompute = true;
  } else if (opts.recompute == "selective") {
    cfg.selective_recompute = true;
  } else if (!opts.recompute.empty() && opts.recompute != "none") {
    throw Error(fmt::format("--recompute '{}': expected full, selective or none", opts.recompute));
  }
  cfg.fold_dp = opts.fold;
  cfg.fold_tp = opts.fold_tp;
  cfg.gpus_alike = opts.gpus_alike;
  cfg.gpus_per_node = gpus_per_node;
  if (opts.gbs > 0) {
    cfg.gbs = opts.gbs;
  } else {
    // One micro-batch per stage and replica; world <= 2^24 and mbs < 2^31, so this fits in 64
    // bits, but not always in the int a batch size is.
    const std::int64_t gbs = std::int64_t{opts.mbs} * par.dense_dp() * std::max(1, par.pp);
    if (gbs > std::numeric_limits<int>::max()) {
      throw Error(fmt::format(
          "--mbs {} x data-parallel degree {} x pp {} = {} sequences per step, more than a batch "
          "can hold ({}); pass a smaller --mbs",
          opts.mbs, par.dense_dp(), par.pp, gbs, std::numeric_limits<int>::max()));
    }
    cfg.gbs = static_cast<int>(gbs);
  }
  // With a placement the job may use part of the cluster (the placement says which GPUs).
  if (gpus > 0 && par.world() != gpus && !(!opts.placement.empty() && par.world() < gpus)) {
    const int per = std::max(1, gpus_per_node);
    throw Error(fmt::format(
        "{} uses {} GPUs but the cluster has {}{}", models::to_string(par), par.world(), gpus,
        par.world() % per == 0
            ? fmt::format(" (pass --nodes {})", par.world() / per)
            : fmt::format(": the parallel degrees multiply to {}, not a multiple of the {} GPUs "
                          "per node",
                          par.world(), per)));
  }
  return {model, par, cfg};
}

}  // namespace

models::GeneratedStep generate_from_options(const ModelOptions& opts, int gpus, int gpus_per_node) {
  Prepared p = prepare(opts, gpus, gpus_per_node);
  const models::Parallelism whole = p.par;
  const int whole_gbs = p.cfg.gbs;
  if (!opts.placement.empty()) {
    p.cfg.placement =
        models::parse_placement(json_reader::read_text_file(opts.placement, "placement file"),
                                opts.placement, p.par.world(), gpus, gpus_per_node);
  }
  const std::vector<int> dropped =
      models::place_around_down_nodes(p.par, p.cfg, opts.down_nodes, gpus_per_node);
  // The generator's rules (in counting), then GPU memory (the planner's question), then whether
  // this machine can hold the step.
  const models::StepSize size = models::count_step_ops(p.model, p.par, p.cfg);
  models::check_gpu_memory(p.model, p.par, p.cfg, opts.gpu_memory_bytes);
  check_generated_step(
      size, fmt::format("{} with {}, gbs {}", p.model.name, models::to_string(p.par), p.cfg.gbs));
  models::GeneratedStep step = models::generate_step(p.model, p.par, p.cfg, opts.gpu_memory_bytes);
  // Fewer micro-batches than stages: the pipeline never fills, and most of each stage's step is
  // bubble. Legal, and what a planner seldom means.
  if (p.par.pp > 1 && step.figures.micro_batches < p.par.pp) {
    warn(
        fmt::format("{} micro-batch{} per step on pp={} stages: the pipeline never fills (raise "
                    "--gbs or lower --mbs to have at least {})",
                    step.figures.micro_batches, step.figures.micro_batches == 1 ? "" : "es",
                    p.par.pp, p.par.pp));
  }
  if (!opts.placement.empty()) {
    step.description += fmt::format("; ranks placed by {}", opts.placement);
  }
  if (!dropped.empty()) {
    step.description += fmt::format(
        "; node{} {} down: {} of the {} data-parallel replicas of {} dropped (replica{} {}, {} "
        "GPUs idle), gbs {} -> {}",
        opts.down_nodes.size() == 1 ? "" : "s", fmt::join(opts.down_nodes, ", "), dropped.size(),
        whole.dp, models::to_string(whole), dropped.size() == 1 ? "" : "s",
        fmt::join(dropped, ", "), whole.world() - p.par.world(), whole_gbs, p.cfg.gbs);
  }
  return step;
}

models::MemoryEstimate memory_from_options(const ModelOptions& opts) {
  const Prepared p = prepare(opts, 0, 1);
  return models::estimate_memory(p.model, p.par, p.cfg);
}

}  // namespace lagom::cli
