// Step generators: a model, a batch and a parallelism become a Workload, op by op, the way
// Megatron-LM / PyTorch FSDP schedule a training step (docs/models.md §8 has the schedules).
//
//  * Data parallelism: DDP (gradient all-reduce in buckets as backward produces them, on its own
//    stream), ZeRO-1/2 (gradient reduce-scatter in buckets, parameter all-gather after the
//    optimizer), FSDP / ZeRO-3 (parameter all-gather per layer prefetched one layer ahead in
//    forward and in backward, gradient reduce-scatter per layer overlapped with backward).
//  * Tensor parallelism (Megatron column/row parallel): an all-reduce after attention and after
//    the MLP, forward and backward; with sequence parallelism an all-gather before and a
//    reduce-scatter after each block instead. Domino overlap splits each micro-batch in two and
//    runs one half's TP communication on its own stream under the other half's compute.
//  * Pipeline parallelism: 1F1B, or interleaved 1F1B with `vpp` virtual stages per GPU;
//    activations and gradients by send/recv (sends on their own stream, as batched isend).
//  * Activation recomputation (optional): each layer's forward runs again before its backward.
//  * Expert parallelism: router, all-to-all dispatch, expert MLPs, all-to-all combine; with
//    two-batch overlap each micro-batch is split in two and one half's all-to-alls run on their
//    own stream under the other half's compute.
//  * Context parallelism (cp): each GPU of a cp group holds seq / cp tokens of every sequence;
//    attention all-gathers the keys and values over the group before the core and reduce-scatters
//    their gradients after it (Megatron-Core's cp_comm_type all_gather), with causal work
//    balanced over the group; weight gradients are reduced over dp x cp.
// Ranks are ordered as Megatron orders them (tp-cp-ep-dp-pp: tensor-parallel rank fastest).
// Every compute op carries FLOPs, HBM bytes and launch geometry, so the compute model times it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lagom/models/model_spec.hpp"
#include "lagom/traces/workload.hpp"

namespace lagom::models {

struct Parallelism {
  int tp = 1;
  int pp = 1;
  int dp = 1;       // data-parallel replicas of the dense weights beyond expert parallelism
  int ep = 1;       // expert parallelism (carved out of data parallelism, as in Megatron)
  int vpp = 1;      // virtual pipeline stages per GPU (interleaved 1F1B when > 1)
  int cp = 1;       // context parallelism: each GPU holds seq / cp tokens of every sequence
  int zero = 0;     // 0 DDP, 1 and 2 ZeRO, 3 FSDP
  bool sp = false;  // sequence parallelism with TP
  // In 64 bits: degrees are up to 2^20 each, so their product can exceed an int (parse_parallelism
  // and generate_step refuse a world above kMaxGpus).
  std::int64_t world() const { return std::int64_t{tp} * cp * pp * dp * ep; }
  // Data-parallel degree of the batch: micro-batches per step are gbs / (mbs x dense_dp()).
  std::int64_t dense_dp() const { return std::int64_t{dp} * ep; }
  // GPUs that hold the same dense weights (and reduce their gradients together): the batch's
  // data-parallel degree times cp, whose ranks share the sequences (Megatron-Core's
  // data-parallel group with context parallelism).
  std::int64_t weight_replicas() const { return dense_dp() * cp; }
  static constexpr std::int64_t kMaxGpus = std::int64_t{1} << 24;  // 16,777,216
};

// "fsdp=16" | "tp=8,dp=2" | "ep=8" | "tp=8,pp=4,dp=4" | "tp=4,sp,pp=2,vpp=2,dp=2,zero=1" |
// "tp=8,cp=2,pp=4,dp=2";
// fsdp=N means dp=N with zero=3. lagom::Error for unknown keys or values below 1.
Parallelism parse_parallelism(std::string_view text);
std::string to_string(const Parallelism& p);

enum class Overlap { kNone, kDomino, kTwoBatch };

struct TrainingConfig {
  int mbs = 1;  // micro-batch size (sequences)
  int gbs = 0;  // global batch size (sequences); a multiple of mbs * data-parallel degree
  int seq = 0;  // sequence length; 0: the model's default
  int bytes_per_element = 2;  // bf16/fp16 = 2, fp32 = 4 (activations, gradients, communication)
  // The number format of the GEMMs (docs/models.md, "FP8"). kFp8 runs the transformer layers'
  // linear GEMMs (QKV, projection, MLP, experts) in FP8 as Transformer Engine does, with their
  // sequence-parallel all-gathers in FP8; attention's core, the router and the output head stay
  // in 16 bits. kFp32 runs every GEMM at the FP32 rate (bytes_per_element must then be 4).
  traces::Precision precision = traces::Precision::kBf16;
  // With kFp8: the data-parallel parameter all-gathers (FSDP, ZeRO) carry the linear weights in
  // FP8 (Megatron's --fp8-param-gather, torchao's FSDP float8 all-gather).
  bool fp8_param_gather = false;
  Overlap overlap = Overlap::kNone;
  // Full activation recomputation (Megatron --recompute-granularity full): each layer keeps only
  // its input and reruns its forward (with its TP communication) before its backward.
  bool recompute = false;
  // Selective recomputation (Megatron --recompute-granularity selective, Korthikanti et al. 2022):
  // each layer reruns its attention core's forward before that core's backward, and nothing else
  // (no TP communication). Not with `recompute`.
  bool selective_recompute = false;
  // Fold identical data-parallel replicas: generate replica 0 only (its data-parallel
  // communicators still span every replica's GPUs), so a 16,384-GPU step is simulated with
  // 16,384 / dp ranks. Replicas behave identically (same program, same communicator positions),
  // so the step time is the same; per-rank figures stand for dp GPUs each.
  bool fold_dp = false;
  // Fold identical tensor-parallel ranks too, where that is exact (tp_folds_exactly: tensor
  // parallelism alone, or beside other parallelism in whole-node groups of alike GPUs with
  // fold_dp): generate tensor-parallel rank 0 only, its tensor-parallel communicators still
  // spanning every rank's GPUs and its others listing the other ranks' instances as mirrors.
  // Each collective is still one instance sized and routed by all its GPUs, and the ranks it
  // stands for would run the same kernels beside it at the same times, so the step time is the
  // same. Ignored where it would not be exact. The searches set it (`lagom tune`, `compare`,
  // `reproduce`; `--no-fold` clears it).
  bool fold_tp = false;
  // The cluster's GPUs all see the hardware alike (topologies::gpus_differ), on nodes of this
  // many: tensor-parallel ranks then fold beside other parallelism too where each
  // tensor-parallel group fills whole nodes (tp_folds_exactly).
  bool gpus_alike = false;
  int gpus_per_node = 0;
  double bucket_bytes = 25.0 * 1024 * 1024;  // DDP/ZeRO gradient bucket (PyTorch's 25 MiB)
  // The cluster GPU of each position of the layout (world() entries, in Megatron's order);
  // empty: position i runs on GPU i. Set by place_around_down_nodes.
  std::vector<std::uint32_t> placement;
};

// Per-GPU memory at its peak, in bytes (docs/models.md §8: mixed-precision Adam is 16 bytes per
// parameter before sharding; activations per Korthikanti et al. with FlashAttention).
struct MemoryEstimate {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;
  double buffers = 0;  // CUDA context, NCCL buffers, allocator slack (a fixed estimate)
  // Where the activations peak: the pipeline stage and its forward passes (micro-batch x model
  // chunk) in flight then (activation_footprint).
  int activation_stage = 0;
  int forward_passes_in_flight = 0;
  double total() const { return weights + gradients + optimizer + activations + buffers; }
};

// The activation memory of a step's busiest pipeline stage (activation_footprint).
struct ActivationFootprint {
  double held = 0;          // bytes kept for backward at the stage's peak
  int stage = 0;            // that stage (the first, or the last with its logits)
  int units_in_flight = 0;  // forward units (micro-batch x model chunk) held at that peak
  double layer_max = 0;     // one layer's whole set for one micro-batch (the largest layer)
};

struct StepFigures {
  double flops = 0;  // model FLOPs of the whole step, all GPUs (6 N T + attention)
  std::array<double, traces::kOpKindCount> comm_bytes{};  // per op kind, summed over ranks' ops
  int micro_batches = 0;  // per pipeline per step (gradient accumulation steps)
  double tokens = 0;      // trained per step, all GPUs: gbs x sequence length
};

struct GeneratedStep {
  traces::Workload workload;
  int folded_replicas = 1;  // GPUs each workload rank stands for (fold_dp and fold_tp)
  MemoryEstimate memory;    // of the most loaded GPU (first pipeline stage)
  StepFigures figures;
  std::string description;  // "llama3-8b, fsdp=16, mbs 1, gbs 32, seq 8192, bf16"
};

// Whether TrainingConfig::fold_tp, when set, folds this step: tp > 1, no placement (which could
// set the ranks on GPUs that differ), and either tp is its only parallelism or data-parallel
// replicas fold too (fold_dp) on a cluster whose GPUs all see the hardware alike (gpus_alike)
// with each tensor-parallel group filling whole nodes (tp a multiple of gpus_per_node). Beside
// other parallelism, each pipeline, data-, context- or expert-parallel communicator of
// tensor-parallel rank 0 then lists the other ranks' instances as mirrors (traces::Group), whose
// traffic loads the links they cross. Those instances behave as rank 0's when their GPUs are
// alike and hold the same place in everything else that runs: whole-node tensor-parallel groups
// give every rank the same local GPU index on each node of its other communicators, so the
// same place in their rings and trees. With smaller groups a tree's chain can put one rank's
// data-parallel instance at its head and another's in its middle, beside different
// tensor-parallel traffic (cluster B, tp=2,dp=4 on one node: a plan 0.2% apart).
bool tp_folds_exactly(const Parallelism& par, const TrainingConfig& cfg);

// Checks that the parallelism fits the model and batch (degrees divide GPUs, layers, heads,
// experts; batch sizes divide) and generates the step. lagom::Error names the rule broken.
// `gpu_memory_bytes` > 0 also checks that the estimate fits (an error saying by how much not).
GeneratedStep generate_step(const ModelSpec& model, const Parallelism& par,
                            const TrainingConfig& cfg, double gpu_memory_bytes = 0);

// How big the generated step would be, before generating it: its ranks and its ops, counted
// exactly (one rank per pipeline stage is emitted at one and two micro-batches and the count
// extrapolated: ops are affine in micro-batches). Checks what generate_step checks, except GPU
// memory. Cheap: a few ranks' ops, however large the step.
struct StepSize {
  std::uint64_t ranks = 0;
  double ops = 0;  // a double: an absurd request may exceed any integer type
};
StepSize count_step_ops(const ModelSpec& m, const Parallelism& par, const TrainingConfig& cfg);

// A failure what-if: nodes `down` of a cluster of `gpus_per_node`-GPU nodes are out. Every
// data-parallel replica (a `dp` coordinate, all its tp x ep x pp GPUs) that uses one is dropped;
// the rest keep their micro-batches, so the global batch shrinks with them, and run on the GPUs
// they had (cfg.placement). Returns the replicas dropped (their dp coordinates); lagom::Error
// when none would be left. `par` and `cfg` must describe the whole cluster's step.
std::vector<int> place_around_down_nodes(Parallelism& par, TrainingConfig& cfg,
                                         const std::vector<int>& down, int gpus_per_node);

// The GPU-memory check generate_step makes (nothing when gpu_memory_bytes <= 0).
void check_gpu_memory(const ModelSpec& m, const Parallelism& par, const TrainingConfig& cfg,
                      double gpu_memory_bytes);

// The memory estimate alone (cheap; used by generate_step).
// Activation bytes per GPU, Korthikanti et al. (2022) term by term with the model's shapes
// (docs/models.md §8 "Memory"), held through the step's own 1F1B order.
ActivationFootprint activation_footprint(const ModelSpec& model, const Parallelism& par,
                                         const TrainingConfig& cfg);
MemoryEstimate estimate_memory(const ModelSpec& model, const Parallelism& par,
                               const TrainingConfig& cfg);

}  // namespace lagom::models
