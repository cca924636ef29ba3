// Step generators: FLOPs, communication bytes and op counts against closed forms derived here from
// the model's numbers, the memory estimate against a hand calculation, the paper's Table 2 on its
// clusters, pipeline schedules and their bubble, data-parallel folding, and a Chakra round trip.
#include "lagom/models/generator.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "cli_runner.hpp"
#include "lagom/hardware/profile.hpp"
#include "lagom/sim/engine.hpp"
#include "lagom/sim/model_cost.hpp"
#include "lagom/sim/resource_contention.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/traces/chakra.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "lagom/traces/workload_json.hpp"
#include "test_util.hpp"

namespace lagom::models {
namespace {

using traces::ComputeClass;
using traces::OpId;
using traces::OpKind;
using traces::Workload;

constexpr double kBpe = 2;  // bf16, TrainingConfig's default

// A small dense model: grouped-query attention (8 query, 4 key/value heads) whose heads x head_dim
// (8 x 48 = 384) differs from hidden (256), so the two cannot be confused; a gated (SwiGLU) MLP;
// RMSNorm; a vocabulary of 1,100, not a multiple of 128, so Megatron's padding shows.
ModelSpec tiny() {
  ModelSpec m;
  m.name = "tiny";
  m.sources = {"made up for these tests"};
  m.layers = 8;
  m.hidden = 256;
  m.ffn_hidden = 1024;
  m.heads = 8;
  m.kv_heads = 4;
  m.head_dim = 48;
  m.vocab = 1100;
  m.seq_len = 128;
  m.gated_mlp = true;
  m.rmsnorm = true;
  validate(m);
  return m;
}

// A small mixture of experts: one dense block, then three with 8 routed experts (top 2) and one
// shared expert each.
ModelSpec tiny_moe() {
  ModelSpec m = tiny();
  m.name = "tiny-moe";
  m.layers = 4;
  m.experts = 8;
  m.top_k = 2;
  m.shared_experts = 1;
  m.moe_ffn_hidden = 128;
  m.first_dense_layers = 1;
  validate(m);
  return m;
}

TrainingConfig config(int mbs, int gbs, int seq = 0, bool recompute = false) {
  TrainingConfig c;
  c.mbs = mbs;
  c.gbs = gbs;
  c.seq = seq;
  c.recompute = recompute;
  return c;
}

GeneratedStep generate(const ModelSpec& m, std::string_view par, const TrainingConfig& c) {
  return generate_step(m, parse_parallelism(par), c);
}

// Megatron pads the vocabulary to a multiple of 128 x tp (--make-vocab-size-divisible-by 128).
double padded_vocab(const ModelSpec& m, int tp) {
  const int unit = 128 * tp;
  return static_cast<double>((m.vocab + unit - 1) / unit * unit);
}

// --- What a workload holds ----------------------------------------------------------------------

// Communicators are named by their axis and an index ("tp3", "dp0", "ep1", "edp2", "pp5");
// send/recv between pipeline stages of an unfolded step have none ("p2p").
std::string axis_of(const Workload& w, OpId op) {
  if (w.group(op) == traces::kNoGroup) {
    return "p2p";
  }
  std::string n = w.group_info(w.group(op)).name;
  while (!n.empty() && std::isdigit(static_cast<unsigned char>(n.back()))) {
    n.pop_back();
  }
  return n;
}

struct Tally {
  double flops = 0;                                        // GEMM and attention kernels
  std::map<std::pair<OpKind, std::string>, double> bytes;  // by kind and communicator axis
  std::map<std::pair<OpKind, std::string>, int> ops;
  std::map<ComputeClass, int> kernels;  // compute ops with a shape, by class

  double b(OpKind k, const std::string& axis) const {
    const auto it = bytes.find({k, axis});
    return it == bytes.end() ? 0.0 : it->second;
  }
  int n(OpKind k, const std::string& axis) const {
    const auto it = ops.find({k, axis});
    return it == ops.end() ? 0 : it->second;
  }
  double kind_bytes(OpKind k) const {
    double s = 0;
    for (const auto& [key, v] : bytes) {
      s += key.first == k ? v : 0.0;
    }
    return s;
  }
};

// Sums the ops of `rank` (all ranks when negative), or of one stream when `stream` is given.
Tally tally(const Workload& w, int rank = -1, std::string_view stream = {}) {
  Tally t;
  for (OpId op = 0; op < w.op_count(); ++op) {
    if (rank >= 0 && w.rank_of(op) != static_cast<traces::Rank>(rank)) {
      continue;
    }
    if (!stream.empty() && w.stream(w.stream_of(op)).name != stream) {
      continue;
    }
    const OpKind k = w.kind(op);
    if (k == OpKind::kCompute) {
      if (const traces::ComputeShape* s = w.compute_shape(op)) {
        ++t.kernels[s->cls];
        if (s->cls == ComputeClass::kGemm || s->cls == ComputeClass::kAttention) {
          t.flops += s->flops;
        }
      }
    } else if (traces::is_comm(k)) {
      t.bytes[{k, axis_of(w, op)}] += static_cast<double>(w.bytes(op));
      ++t.ops[{k, axis_of(w, op)}];
    }
  }
  return t;
}

// --- Closed forms -------------------------------------------------------------------------------

// Matmul weights a token passes through in block l: attention (Q, K, V, output) and the MLP, or
// for a MoE block the router, its top_k routed experts and the shared ones.
double active_matmul_params(const ModelSpec& m, int l) {
  const double mlp = m.layer_is_moe(l)
                         ? (m.top_k + m.shared_experts) * m.expert_params() + m.router_params()
                         : m.dense_mlp_params();
  return m.attention_params() + mlp;
}

// Model FLOPs of a step over `tokens` tokens (Narayanan et al., SC'21). Each matmul weight costs
// 2 FLOPs per token forward and 4 backward (input and weight gradients): 6 N T, with N the
// blocks' matmul weights a token uses plus the output head (V_pad x hidden; the input embedding
// is a lookup, and norms and activations are not model FLOPs). Attention's QK^T and PV cost
// 2 x 2 x seq x head_dim per head and token forward (non-causal, the MFU convention), so
// 4 L seq (heads head_dim) per token forward and 12 L seq (heads head_dim) with backward.
// Forward is 1/3 of the total and backward 2/3. Full recomputation reruns each block's forward
// (not the head's) before its backward: the GPUs then do + (2 N_blocks + 4 L seq heads head_dim) T
// more (hardware FLOPs), while the model FLOPs, and MFU, stay those without it.
double model_flops(const ModelSpec& m, int tp, double tokens, double seq, bool recompute) {
  double blocks = 0;
  for (int l = 0; l < m.layers; ++l) {
    blocks += active_matmul_params(m, l);
  }
  const double head = padded_vocab(m, tp) * m.hidden;
  const double attention_fwd = 4.0 * m.layers * seq * m.heads * m.head_dim;  // per token
  double f = 6.0 * (blocks + head) * tokens + 3.0 * attention_fwd * tokens;
  if (recompute) {
    f += (2.0 * blocks + attention_fwd) * tokens;
  }
  return f;
}

// Weights one GPU holds, as data parallelism reduces them. Per block: attention and MLP matrices
// split over TP, norm weights (and a MoE block's router) whole on every TP rank, as in Megatron;
// routed experts, experts/ep of them split over TP, are kept apart when ep > 1 because only the
// expert-data-parallel group (the dp replicas) holds the same ones. The first virtual stage
// also holds the input embedding and the last the output head and the final norm, vocabulary-
// parallel over TP (one tensor when tied and both are on one GPU).
struct Held {
  double dense = 0;
  double experts = 0;
};

Held held(const ModelSpec& m, const Parallelism& p, int pp_rank) {
  const int stages = p.pp * p.vpp;
  const int per_stage = m.layers / stages;  // the tests use even splits
  EXPECT_EQ(per_stage * stages, m.layers);
  Held h;
  for (int chunk = 0; chunk < p.vpp; ++chunk) {
    const int v = chunk * p.pp + pp_rank;
    for (int l = v * per_stage; l < (v + 1) * per_stage; ++l) {
      double split = m.attention_params();
      double whole = m.norm_params();
      if (!m.layer_is_moe(l)) {
        split += m.dense_mlp_params();
      } else {
        split += m.shared_experts * m.expert_params();
        whole += m.router_params();
        const double routed = m.experts / p.ep * m.expert_params() / p.tp;
        (p.ep > 1 ? h.experts : h.dense) += routed;
      }
      h.dense += split / p.tp + whole;
    }
    const double table = padded_vocab(m, p.tp) * m.hidden / p.tp;
    if (v == 0) {
      h.dense += table;
    }
    if (v == stages - 1) {
      h.dense += (m.tied_embeddings && stages == 1 ? 0.0 : table) + (m.rmsnorm ? 1 : 2) * m.hidden;
    }
  }
  return h;
}

// The pipeline stage of workload rank r (Megatron order tp-ep-dp-pp, TP fastest).
int pp_rank_of(const Parallelism& p, int r) {
  return r / (p.tp * p.cp * p.ep * p.dp);
}

void expect_rel(double actual, double expected, double tol, const std::string& what) {
  EXPECT_NEAR(actual, expected, tol * std::abs(expected)) << what;
}

// --- FLOPs --------------------------------------------------------------------------------------

struct FlopsCase {
  const char* par;
  int mbs;
  int gbs;
  int seq;  // 0: the model's
  bool recompute;
};

void check_flops(const ModelSpec& m, const FlopsCase& c) {
  SCOPED_TRACE(fmt::format("{} {} mbs {} gbs {}{}", m.name, c.par, c.mbs, c.gbs,
                           c.recompute ? " recompute" : ""));
  const GeneratedStep s = generate(m, c.par, config(c.mbs, c.gbs, c.seq, c.recompute));
  const double seq = c.seq > 0 ? c.seq : m.seq_len;
  const int tp = parse_parallelism(c.par).tp;
  // Sums of a few thousand doubles: only rounding separates them.
  expect_rel(s.figures.flops, model_flops(m, tp, c.gbs * seq, seq, false), 1e-9,
             "StepFigures::flops (model FLOPs)");
  // The ops carry the work their kernels do: GEMMs padded to whole 128 x 128 tiles
  // (kernels.hpp), which adds up to 6% for the tiny model's odd widths (a 1,100 vocabulary,
  // 48-wide heads) and nothing where every width is a multiple of 128.
  const double hardware = model_flops(m, tp, c.gbs * seq, seq, c.recompute);
  EXPECT_GE(tally(s.workload).flops, hardware * (1 - 1e-9)) << "GEMM + attention ops";
  EXPECT_LE(tally(s.workload).flops, hardware * 1.06) << "GEMM + attention ops";
}

TEST(GeneratorFlops, DenseStepsMatchSixNTPlusAttention) {
  const ModelSpec m = tiny();
  // Every data/tensor/pipeline layout, each with 4 micro-batches per pipeline (gbs = mbs x dp x
  // 4), so gradient accumulation and the 1F1B steady state are in.
  const FlopsCase cases[] = {
      {"dp=4", 2, 32, 0, false},
      {"dp=4,zero=1", 2, 32, 0, false},
      {"fsdp=4", 2, 32, 0, false},
      {"tp=2", 2, 8, 0, false},
      {"tp=4", 2, 8, 0, false},
      {"tp=4,sp", 2, 8, 0, false},
      {"pp=4", 2, 8, 0, false},
      {"pp=2,vpp=2", 2, 8, 0, false},
      {"tp=2,pp=2,dp=2", 2, 16, 0, false},
      {"tp=2,sp,pp=2,vpp=2,dp=2,zero=1", 2, 16, 0, false},
      {"tp=2,fsdp=2", 2, 16, 0, false},
      {"tp=2,pp=2,dp=2", 2, 16, 0, true},
      {"fsdp=4", 2, 32, 0, true},
  };
  for (const FlopsCase& c : cases) {
    check_flops(m, c);
  }
}

TEST(GeneratorFlops, ZooModelsMatchSixNTPlusAttention) {
  // Phi-2: parallel attention and MLP, LayerNorm, untied; Llama 3 8B: GQA, SwiGLU, a 128,256
  // vocabulary; MPT-7B: tied embeddings (the head is still a GEMM). Short sequences keep it fast.
  check_flops(load_model("phi-2"), {"fsdp=8", 2, 16, 256, false});
  check_flops(load_model("llama3-8b"), {"tp=4,pp=2", 1, 4, 256, false});
  check_flops(load_model("llama3-8b"), {"tp=2,dp=2,zero=1", 1, 4, 256, true});
  check_flops(load_model("mpt-7b"), {"tp=8", 1, 2, 256, false});
}

TEST(GeneratorFlops, MixtureOfExpertsCountsTheActiveParameters) {
  // A token passes through the router, top_k routed and the shared experts: N is the active
  // parameters, not the total (DeepSeek-MoE: 1 dense block then 27 MoE blocks, top 6 of 64 and 2
  // shared; OLMoE: 16 MoE blocks, top 8 of 64).
  check_flops(tiny_moe(), {"ep=4", 2, 16, 0, false});
  check_flops(tiny_moe(), {"ep=2,pp=2,dp=2", 2, 16, 0, false});
  check_flops(tiny_moe(), {"ep=2,dp=2", 2, 16, 0, true});
  check_flops(load_model("deepseek-moe-16b"), {"ep=8", 2, 16, 256, false});
  check_flops(load_model("olmoe-1b-7b"), {"ep=4,dp=2", 1, 16, 256, false});
}

TEST(GeneratorFlops, RecomputationAddsOneForwardOfTheBlocks) {
  // Without recomputation the blocks' FLOPs are F_blocks = F - 6 V_pad h T (the head's); one
  // forward is a third of them, and recomputation makes the GPUs run exactly that much more:
  // F_rc - F = F_blocks / 3, so the blocks cost 4/3. The model FLOPs stay F. (64-wide heads:
  // every GEMM width a multiple of 128, so no tile padding separates backward from 2 forwards.)
  ModelSpec m = tiny();
  m.head_dim = 64;
  const double tokens = 16.0 * m.seq_len;
  const GeneratedStep plain = generate(m, "tp=2,pp=2,dp=2", config(2, 16));
  const GeneratedStep rc = generate(m, "tp=2,pp=2,dp=2", config(2, 16, 0, true));
  const double f = tally(plain.workload).flops;
  const double f_rc = tally(rc.workload).flops;
  const double head = 6.0 * padded_vocab(m, 2) * m.hidden * tokens;
  expect_rel(f_rc - f, (f - head) / 3.0, 1e-9, "recomputed forward");
  EXPECT_EQ(rc.figures.flops, plain.figures.flops);
}

TEST(GeneratorFlops, SelectiveRecomputationRerunsOnlyTheAttentionCore) {
  // Selective recomputation (Korthikanti et al.) reruns each layer's attention core forward
  // before its backward: per layer and micro-batch one FlashAttention forward more, 4 s^2 hd per
  // head and sequence (heads / tp on a GPU), and nothing else: no GEMM, no communication. Full
  // recomputation reruns the whole forward with its TP collectives. Model FLOPs stay the same,
  // and so does the memory estimate: with FlashAttention the activations it frees (the s^2
  // attention scores) are never stored (docs/models.md §8).
  const ModelSpec m = tiny();
  const int micro = 2;
  TrainingConfig sel = config(2, 2 * micro);
  sel.selective_recompute = true;
  const GeneratedStep plain = generate(m, "tp=2,sp", config(2, 2 * micro));
  const GeneratedStep s = generate(m, "tp=2,sp", sel);
  const GeneratedStep full = generate(m, "tp=2,sp", config(2, 2 * micro, 0, true));
  EXPECT_NE(s.description.find("selective recompute"), std::string::npos);
  const double attention_fwd =
      4.0 * 2 * m.seq_len * m.seq_len * (m.heads / 2.0) * m.head_dim;  // mbs 2
  const Tally t0 = tally(plain.workload, 0);
  const Tally ts = tally(s.workload, 0);
  expect_rel(ts.flops - t0.flops, micro * m.layers * attention_fwd, 1e-12, "attention reruns");
  EXPECT_EQ(ts.kernels.at(ComputeClass::kAttention),
            t0.kernels.at(ComputeClass::kAttention) + micro * m.layers);
  EXPECT_EQ(ts.kernels.at(ComputeClass::kGemm), t0.kernels.at(ComputeClass::kGemm));
  EXPECT_EQ(ts.ops, t0.ops);  // the same communication
  EXPECT_EQ(ts.bytes, t0.bytes);
  // Full recomputation: the forward's 2 all-gathers and 2 reduce-scatters again.
  const Tally tf = tally(full.workload, 0);
  EXPECT_EQ(tf.n(OpKind::kAllGather, "tp"), t0.n(OpKind::kAllGather, "tp") + 2 * micro * m.layers);
  EXPECT_EQ(s.figures.flops, plain.figures.flops);
  EXPECT_DOUBLE_EQ(estimate_memory(m, parse_parallelism("tp=2,sp"), sel).total(),
                   estimate_memory(m, parse_parallelism("tp=2,sp"), config(2, 2 * micro)).total());
  TrainingConfig both = sel;
  both.recompute = true;
  EXPECT_NE(test::error_of([&] { generate(m, "tp=2,sp", both); }).find("exclude each other"),
            std::string::npos);
  // With context parallelism the rerun follows the keys' and values' re-gather it needs.
  TrainingConfig cp = config(1, 2);
  cp.selective_recompute = true;
  const Workload w = generate(m, "tp=2,cp=2", cp).workload;
  EXPECT_LT(w.find_op("r0/L0.attn.cp.kv.allgather.bwd.mb0").value(),
            w.find_op("r0/L0.attn.core.recompute.mb0").value());
  EXPECT_LT(w.find_op("r0/L0.attn.core.recompute.mb0").value(),
            w.find_op("r0/L0.attn.core.bwd.mb0").value());
}

TEST(GeneratorFlops, TpMustDivideTheKeyValueHeads) {
  // Megatron-Core shards whole key/value head groups: num_query_groups_per_partition =
  // divide(num_query_groups, tp_size), which asserts divisibility. tp=8 over 4 KV heads is
  // refused, as Megatron refuses it (vLLM-style KV replication is not a training layout).
  const ModelSpec m = tiny();
  ASSERT_EQ(m.kv_heads, 4);
  EXPECT_NO_THROW(generate(m, "tp=4", config(2, 2)));
  const std::string e = test::error_of([&] { generate(m, "tp=8", config(2, 2)); });
  EXPECT_NE(e.find("tp=8 does not divide the 4 key/value heads"), std::string::npos) << e;
}

// --- Communication bytes ------------------------------------------------------------------------

// The tiny model's activation tensor for one micro-batch of mbs 2: tokens x hidden x bytes.
constexpr double kMbs = 2;
double act_bytes(const ModelSpec& m) {
  return kMbs * m.seq_len * m.hidden * kBpe;
}

TEST(GeneratorComm, DdpAllReducesEachRanksParametersOnceWhateverTheBuckets) {
  // DDP: after the last micro-batch's backward every rank all-reduces the gradients of the
  // weights it holds over its data-parallel group, once: bpe x held(rank) bytes, however the
  // buckets cut them. With a 1-byte bucket every block leaves alone (the embedding and head ride
  // with the first and last block), with an unbounded one the whole stage leaves at once.
  const ModelSpec m = tiny();
  const Parallelism p = parse_parallelism("tp=2,pp=2,dp=2");
  for (const double bucket : {1.0, 25.0 * 1024 * 1024, 1e15}) {
    SCOPED_TRACE(bucket);
    TrainingConfig c = config(2, 8);  // 2 micro-batches per pipeline
    c.bucket_bytes = bucket;
    const GeneratedStep s = generate_step(m, p, c);
    for (int r = 0; r < p.world(); ++r) {
      const Tally t = tally(s.workload, r);
      expect_rel(t.b(OpKind::kAllReduce, "dp"), kBpe * held(m, p, pp_rank_of(p, r)).dense, 1e-12,
                 fmt::format("rank {}", r));
      if (bucket == 1.0) {
        EXPECT_EQ(t.n(OpKind::kAllReduce, "dp"), m.layers / p.pp);
      } else if (bucket == 1e15) {
        EXPECT_EQ(t.n(OpKind::kAllReduce, "dp"), 1);
      }
      EXPECT_EQ(t.n(OpKind::kReduceScatter, "dp") + t.n(OpKind::kAllGather, "dp"), 0);
    }
  }
}

TEST(GeneratorComm, ZeroOneReduceScattersAndAllGathersEachRanksParameters) {
  // ZeRO-1: the gradients are reduce-scattered (in buckets) after the last micro-batch, each rank
  // updates its 1/dp shard, and the updated weights are all-gathered: bpe x held bytes each.
  const ModelSpec m = tiny();
  const Parallelism p = parse_parallelism("dp=4,zero=1");
  const GeneratedStep s = generate_step(m, p, config(2, 16));
  const double expected = kBpe * held(m, p, 0).dense;
  for (int r = 0; r < 4; ++r) {
    const Tally t = tally(s.workload, r);
    expect_rel(t.b(OpKind::kReduceScatter, "dp"), expected, 1e-12, "reduce-scatter");
    expect_rel(t.b(OpKind::kAllGather, "dp"), expected, 1e-12, "all-gather");
    EXPECT_EQ(t.n(OpKind::kAllGather, "dp"), 1);
    EXPECT_EQ(t.n(OpKind::kAllReduce, "dp"), 0);
  }
}

TEST(GeneratorComm, ZeroTwoReduceScattersEveryMicroBatch) {
  // ZeRO-2 keeps only its shard of the gradients, so every micro-batch's gradients are
  // reduce-scattered (micro x ZeRO-1's bytes); the updated weights are all-gathered once.
  const ModelSpec m = tiny();
  const Parallelism p = parse_parallelism("dp=4,zero=2");
  const int micro = 3;
  const GeneratedStep s = generate_step(m, p, config(2, 2 * 4 * micro));
  const double expected = kBpe * held(m, p, 0).dense;
  for (int r = 0; r < 4; ++r) {
    const Tally t = tally(s.workload, r);
    expect_rel(t.b(OpKind::kReduceScatter, "dp"), micro * expected, 1e-12, "reduce-scatter");
    expect_rel(t.b(OpKind::kAllGather, "dp"), expected, 1e-12, "all-gather");
    EXPECT_EQ(t.n(OpKind::kAllGather, "dp"), 1);
  }
}

TEST(GeneratorComm, FsdpGathersEveryLayerTwiceAndReduceScattersItOncePerMicroBatch) {
  // FSDP (ZeRO-3): per micro-batch each layer's full weights are all-gathered before its forward
  // and again before its backward, and its gradients reduce-scattered once after the backward:
  // 2 x micro x bpe x held all-gather bytes and micro x bpe x held reduce-scatter bytes per rank,
  // in 2 L and L ops per micro-batch (the embedding rides with the first layer, the head with
  // the last). No all-gather after the optimizer: each rank keeps its shard.
  const ModelSpec m = tiny();
  const Parallelism p = parse_parallelism("fsdp=4");
  const int micro = 3;
  const GeneratedStep s = generate_step(m, p, config(2, 2 * 4 * micro));
  EXPECT_EQ(s.figures.micro_batches, micro);
  const double layer_unit = kBpe * held(m, p, 0).dense;
  for (int r = 0; r < 4; ++r) {
    const Tally t = tally(s.workload, r);
    expect_rel(t.b(OpKind::kAllGather, "dp"), 2.0 * micro * layer_unit, 1e-12, "all-gather");
    expect_rel(t.b(OpKind::kReduceScatter, "dp"), micro * layer_unit, 1e-12, "reduce-scatter");
    EXPECT_EQ(t.n(OpKind::kAllGather, "dp"), 2 * micro * m.layers);
    EXPECT_EQ(t.n(OpKind::kReduceScatter, "dp"), micro * m.layers);
    EXPECT_EQ(t.n(OpKind::kAllReduce, "dp"), 0);
  }
}

TEST(GeneratorComm, TensorParallelAllReducesTwiceForwardAndTwiceBackwardPerLayer) {
  // Megatron TP: an all-reduce of the micro-batch's activations (mbs x seq x hidden x bpe) after
  // attention and after the MLP, and their mirror images on the input gradients in backward:
  // 4 per layer and micro-batch on every rank; recomputation reruns the forward's two. A
  // parallel attention + MLP block (Phi-2, GPT-J) sums both branches first: one each way.
  ModelSpec m = tiny();
  const int micro = 2;
  for (const bool recompute : {false, true}) {
    const GeneratedStep s = generate(m, "tp=4", config(2, 2 * micro, 0, recompute));
    const int per_layer = recompute ? 6 : 4;
    for (int r = 0; r < 4; ++r) {
      const Tally t = tally(s.workload, r);
      EXPECT_EQ(t.n(OpKind::kAllReduce, "tp"), per_layer * m.layers * micro);
      expect_rel(t.b(OpKind::kAllReduce, "tp"), per_layer * m.layers * micro * act_bytes(m), 1e-12,
                 "tp all-reduce");
    }
    expect_rel(s.figures.comm_bytes[static_cast<int>(OpKind::kAllReduce)],
               4.0 * per_layer * m.layers * micro * act_bytes(m), 1e-12, "figures");
  }
  m.parallel_attn_mlp = true;
  const Tally t = tally(generate(m, "tp=4", config(2, 2 * micro)).workload, 0);
  EXPECT_EQ(t.n(OpKind::kAllReduce, "tp"), 2 * m.layers * micro);
}

TEST(GeneratorComm, SequenceParallelGathersAndScattersInsteadOfAllReducing) {
  // With SP each all-reduce becomes a reduce-scatter, and each norm (run on seq/tp tokens) is
  // followed by an all-gather; in backward they swap, and QKV's and fc1's saved input shards
  // are gathered again for their weight gradients (Megatron and TE keep only the shard). Per
  // layer and micro-batch: 6 all-gathers and 4 reduce-scatters of the full activation (the
  // gathered output / the scattered input), no all-reduce on the TP group.
  const ModelSpec m = tiny();
  const int micro = 2;
  const GeneratedStep s = generate(m, "tp=4,sp", config(2, 2 * micro));
  for (int r = 0; r < 4; ++r) {
    const Tally t = tally(s.workload, r);
    EXPECT_EQ(t.n(OpKind::kAllReduce, "tp"), 0);
    EXPECT_EQ(t.n(OpKind::kAllGather, "tp"), 6 * m.layers * micro);
    EXPECT_EQ(t.n(OpKind::kReduceScatter, "tp"), 4 * m.layers * micro);
    expect_rel(t.b(OpKind::kAllGather, "tp"), 6.0 * m.layers * micro * act_bytes(m), 1e-12, "ag");
    expect_rel(t.b(OpKind::kReduceScatter, "tp"), 4.0 * m.layers * micro * act_bytes(m), 1e-12,
               "rs");
  }
}

bool depends_on(const Workload& w, const std::string& op, const std::string& on) {
  const auto deps = w.deps(w.find_op(op).value());
  return std::find(deps.begin(), deps.end(), w.find_op(on).value()) != deps.end();
}

TEST(GeneratorComm, BackwardTpCommunicationRunsBesideTheWeightGradients) {
  // Megatron's and TE's column-parallel linears reduce their input gradient asynchronously and
  // compute the weight gradient meanwhile: the reduction waits for QKV's input gradient, runs
  // on stream "tp", and the norm's backward (not QKV's weight gradient) waits for it.
  const ModelSpec m = tiny();
  const Workload w = generate(m, "tp=2", config(2, 2)).workload;
  const std::string ar = "r0/L0.attn.tp.allreduce.bwd.mb0";
  EXPECT_EQ(w.stream(w.stream_of(w.find_op(ar).value())).name, "tp");
  EXPECT_TRUE(depends_on(w, ar, "r0/L0.attn.qkv.dgrad.mb0"));
  EXPECT_TRUE(depends_on(w, "r0/L0.attn.norm.bwd.mb0", ar));
  EXPECT_FALSE(depends_on(w, "r0/L0.attn.qkv.wgrad.mb0", ar));
  // With SP: the output gradient's all-gather comes before fc2's backward (on the compute
  // stream), the reduce-scatter of fc1's input gradient beside fc1's weight gradient, and fc1's
  // input is gathered again beside its input gradient; only the weight gradient waits for it.
  const Workload s = generate(m, "tp=2,sp", config(2, 2)).workload;
  const auto pos = [&](const std::string& op) { return s.find_op(op).value(); };
  EXPECT_LT(pos("r0/L3.mlp.tp.allgather.bwd.mb0"), pos("r0/L3.mlp.fc2.dgrad.mb0"));
  const std::string rs = "r0/L3.mlp.sp.reducescatter.bwd.mb0";
  const std::string again = "r0/L3.mlp.fc1.input.allgather.bwd.mb0";
  EXPECT_EQ(s.stream(s.stream_of(pos(rs))).name, "tp");
  EXPECT_EQ(s.stream(s.stream_of(pos(again))).name, "tp");
  EXPECT_TRUE(depends_on(s, rs, "r0/L3.mlp.fc1.dgrad.mb0"));
  EXPECT_TRUE(depends_on(s, "r0/L3.mlp.fc1.wgrad.mb0", again));
  EXPECT_FALSE(depends_on(s, "r0/L3.mlp.fc1.dgrad.mb0", again));
  EXPECT_TRUE(depends_on(s, "r0/L3.mlp.norm.bwd.mb0", rs));
  // Split micro-batches (Domino): a part's backward communication waits for that part's own
  // work (the layer's first, for the residual add before it), not the other part's.
  TrainingConfig d = config(2, 2);
  d.overlap = Overlap::kDomino;
  const Workload o = generate(m, "tp=2,sp", d).workload;
  EXPECT_TRUE(depends_on(o, "r0/L7.mlp.tp.allgather.bwd.p0.mb0", "r0/L7.residual.bwd.mb0"));
  EXPECT_TRUE(depends_on(o, "r0/L7.attn.tp.allgather.bwd.p0.mb0", "r0/L7.mlp.norm.bwd.p0.mb0"));
  EXPECT_FALSE(depends_on(o, "r0/L7.attn.tp.allgather.bwd.p0.mb0", "r0/L7.mlp.norm.bwd.p1.mb0"));
  EXPECT_TRUE(depends_on(o, "r0/L7.attn.tp.allgather.bwd.p1.mb0", "r0/L7.mlp.norm.bwd.p1.mb0"));
}

TEST(GeneratorComm, PipelineSendsOneActivationPerMicroBatchAndBoundary) {
  // Each of the pp x vpp - 1 boundaries between consecutive (virtual) stages carries, per
  // micro-batch, the activations forward and their gradient backward: mbs x seq x hidden x bpe
  // (split over TP with SP, where stages exchange sequence shards), one send and one recv each
  // way. Summed over the tp x dp pipelines: 2 x tp x dp x micro x (S - 1) sends, as many recvs.
  // TP without SP scatters and gathers (Megatron-LM, SC'21 §4.1): each TP rank sends a 1/tp
  // slice and the receiving stage all-gathers the whole activation over TP after each recv.
  const ModelSpec m = tiny();
  struct Case {
    const char* par;
    int tp, dp, stages;
    bool sp;
  };
  for (const Case& c :
       {Case{"pp=4", 1, 1, 4, false}, Case{"pp=2,vpp=2", 1, 1, 4, false},
        Case{"tp=2,sp,pp=2,dp=2", 2, 2, 2, true}, Case{"pp=4,vpp=2,dp=2", 1, 2, 8, false},
        Case{"tp=2,pp=2,vpp=2", 2, 1, 4, false}}) {
    SCOPED_TRACE(c.par);
    const int micro = 4;
    const GeneratedStep s = generate(m, c.par, config(2, 2 * c.dp * micro));
    const double whole = act_bytes(m) / (c.sp ? c.tp : 1);
    const bool scatter = c.tp > 1 && !c.sp;
    const double act = scatter ? whole / c.tp : whole;
    const double transfers = 2.0 * c.tp * c.dp * micro * (c.stages - 1);
    const Tally t = tally(s.workload);
    if (scatter) {  // (with SP the layers' own all-gathers share the axis)
      EXPECT_EQ(t.n(OpKind::kAllGather, "tp"), transfers);
      expect_rel(t.b(OpKind::kAllGather, "tp"), transfers * whole, 1e-12, "gather");
    }
    EXPECT_EQ(t.n(OpKind::kSend, "p2p"), transfers);
    EXPECT_EQ(t.n(OpKind::kRecv, "p2p"), transfers);
    expect_rel(t.b(OpKind::kSend, "p2p"), transfers * act, 1e-12, "send");
    expect_rel(t.b(OpKind::kRecv, "p2p"), transfers * act, 1e-12, "recv");
  }
}

TEST(GeneratorComm, ExpertParallelAllToAllsAndExpertGradients) {
  // EP: each MoE block dispatches its tokens' top_k copies to the experts' GPUs and combines
  // them back, forward and backward: 4 all-to-alls of mbs x seq x top_k x hidden x bpe per MoE
  // block and micro-batch on every rank (balanced routing).
  // Gradients: the dense weights (attention, norms, router, shared expert, embeddings) are
  // replicated over all dp x ep GPUs of a stage and all-reduced there; the routed experts only
  // over the dp replicas that hold the same experts (the expert-data-parallel group), and not at
  // all when dp = 1.
  const ModelSpec m = tiny_moe();
  const int micro = 2;
  for (const char* par : {"ep=4", "ep=2,dp=2"}) {
    SCOPED_TRACE(par);
    const Parallelism p = parse_parallelism(par);
    const GeneratedStep s =
        generate_step(m, p, config(2, static_cast<int>(2 * p.dense_dp() * micro)));
    const Held h = held(m, p, 0);
    const double a2a = kMbs * m.seq_len * m.top_k * m.hidden * kBpe;
    for (int r = 0; r < p.world(); ++r) {
      const Tally t = tally(s.workload, r);
      EXPECT_EQ(t.n(OpKind::kAllToAll, "ep"), 4 * m.moe_layers() * micro);
      expect_rel(t.b(OpKind::kAllToAll, "ep"), 4.0 * m.moe_layers() * micro * a2a, 1e-12, "a2a");
      expect_rel(t.b(OpKind::kAllReduce, "dp"), kBpe * h.dense, 1e-12, "dense gradients");
      expect_rel(t.b(OpKind::kAllReduce, "edp"), p.dp > 1 ? kBpe * h.experts : 0.0, 1e-12,
                 "expert gradients");
    }
  }
}

TEST(GeneratorComm, ShardedExpertsGatherAndReduceOverTheExpertDataParallelGroup) {
  // ZeRO-1 and FSDP with ep=2, dp=2: the dense weights are sharded over all 4 GPUs, the routed
  // experts over the 2 that hold the same ones. Per rank, ZeRO-1 reduce-scatters and all-gathers
  // bpe x dense on the dp group and bpe x experts on the edp group once per step; FSDP gathers
  // each twice and reduce-scatters each once per micro-batch, the experts in one op per MoE
  // block.
  const ModelSpec m = tiny_moe();
  const int micro = 2;
  for (const char* par : {"ep=2,dp=2,zero=1", "ep=2,fsdp=2"}) {
    SCOPED_TRACE(par);
    const Parallelism p = parse_parallelism(par);
    const GeneratedStep s =
        generate_step(m, p, config(2, static_cast<int>(2 * p.dense_dp() * micro)));
    const Held h = held(m, p, 0);
    const double per_step = p.zero == 3 ? micro : 1;
    const double gathers = p.zero == 3 ? 2 * per_step : 1;
    for (int r = 0; r < p.world(); ++r) {
      const Tally t = tally(s.workload, r);
      expect_rel(t.b(OpKind::kAllGather, "dp"), gathers * kBpe * h.dense, 1e-12, "dense ag");
      expect_rel(t.b(OpKind::kReduceScatter, "dp"), per_step * kBpe * h.dense, 1e-12, "dense rs");
      expect_rel(t.b(OpKind::kAllGather, "edp"), gathers * kBpe * h.experts, 1e-12, "expert ag");
      expect_rel(t.b(OpKind::kReduceScatter, "edp"), per_step * kBpe * h.experts, 1e-12,
                 "expert rs");
      if (p.zero == 3) {
        EXPECT_EQ(t.n(OpKind::kAllGather, "edp"), 2 * micro * m.moe_layers());
        EXPECT_EQ(t.n(OpKind::kReduceScatter, "edp"), micro * m.moe_layers());
      }
    }
  }
}

TEST(GeneratorComm, ContextParallelGathersKeysAndValuesAndHalvesEachGpusWork) {
  // cp=2 on tiny (seq 128, 4 KV heads of 48, tp=2: 2 per GPU): each GPU runs 64 tokens of every
  // sequence. Per layer and micro-batch it all-gathers the keys and values of the whole sequence
  // over its cp group, 2 x 128 x 2 x 48 elements of 2 bytes (mbs 1) forward, reduce-scatters their
  // gradients backward, and the weight gradients reduce over dp x cp. Its GEMM and attention
  // FLOPs are half of cp=1's, and the step's total is the same.
  const ModelSpec m = tiny();
  const Parallelism one = parse_parallelism("tp=2,dp=2");
  const Parallelism two = parse_parallelism("tp=2,cp=2,dp=2");
  EXPECT_EQ(two.world(), 8);
  EXPECT_EQ(to_string(two), "tp=2,cp=2,dp=2");
  EXPECT_EQ(to_string(parse_parallelism(to_string(two))), to_string(two));
  const TrainingConfig c = config(1, 4);  // 2 micro-batches per replica
  const GeneratedStep a = generate_step(m, one, c);
  const GeneratedStep b = generate_step(m, two, c);
  expect_rel(b.figures.flops, a.figures.flops, 1e-12, "step FLOPs");
  // GPU 0's work halves (checked where every GEMM width fills whole 128-wide tiles: 256 tokens,
  // 128 per GPU under cp, and 64-wide heads; otherwise the padding differs).
  ModelSpec whole = m;
  whole.head_dim = 64;
  const TrainingConfig c256 = config(1, 4, 256);
  expect_rel(tally(generate_step(whole, two, c256).workload, 0).flops,
             tally(generate_step(whole, one, c256).workload, 0).flops / 2, 1e-12, "GPU 0's FLOPs");
  const double kv = 2.0 * 128 * 2 * 48 * kBpe;
  const Tally t = tally(b.workload, 0);
  // Gathered in forward and again before attention's backward (TransformerEngine keeps only
  // the local keys and values), for 2 micro-batches.
  expect_rel(t.b(OpKind::kAllGather, "cp"), 2 * 2 * m.layers * kv, 1e-12, "KV all-gathers");
  EXPECT_EQ(t.n(OpKind::kAllGather, "cp"), 2 * 2 * m.layers);
  expect_rel(t.b(OpKind::kReduceScatter, "cp"), 2 * m.layers * kv, 1e-12, "their gradients");
  // The cp group: GPUs 0 and 2 (tp fastest, then cp); the gradient group spans cp x dp.
  for (const traces::Group& g : b.workload.groups()) {
    if (g.name == "cp0") {
      EXPECT_EQ(g.ranks, (std::vector<traces::Rank>{0, 2}));
    }
    if (g.name == "dp0") {
      EXPECT_EQ(g.ranks, (std::vector<traces::Rank>{0, 2, 4, 6}));
    }
  }
  // The same weights are reduced, over twice the GPUs: the same bytes per rank.
  expect_rel(tally(b.workload, 0).b(OpKind::kAllReduce, "dp"),
             tally(a.workload, 0).b(OpKind::kAllReduce, "dp"), 1e-12, "gradients");
  // Activations: half the tokens per GPU.
  expect_rel(estimate_memory(m, two, c).activations, estimate_memory(m, one, c).activations / 2,
             1e-12, "activations");
  // The sequence must split into 2 x cp chunks.
  TrainingConfig odd = c;
  odd.seq = 100;
  EXPECT_NE(test::error_of([&] {
              generate_step(m, parse_parallelism("tp=2,cp=4"), odd);
            }).find("cp=4 needs the sequence (100 tokens) to split into 2 x cp = 8 equal chunks"),
            std::string::npos);
}

// --- FP8 ----------------------------------------------------------------------------------------

TrainingConfig fp8(TrainingConfig c, bool param_gather = false) {
  c.precision = traces::Precision::kFp8;
  c.fp8_param_gather = param_gather;
  return c;
}

// Compute ops of `rank` by (class, precision): count and FLOPs.
std::map<std::pair<ComputeClass, traces::Precision>, std::pair<int, double>> kernels_by_precision(
    const Workload& w, int rank) {
  std::map<std::pair<ComputeClass, traces::Precision>, std::pair<int, double>> out;
  for (OpId op = 0; op < w.op_count(); ++op) {
    if (w.rank_of(op) == static_cast<traces::Rank>(rank)) {
      if (const traces::ComputeShape* s = w.compute_shape(op)) {
        auto& [n, f] = out[{s->cls, s->precision}];
        ++n;
        f += s->flops;
      }
    }
  }
  return out;
}

int count_of(std::map<std::pair<ComputeClass, traces::Precision>, std::pair<int, double>>& kernels,
             ComputeClass cls, traces::Precision precision) {
  return kernels[{cls, precision}].first;
}

TEST(GeneratorPrecision, Fp8RunsTheLinearGemmsInFp8AndGathersTheirInputsInFp8) {
  // tiny at tp=4 with SP, 2 micro-batches of mbs 2. Under FP8 each layer's four linears (QKV,
  // projection, fc1, fc2) run forward, dgrad and wgrad in FP8: 12 GEMMs per layer and
  // micro-batch, 6 x tokens x their weights on the GPU in FLOPs. The output head and attention
  // stay 16-bit. Model FLOPs do not change. The SP all-gathers (4 per layer and micro-batch: the
  // inputs of QKV and fc1 forward, the output gradients of the projection and fc2 backward)
  // carry one byte an element; the reduce-scatters stay 16-bit. Per layer and micro-batch the
  // quantizations add 6 streaming kernels: the projection's and fc2's inputs (cast-transposed, 4
  // bytes an element) and the four output gradients (tokens x out, 4 bytes an element, plus
  // the transpose of QKV's and fc1's inputs, 2 bytes an element of tokens x hidden).
  ModelSpec m = tiny();
  m.head_dim = 64;  // whole 128-wide tiles: the ops' work is the closed form
  const int micro = 2;
  const TrainingConfig c = config(2, 2 * micro);
  const GeneratedStep a = generate(m, "tp=4,sp", c);
  const GeneratedStep b = generate(m, "tp=4,sp", fp8(c));
  EXPECT_NE(b.description.find(", fp8"), std::string::npos) << b.description;
  expect_rel(b.figures.flops, a.figures.flops, 1e-12, "model FLOPs");
  const double tokens = kMbs * m.seq_len;
  const double linear = (m.attention_params() + m.dense_mlp_params()) / 4;
  for (int r = 0; r < 4; ++r) {
    auto k = kernels_by_precision(b.workload, r);
    const auto [n8, f8] = k[std::make_pair(ComputeClass::kGemm, traces::Precision::kFp8)];
    EXPECT_EQ(n8, 12 * m.layers * micro);
    expect_rel(f8, micro * m.layers * 6.0 * tokens * linear, 1e-12, "FP8 GEMM FLOPs");
    EXPECT_EQ(count_of(k, ComputeClass::kGemm, traces::Precision::kBf16), 3 * micro);  // the head
    EXPECT_EQ(count_of(k, ComputeClass::kAttention, traces::Precision::kFp8), 0);
    auto k16 = kernels_by_precision(a.workload, r);
    EXPECT_EQ(count_of(k, ComputeClass::kElementwise, traces::Precision::kBf16) -
                  count_of(k16, ComputeClass::kElementwise, traces::Precision::kBf16),
              6 * m.layers * micro);
    // Their HBM bytes in closed form.
    const double q = m.heads / 4.0 * m.head_dim;  // projection input width on this GPU
    const double f = m.ffn_hidden / 4.0;          // fc2 input width
    const double qkv = (m.heads + 2.0 * m.kv_heads) / 4.0 * m.head_dim;
    const double gate_f = 2.0 * f;               // fc1 output (SwiGLU: gate and up)
    const double casts = tokens * (q + f) * 4 +  // cast-transposes of two inputs
                         tokens * (qkv + m.hidden + gate_f + m.hidden) * 4 +  // output grads
                         tokens * 2.0 * m.hidden * 2;  // transposes of QKV's and fc1's inputs
    double cast_bytes = 0;
    for (OpId op = 0; op < b.workload.op_count(); ++op) {
      const std::string label = b.workload.label(op);
      if (b.workload.rank_of(op) == static_cast<traces::Rank>(r) &&
          (label.find(".cast.") != std::string::npos ||
           label.find(".gradcast.") != std::string::npos)) {
        cast_bytes += static_cast<double>(b.workload.bytes(op));
      }
    }
    expect_rel(cast_bytes, casts * m.layers * micro, 1e-9, "quantization bytes");
    const Tally t16 = tally(a.workload, r);
    const Tally t8 = tally(b.workload, r);
    expect_rel(t8.b(OpKind::kAllGather, "tp"), t16.b(OpKind::kAllGather, "tp") / 2, 1e-12,
               "FP8 all-gathers");
    EXPECT_EQ(t8.n(OpKind::kAllGather, "tp"), t16.n(OpKind::kAllGather, "tp"));
    expect_rel(t8.b(OpKind::kReduceScatter, "tp"), t16.b(OpKind::kReduceScatter, "tp"), 1e-12,
               "16-bit reduce-scatters");
  }
  // Without SP the all-reduces stay 16-bit.
  expect_rel(tally(generate(m, "tp=4", fp8(c)).workload, 0).b(OpKind::kAllReduce, "tp"),
             tally(generate(m, "tp=4", c).workload, 0).b(OpKind::kAllReduce, "tp"), 1e-12,
             "all-reduce");
}

TEST(GeneratorPrecision, TheMoeDispatchersGathersStay16Bit) {
  // tiny-moe (layer 0 dense, 1-3 MoE) at tp=2,sp,ep=2: per micro-batch the dense layer's 6 TP
  // all-gathers are TE linears' (FP8), a MoE layer's 3 of its 5 (attention's, with QKV's input
  // regathered); the tokens' gather before the router and its mirror are Megatron's own, 16-bit.
  // So the FP8 step gathers 6/2 + 3 x (3/2 + 2) = 13.5 activations per micro-batch where the
  // 16-bit one gathers 21.
  const ModelSpec m = tiny_moe();
  const int micro = 2;
  const TrainingConfig c = config(2, 2 * 2 * micro);
  const double act = tally(generate(m, "tp=2,sp,ep=2", c).workload, 0).b(OpKind::kAllGather, "tp") /
                     (21.0 * micro);
  expect_rel(tally(generate(m, "tp=2,sp,ep=2", fp8(c)).workload, 0).b(OpKind::kAllGather, "tp"),
             13.5 * micro * act, 1e-12, "tp all-gathers");
}

TEST(GeneratorPrecision, Fp8ParameterGathersCarryTheLinearWeightsInOneByte) {
  // With --fp8-param-gather the data-parallel all-gathers carry each linear weight in one byte
  // and the rest (embedding, head, norms) in two: ZeRO-1 gathers bpe x held - linear bytes once
  // per step, FSDP that twice per micro-batch. Gradients still reduce in 16 bits.
  const ModelSpec m = tiny();
  const double linear = m.layers * (m.attention_params() + m.dense_mlp_params());
  {
    const Parallelism p = parse_parallelism("dp=4,zero=1");
    const GeneratedStep s = generate_step(m, p, fp8(config(2, 16), true));
    const Tally t = tally(s.workload, 1);
    expect_rel(t.b(OpKind::kAllGather, "dp"), kBpe * held(m, p, 0).dense - linear, 1e-12,
               "ZeRO-1 all-gather");
    expect_rel(t.b(OpKind::kReduceScatter, "dp"), kBpe * held(m, p, 0).dense, 1e-12,
               "reduce-scatter");
    // Without the flag FP8 leaves the gathers 16-bit.
    expect_rel(
        tally(generate_step(m, p, fp8(config(2, 16))).workload, 1).b(OpKind::kAllGather, "dp"),
        kBpe * held(m, p, 0).dense, 1e-12, "16-bit all-gather");
  }
  {
    const Parallelism p = parse_parallelism("fsdp=4");
    const int micro = 3;
    const GeneratedStep s = generate_step(m, p, fp8(config(2, 2 * 4 * micro), true));
    expect_rel(tally(s.workload, 0).b(OpKind::kAllGather, "dp"),
               2.0 * micro * (kBpe * held(m, p, 0).dense - linear), 1e-12, "FSDP all-gathers");
  }
  // Transformer Engine's cached FP8 weights and transposes: 2 bytes a linear weight, unless the
  // weights are FP8 themselves.
  const Parallelism one = parse_parallelism("dp=1");
  expect_rel(estimate_memory(m, one, fp8(config(2, 2))).weights -
                 estimate_memory(m, one, config(2, 2)).weights,
             2.0 * linear, 1e-12, "FP8 weight copies");
  const Parallelism z1 = parse_parallelism("dp=4,zero=1");
  expect_rel(estimate_memory(m, z1, fp8(config(2, 8), true)).weights,
             estimate_memory(m, z1, config(2, 8)).weights, 1e-12, "FP8 parameters");
}

TEST(GeneratorPrecision, Fp32RunsEveryGemmAtTheFp32Rate) {
  const ModelSpec m = tiny();
  TrainingConfig c = config(2, 2);
  c.precision = traces::Precision::kFp32;
  c.bytes_per_element = 4;
  const GeneratedStep s = generate(m, "dp=1", c);
  auto k = kernels_by_precision(s.workload, 0);
  EXPECT_EQ(count_of(k, ComputeClass::kGemm, traces::Precision::kBf16), 0);
  EXPECT_GT(count_of(k, ComputeClass::kGemm, traces::Precision::kFp32), 0);
  EXPECT_GT(count_of(k, ComputeClass::kAttention, traces::Precision::kFp32), 0);
  EXPECT_NE(s.description.find(", fp32"), std::string::npos);
}

TEST(GeneratorPrecision, InconsistentSettingsAreNamed) {
  const ModelSpec m = tiny();
  TrainingConfig c = config(2, 8);
  c.bytes_per_element = 4;  // 4-byte elements with 16-bit GEMMs
  EXPECT_NE(test::error_of([&] { generate(m, "dp=4", c); }).find("precision bf16 with 4-byte"),
            std::string::npos);
  c.bytes_per_element = 2;
  c.fp8_param_gather = true;
  EXPECT_NE(test::error_of([&] { generate(m, "dp=4,zero=1", c); }).find("it needs --precision fp8"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] {
              generate(m, "dp=4", fp8(c, true));
            }).find("it needs ZeRO (zero=1, 2) or FSDP"),
            std::string::npos);
}

TEST(GeneratorComm, OverlapSplitsTheCommunicationNotItsVolume) {
  // Domino and two-batch overlap run each micro-batch as two halves: twice the TP (or EP)
  // collectives, each of half the bytes, on a stream of their own; the FLOPs stay the same.
  const ModelSpec m = tiny_moe();
  for (const Overlap o : {Overlap::kDomino, Overlap::kTwoBatch}) {
    const bool domino = o == Overlap::kDomino;
    const char* par = domino ? "tp=2,dp=2" : "ep=2,dp=2";
    SCOPED_TRACE(par);
    TrainingConfig split = config(2, 16);
    split.overlap = o;
    const GeneratedStep a = generate(m, par, config(2, 16));
    const GeneratedStep b = generate(m, par, split);
    const OpKind kind = domino ? OpKind::kAllReduce : OpKind::kAllToAll;
    const std::string axis = domino ? "tp" : "ep";
    const Tally ta = tally(a.workload, 0);
    const Tally tb = tally(b.workload, 0);
    EXPECT_EQ(tb.n(kind, axis), 2 * ta.n(kind, axis));
    EXPECT_EQ(tb.b(kind, axis), ta.b(kind, axis));
    EXPECT_EQ(tally(b.workload, 0, axis).n(kind, axis), tb.n(kind, axis));  // all on their stream
    expect_rel(b.figures.flops, a.figures.flops, 1e-12, "flops");
  }
}

TEST(GeneratorComm, FiguresAreTheWorkloadsOps) {
  // StepFigures::comm_bytes sums the same ops per kind.
  const GeneratedStep s = generate(tiny_moe(), "tp=2,sp,ep=2,pp=2,dp=2,zero=1", config(2, 16));
  const Tally t = tally(s.workload);
  for (int k = 0; k < traces::kOpKindCount; ++k) {
    EXPECT_EQ(s.figures.comm_bytes[static_cast<std::size_t>(k)],
              t.kind_bytes(static_cast<OpKind>(k)))
        << traces::to_string(static_cast<OpKind>(k));
  }
}

// --- Op counts ----------------------------------------------------------------------------------

TEST(GeneratorOps, OneLayerOfTensorAndDataParallelism) {
  // tp=2, dp=2, 2 micro-batches, 1-byte DDP buckets. The schedule (generator.cpp), per layer:
  //  forward:  residual add; norm; QKV GEMM, attention, output GEMM, TP all-reduce; norm;
  //            up(+gate) GEMM, activation, down GEMM, TP all-reduce        = 9 kernels + 2 AR
  //  backward: residual add; the MLP's down GEMM dgrad+wgrad, activation, up GEMM dgrad, AR
  //            (on stream "tp") beside the up GEMM's wgrad; norm; output GEMM dgrad+wgrad,
  //            attention, QKV dgrad, AR beside QKV's wgrad; norm
  //                                                                        = 13 kernels + 2 AR
  // plus, per micro-batch, the embedding (1 elementwise) and its backward (1), the head's norm,
  // GEMM and loss (3) and the head's dgrad+wgrad (2); and one optimizer kernel per step.
  const ModelSpec m = tiny();
  const int L = m.layers;
  const int micro = 2;
  TrainingConfig c = config(1, 2 * micro);  // mbs 1 x dp 2 x micro
  c.bucket_bytes = 1;
  const GeneratedStep s = generate(m, "tp=2,dp=2", c);
  const Workload& w = s.workload;
  ASSERT_EQ(w.rank_count(), 4u);
  for (traces::Rank r = 0; r < 4; ++r) {
    SCOPED_TRACE(r);
    std::vector<std::string> streams;
    for (traces::StreamId sid = w.first_stream(r); sid < w.last_stream(r); ++sid) {
      streams.push_back(w.stream(sid).name);
    }
    EXPECT_EQ(streams, (std::vector<std::string>{"compute", "tp", "dp_allgather", "dp_reduce"}));
    const Tally t = tally(w, static_cast<int>(r), "compute");
    EXPECT_EQ(t.kernels.at(ComputeClass::kGemm), micro * (L * (4 + 8) + 1 + 2));
    EXPECT_EQ(t.kernels.at(ComputeClass::kAttention), micro * 2 * L);
    EXPECT_EQ(t.kernels.at(ComputeClass::kNorm), micro * (4 * L + 1));
    EXPECT_EQ(t.kernels.at(ComputeClass::kElementwise), micro * (4 * L + 3));
    EXPECT_EQ(t.kernels.at(ComputeClass::kOptimizer), 1);
    EXPECT_EQ(t.n(OpKind::kAllReduce, "tp"), micro * 2 * L);
    EXPECT_EQ(tally(w, static_cast<int>(r), "tp").n(OpKind::kAllReduce, "tp"), micro * 2 * L);
    const traces::StreamId compute = w.first_stream(r);
    EXPECT_EQ(w.stream(compute).op_count, static_cast<OpId>(micro * (24 * L + 7) + 1));
    EXPECT_EQ(w.stream(compute + 1).op_count, static_cast<OpId>(micro * 2 * L));
    // The data-parallel stream: one all-reduce per layer (1-byte buckets) and the marker the
    // optimizer waits for; nothing is all-gathered without ZeRO.
    const Tally dp = tally(w, static_cast<int>(r), "dp_reduce");
    EXPECT_EQ(dp.n(OpKind::kAllReduce, "dp"), L);
    EXPECT_EQ(w.stream(compute + 3).op_count, static_cast<OpId>(L + 1));
    EXPECT_EQ(w.stream(compute + 2).op_count, 0u);
  }
}

// --- Memory -------------------------------------------------------------------------------------

TEST(GeneratorMemory, WeightsGradientsAndOptimizerPerZeroStage) {
  // The tiny model on one stage, tp=1, dp=4, bf16 + Adam (mixed precision: 2 bytes of weights,
  // 2 of gradients, 12 of fp32 master weights, momentum and variance per parameter; ZeRO paper).
  //   block: attention 256 x 48 x (2x8 + 2x4) = 294,912; MLP 3 x 256 x 1024 = 786,432;
  //          two RMSNorms 512                                   -> 1,081,856 per block
  //   embedding and (untied) head: 1152 x 256 = 294,912 each (vocab padded to 9 x 128),
  //   final norm 256                          -> P = 8 x 1,081,856 + 2 x 294,912 + 256
  // ZeRO-1 shards the optimizer over dp, ZeRO-2 also the gradients, ZeRO-3 also the weights,
  // and FSDP holds one gathered block plus the prefetched next in full (2 x 1,081,856 x 2 B).
  const ModelSpec m = tiny();
  const double block = 294912.0 + 786432.0 + 512.0;
  ASSERT_EQ(block, m.layer_params(0));
  const double P = 8 * block + 2 * 294912.0 + 256.0;
  const double dp = 4;
  for (int zero = 0; zero <= 3; ++zero) {
    SCOPED_TRACE(zero);
    Parallelism p;
    p.dp = 4;
    p.zero = zero;
    const MemoryEstimate e = estimate_memory(m, p, config(2, 8));
    EXPECT_DOUBLE_EQ(e.weights, 2 * P / (zero >= 3 ? dp : 1) + (zero >= 3 ? 2 * block * 2 : 0));
    EXPECT_DOUBLE_EQ(e.gradients, 2 * P / (zero >= 2 ? dp : 1));
    EXPECT_DOUBLE_EQ(e.optimizer, 12 * P / (zero >= 1 ? dp : 1));
    EXPECT_DOUBLE_EQ(e.buffers, 3e9);
    EXPECT_DOUBLE_EQ(e.total(), e.weights + e.gradients + e.optimizer + e.activations + e.buffers);
  }
}

TEST(GeneratorMemory, TensorAndPipelineParallelWeights) {
  // tp=2, pp=2: the first stage holds 4 blocks (matrices halved, norms whole) and half the
  // padded embedding (1280 x 256 / 2 = 163,840); the head is on the other stage.
  const ModelSpec m = tiny();
  const double block = (294912.0 + 786432.0) / 2 + 512.0;
  const double P = 4 * block + 163840.0;
  const MemoryEstimate e = estimate_memory(m, parse_parallelism("tp=2,pp=2"), config(2, 4));
  EXPECT_DOUBLE_EQ(e.weights, 2 * P);
  EXPECT_DOUBLE_EQ(e.optimizer, 12 * P);
}

TEST(GeneratorMemory, ExpertsAreShardedOverTheirOwnReplicas) {
  // The tiny MoE with experts in all 4 blocks, ep=2, dp=2 (4 GPUs). Per GPU:
  //   dense per block: attention 294,912 + shared expert 3 x 256 x 128 = 98,304, norms 512 and
  //                    router 8 x 256 = 2,048                            -> 395,776
  //   routed experts per block: 8 / 2 x 98,304                            -> 393,216
  //   dense P_d = 4 x 395,776 + embedding and head 2 x 294,912 + final norm 256; experts
  //   P_e = 4 x 393,216.
  // ZeRO shards P_d over dp x ep = 4 GPUs, P_e over the dp = 2 that hold the same experts.
  ModelSpec m = tiny_moe();
  m.first_dense_layers = 0;
  const double dense_block = 294912.0 + 98304.0 + 512.0 + 2048.0;
  const double expert_block = 4 * 98304.0;
  const double Pd = 4 * dense_block + 2 * 294912.0 + 256.0;
  const double Pe = 4 * expert_block;
  for (int zero = 0; zero <= 3; ++zero) {
    SCOPED_TRACE(zero);
    Parallelism p = parse_parallelism("ep=2,dp=2");
    p.zero = zero;
    auto sharded = [&](int from) { return zero >= from ? Pd / 4 + Pe / 2 : Pd + Pe; };
    const MemoryEstimate e = estimate_memory(m, p, config(2, 8));
    EXPECT_DOUBLE_EQ(e.optimizer, 12 * sharded(1));
    EXPECT_DOUBLE_EQ(e.gradients, 2 * sharded(2));
    EXPECT_DOUBLE_EQ(e.weights,
                     2 * sharded(3) + (zero == 3 ? 2 * (dense_block + expert_block) * 2 : 0));
  }
}

// GPT-shaped: a 4d GELU MLP, multi-head attention (heads x head_dim = d), LayerNorm, residual
// dropout: the shapes Korthikanti et al. (2022) count.
ModelSpec gpt_like() {
  ModelSpec m = tiny();
  m.name = "gpt-like";
  m.ffn_hidden = 1024;
  m.kv_heads = 8;
  m.head_dim = 32;
  m.vocab = 1024;  // a multiple of 128 x tp: no padding
  m.gated_mlp = false;
  m.rmsnorm = false;
  m.residual_dropout = true;
  validate(m);
  return m;
}

TEST(GeneratorMemory, ActivationsAreKorthikantisForGptShapes) {
  // Korthikanti et al. (2022) with FlashAttention (no s^2 score term), bytes per block and
  // micro-batch of s b d = 128 x 2 x 256 = 65,536 with 2-byte activations:
  //   tp=t:         s b d (10 + 24 / t)
  //   tp=t and SP:  s b d x 34 / t
  // plus FlashAttention's log-sum-exp, 4 bytes per head and token (s b x 4 a / t), and on the
  // last stage the cross-entropy's fp32 softmax, s b x vocab / t x 4 bytes.
  //   recompute:    each block keeps its input, s b d x 2 B (/ t with SP), and one block at a
  //                 time rebuilds its full set.
  const ModelSpec m = gpt_like();
  const double sbh = 128.0 * 2 * 256;
  const double sb = 128.0 * 2;
  auto block = [&](double t, bool sp) {
    return (sp ? sbh * 34 / t : sbh * (10 + 24 / t)) + sb * 4 * 8 / t;
  };
  auto logits = [&](double t) { return sb * 1024 / t * 4; };
  auto act = [&](std::string_view par, int gbs, bool recompute = false) {
    return estimate_memory(m, parse_parallelism(par), config(2, gbs, 0, recompute)).activations;
  };
  EXPECT_DOUBLE_EQ(act("dp=1", 2), 8 * block(1, false) + logits(1));
  EXPECT_DOUBLE_EQ(act("tp=2", 2), 8 * block(2, false) + logits(2));
  EXPECT_DOUBLE_EQ(act("tp=2,sp", 2), 8 * block(2, true) + logits(2));
  EXPECT_DOUBLE_EQ(act("dp=1", 2, true), 8 * sbh * 2 + logits(1) + block(1, false));
  EXPECT_DOUBLE_EQ(act("tp=2,sp", 2, true), 8 * sbh * 2 / 2 + logits(2) + block(2, true));
  // pp=4: 2 blocks per stage. The first stage holds min(pp, micro-batches) micro-batches: 8
  // micro-batches -> 4 in flight, 2 -> 2; the last (one in flight, 2 blocks and the logits)
  // holds less.
  EXPECT_DOUBLE_EQ(act("pp=4", 16), 2 * block(1, false) * 4);
  EXPECT_DOUBLE_EQ(act("pp=4", 4), 2 * block(1, false) * 2);
  // fp32 activations take twice the bytes, except the 1-byte dropout masks (2 s b d of the 10)
  // and what is fp32 already (the log-sum-exp, the softmax).
  TrainingConfig fp32 = config(2, 2);
  fp32.bytes_per_element = 4;
  fp32.precision = traces::Precision::kFp32;
  EXPECT_DOUBLE_EQ(estimate_memory(m, Parallelism{}, fp32).activations,
                   8 * (sbh * (2 * 34 - 2) + sb * 4 * 8) + logits(1));
  // Without residual dropout, each block drops its two 1-byte masks (s b d x 2).
  ModelSpec no_dropout = m;
  no_dropout.residual_dropout = false;
  EXPECT_DOUBLE_EQ(estimate_memory(no_dropout, parse_parallelism("dp=1"), config(2, 2)).activations,
                   8 * (block(1, false) - 2 * sbh) + logits(1));
}

TEST(GeneratorMemory, ActivationsFollowTheModelsShapes) {
  // tiny(): d = 256, 8 query heads and 4 key/value heads of 48, SwiGLU of 1024, RMSNorm, no
  // dropout. Per token and block, 2-byte elements, tp = t:
  //   norms 2 x (input + output) = 4 x 2 d = 2,048 (/ t with SP)
  //   Q, K, V, output 2 (2 x 384 + 2 x 192) / t = 2,304 / t; log-sum-exp 4 x 8 / t = 32 / t
  //   fc1's gate and up and the activation's output 2 x 3 x 1024 / t = 6,144 / t
  const ModelSpec m = tiny();
  const double tokens = 128.0 * 2;
  auto per_token = [&](double t, bool sp) {
    return 2048.0 / (sp ? t : 1) + (2304.0 + 32.0 + 6144.0) / t;
  };
  const double logits = tokens * 1152 * 4;  // vocab 1100 padded to 1152 (a multiple of 128)
  EXPECT_DOUBLE_EQ(estimate_memory(m, Parallelism{}, config(2, 2)).activations,
                   8 * tokens * per_token(1, false) + logits);
  EXPECT_DOUBLE_EQ(estimate_memory(m, parse_parallelism("tp=2,sp"), config(2, 2)).activations,
                   8 * tokens * per_token(2, true) + tokens * 1280 / 2 * 4);  // 1280: 128 x 2
  // A MoE block adds, per token, its top_k copies' dispatched input and expert output (2 x 2 d)
  // and each expert's gate, up and activation (2 x 3 f_e); shared experts see every token; the
  // router keeps fp32 probabilities (4 x experts). tiny_moe(): f_e = 128, one shared expert.
  const ModelSpec moe = tiny_moe();
  const double dense_attn = 2048.0 + 2304.0 + 32.0;
  const double moe_block =
      dense_attn + 2 * (2 * 2 * 256.0 + 2 * 3 * 128.0) + 2 * 3 * 128.0 + 4 * 8.0;
  const double dense_block = dense_attn + 6144.0;
  EXPECT_DOUBLE_EQ(estimate_memory(moe, Parallelism{}, config(2, 2)).activations,
                   tokens * (dense_block + 3 * moe_block) + logits);
}

TEST(GeneratorMemory, PipelineStagesHoldWhatTheirOrderKeepsInFlight) {
  struct Case {
    const char* what;
    int layers;
    const char* par;
    int gbs;  // mbs 2
    int stage;
    int units_in_flight;
    int blocks;  // held at the peak
  };
  const Case cases[] = {
      // Llama 3's balancing: 6 blocks on pp=4 run as 1, 2, 2, 1. The first stage holds 4
      // micro-batches of its one block, the second 3 of its two: the second peaks (6 blocks).
      {"short first stage", 6, "pp=4", 16, 1, 3, 6},
      // 8 blocks run as 2 per stage: the first stage peaks (4 x 2), above the last (2 and
      // logits).
      {"even stages", 8, "pp=4", 16, 0, 4, 8},
      // Interleaved: 14 blocks on pp=2 x vpp=4 virtual stages of 2 (the first and the last a
      // block short). Stage 0 runs chunks 0, 2, 4 and 6 (1, 2, 2 and 2 blocks); with 4
      // micro-batches its warm-up is (2 - 1) x 2 + (4 - 1) x 2 = 8 forward units, and the 9th
      // comes before the first backward: micro-batches 0-2 of chunk 0 and 0-1 of chunks 1-3,
      // 3 + 4 + 4 + 4 = 15 blocks.
      {"interleaved", 14, "pp=2,vpp=4", 8, 0, 9, 15},
  };
  const double block = 128.0 * 2 * 256 * 34 + 128.0 * 2 * 4 * 8;
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    ModelSpec m = gpt_like();
    m.layers = k.layers;
    const ActivationFootprint f =
        activation_footprint(m, parse_parallelism(k.par), config(2, k.gbs));
    EXPECT_EQ(f.stage, k.stage);
    EXPECT_EQ(f.units_in_flight, k.units_in_flight);
    EXPECT_DOUBLE_EQ(f.held, k.blocks * block);
  }
}

TEST(GeneratorMemory, AModelThatDoesNotFitIsAnErrorNamingTheGigabytes) {
  // Llama 3 8B on one 48 GB GPU: 16 bytes per parameter of 8.0e9 is 128 GB before activations.
  const std::string err = test::error_of(
      [] { generate_step(load_model("llama3-8b"), Parallelism{}, config(1, 1, 512), 48e9); });
  EXPECT_NE(err.find("does not fit in GPU memory"), std::string::npos) << err;
  EXPECT_NE(err.find("> 48.0 GB"), std::string::npos) << err;
}

// --- The paper's Table 2 ------------------------------------------------------------------------

struct Hardware {
  topologies::Cluster cluster;
  hardware::HardwareProfile profile;
};

Hardware hardware(const std::string& preset, int nodes) {
  topologies::Cluster c = topologies::load_cluster(preset, nodes);
  hardware::HardwareProfile p = hardware::default_profile_for_gpu(c.spec().gpu_type);
  return Hardware{std::move(c), std::move(p)};
}

// Simulates `w` on `hw` with Lagom's cost and contention models.
sim::SimResult simulate_on(const Workload& w, const Hardware& hw) {
  const traces::ExecutionGraph g = traces::analyze(w, "generated");
  const sim::ModelCost cost(hw.cluster, hw.profile, w);
  sim::ResourceContention contention(cost);
  sim::Engine engine(w, g, sim::SimOptions{&cost, &contention});
  return engine.run();
}

struct PaperRow {
  const char* model;
  const char* par;
  int mbs;
  int gbs;
  const char* cluster;
  int nodes;
  int seq;  // 0: the model's
  bool recompute;
};

// reference/lagom-paper.md §6.2 (Table 2): FSDP on 8 and 16 GPUs with gbs = 2 x GPUs; TP 8 with
// dp 1 and 2; EP 8. The paper does not give sequence lengths; models run at their default except
// where that would not fit an A40's 48 GB (said on each row). Rows alternate between cluster A
// (NVLink bridges) and cluster B (PCIe only); 16 GPUs are 2 nodes.
const PaperRow kTable2[] = {
    {"phi-2", "fsdp=8", 2, 16, "a40-nvlink", 1, 0, false},
    {"phi-2", "fsdp=16", 2, 32, "a40-pcie", 2, 0, false},
    // Llama 3 at its 8,192 tokens would keep 40.7 GB of activations (34.0 d bytes per token and
    // block x 32 blocks, and 4.2 GB of the loss's fp32 softmax over 128K tokens): with 14 GB of
    // sharded weights and optimizer it does not fit. 4,096 does.
    {"llama3-8b", "fsdp=8", 1, 16, "a40-pcie", 1, 4096, false},
    {"llama3-8b", "fsdp=16", 1, 32, "a40-nvlink", 2, 4096, false},
    {"mpt-7b", "fsdp=8", 1, 16, "a40-nvlink", 1, 0, false},
    {"mpt-7b", "fsdp=16", 1, 32, "a40-pcie", 2, 0, false},
    {"phi-2", "tp=8", 8, 512, "a40-pcie", 1, 0, false},
    {"phi-2", "tp=8,dp=2", 8, 512, "a40-nvlink", 2, 0, false},
    // Llama 3, mbs 4 at 8,192 tokens over tp=8: 11.3 d bytes per token and block (the norms'
    // 8 d whole on every rank, the rest / 8) x 32 blocks = 48 GB of activations; full
    // recomputation keeps each block's input only (8.6 GB).
    {"llama3-8b", "tp=8", 4, 256, "a40-nvlink", 1, 0, true},
    {"llama3-8b", "tp=8,dp=2", 4, 256, "a40-pcie", 2, 0, true},
    {"mpt-7b", "tp=8", 2, 256, "a40-pcie", 1, 0, false},
    {"mpt-7b", "tp=8,dp=2", 2, 256, "a40-nvlink", 2, 0, false},
    // DeepSeek-MoE 16B over ep=8 holds 3.3e9 parameters per GPU (1.9e9 of them its 8 of 64
    // routed experts per block, 1.4e9 dense): 16 bytes each is 53 GB. Megatron's distributed
    // optimizer (zero=1) shards the dense weights' 12 bytes of fp32 state over the 8 GPUs (the
    // experts have no replica at dp = 1): 38.6 GB of weights, gradients and state; full
    // recomputation keeps each block's input and one block's whole set, the experts' included
    // (5.5 GB of activations).
    {"deepseek-moe-16b", "ep=8,zero=1", 2, 16, "a40-nvlink", 1, 0, true},
    {"olmoe-1b-7b", "ep=8", 2, 16, "a40-pcie", 1, 0, false},
};

class Table2 : public ::testing::TestWithParam<PaperRow> {};

TEST_P(Table2, FitsGeneratesWithoutDeadlockAndSimulates) {
  const PaperRow& row = GetParam();
  const ModelSpec m = load_model(row.model);
  const Parallelism p = parse_parallelism(row.par);
  const Hardware hw = hardware(row.cluster, row.nodes);
  ASSERT_EQ(p.world(), hw.cluster.gpu_count());
  const double gpu_bytes = hw.profile.gpu.memory_GB.value * 1e9;
  // The paper's batch fits and divides (no pipeline: the memory does not depend on gbs).
  const TrainingConfig paper = config(row.mbs, row.gbs, row.seq, row.recompute);
  EXPECT_LE(estimate_memory(m, p, paper).total(), gpu_bytes);
  EXPECT_EQ(row.gbs % (row.mbs * p.dense_dp()), 0);
  // Without a pipeline every micro-batch repeats the same ops, so two of them exercise the
  // whole schedule (accumulation, then the last micro-batch's gradient reduction) and keep the
  // test fast; the paper's TP rows have 32 to 128.
  const int gbs = static_cast<int>(std::min<std::int64_t>(row.gbs, 2 * row.mbs * p.dense_dp()));
  const GeneratedStep s =
      generate_step(m, p, config(row.mbs, gbs, row.seq, row.recompute), gpu_bytes);
  EXPECT_EQ(s.workload.rank_count(), static_cast<std::uint32_t>(p.world()));
  const sim::SimResult r = simulate_on(s.workload, hw);  // analyze() throws on a deadlock
  EXPECT_GT(r.step_time.count_ns(), 0);
  // The step cannot beat its compute at the GPU's peak rate.
  const double peak = hw.profile.gpu.bf16_TFLOPS.value * 1e12;
  EXPECT_GT(r.step_time.us() * 1e-6, s.figures.flops / static_cast<double>(p.world()) / peak);
}

// "phi_2_fsdp_8_a40_nvlink": the row, as a test name.
std::string row_name(const ::testing::TestParamInfo<PaperRow>& row) {
  std::string n = fmt::format("{}_{}_{}", row.param.model, row.param.par, row.param.cluster);
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) {
      ch = '_';
    }
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Paper, Table2, ::testing::ValuesIn(kTable2), row_name);

// --- Pipeline schedules -------------------------------------------------------------------------

// `w` with every op's duration set by `ns_of(op)`, through the JSON format (a built Workload is
// immutable). The writer lists ranks, their streams and each stream's ops in order: OpId order.
Workload with_durations(const Workload& w, const std::function<std::int64_t(OpId)>& ns_of) {
  std::ostringstream out;
  traces::write_workload_json(w, out);
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(out.str());
  OpId op = 0;
  for (auto& rank : doc["ranks"]) {
    for (auto& stream : rank["streams"]) {
      for (auto& o : stream["ops"]) {
        EXPECT_EQ(o["kind"].get<std::string>(), traces::to_string(w.kind(op)));
        o["duration_us"] = static_cast<double>(ns_of(op)) / 1000.0;
        ++op;
      }
    }
  }
  EXPECT_EQ(op, w.op_count());
  return traces::parse_workload_json(doc.dump(), "with durations");
}

// Compute kernels take 1 ns per MFLOP (rounded up) and communication nothing: the step is then
// the schedule alone, and stages with the same layers do the same work.
std::int64_t by_flops(const Workload& w, OpId op) {
  const traces::ComputeShape* s = w.compute_shape(op);
  return s != nullptr ? static_cast<std::int64_t>(std::ceil(s->flops / 1e6)) : 0;
}

// The largest sum of compute durations over the ranks: a stage's work without any bubble.
std::int64_t busiest_stage_ns(const Workload& w) {
  std::vector<std::int64_t> per_rank(w.rank_count(), 0);
  for (OpId op = 0; op < w.op_count(); ++op) {
    if (w.kind(op) == OpKind::kCompute) {
      per_rank[w.rank_of(op)] += w.duration_ns(op);
    }
  }
  return *std::max_element(per_rank.begin(), per_rank.end());
}

TEST(GeneratorPipeline, OneFOneBAndInterleavedHaveTheExpectedBubble) {
  // With M micro-batches over P stages, each stage doing t_f + t_b per micro-batch and transfers
  // taking no time, 1F1B takes (M + P - 1)(t_f + t_b) = (M + P - 1)/M of a stage's work; the
  // interleaved schedule with v chunks per GPU shrinks the bubble v-fold: (M + (P - 1)/v)/M
  // (Narayanan et al., SC'21). The tiny model with a 128-word vocabulary (so the head on the last
  // stage and the embedding on the first add < 1% to their stage), 8 blocks on P = 4 stages,
  // M = 8. Loose bounds: within 5% of each (optimizer and head kernels, rounding).
  ModelSpec m = tiny();
  m.vocab = 128;
  const double M = 8;
  const double P = 4;
  std::int64_t plain_ns = 0;
  for (const int vpp : {1, 2}) {
    SCOPED_TRACE(vpp);
    Parallelism p;
    p.pp = 4;
    p.vpp = vpp;
    const GeneratedStep s = generate_step(m, p, config(1, static_cast<int>(M)));
    const Workload w =
        with_durations(s.workload, [&](OpId op) { return by_flops(s.workload, op); });
    const test::Simulated sim = test::simulate(Workload(w));  // analyze(): no deadlock
    const double work = static_cast<double>(busiest_stage_ns(w));
    const double step = static_cast<double>(sim.r.step_time.count_ns());
    const double expected = (M + (P - 1) / vpp) / M * work;
    EXPECT_GT(step, 0.95 * expected);
    EXPECT_LT(step, 1.05 * expected);
    if (vpp == 1) {
      plain_ns = sim.r.step_time.count_ns();
    } else {
      EXPECT_LT(sim.r.step_time.count_ns(), plain_ns);
    }
  }
}

// A generated step's layout and batch, for tests that walk many of them.
struct LayoutCase {
  LayoutCase(int l, const char* p, int m, int g, Overlap o = Overlap::kNone, bool r = false,
             bool f = false)
      : layers(l), par(p), mbs(m), gbs(g), overlap(o), recompute(r), fold(f) {}
  int layers;
  const char* par;
  int mbs, gbs;
  Overlap overlap;
  bool recompute, fold;
  TrainingConfig training() const {
    TrainingConfig cfg = config(mbs, gbs, 0, recompute);
    cfg.overlap = overlap;
    cfg.fold_dp = fold;
    return cfg;
  }
};

// 1F1B with fewer micro-batches than stages, interleaving with several rounds, Llama 3's short
// first and last stages (10 blocks on 4 stages: 2, 3, 3, 2) and everything combined with overlap.
std::vector<LayoutCase> pipeline_layouts() {
  return {{8, "pp=4", 1, 2},
          {8, "pp=2,vpp=2", 1, 6},
          {8, "pp=4,vpp=2", 1, 8},
          {10, "pp=4", 1, 5},
          {10, "pp=2,vpp=2", 1, 4},
          {14, "pp=4,vpp=2", 1, 8},
          {8, "tp=2,sp,pp=2,vpp=2,dp=2,zero=1", 2, 16, Overlap::kDomino},
          {8, "tp=2,sp,cp=2,pp=2,dp=2,zero=1", 1, 8},
          {8, "tp=2,pp=4,fsdp=2", 2, 16, Overlap::kDomino}};
}

TEST(GeneratorPipeline, InterleavedStagesMayBeALayerShortAtEitherEnd) {
  // Llama 3's balancing with interleaving (405B: 126 layers as 32 chunks of 4 less two): 14
  // blocks on pp=4 x vpp=2 = 8 chunks of 2, the first and the last a block short. Rank r runs
  // chunks r and r + 4: rank 0 blocks 0 and 7-8, rank 1 1-2 and 9-10, rank 2 3-4 and 11-12,
  // rank 3 5-6 and 13.
  ModelSpec m = tiny();
  m.layers = 14;
  const GeneratedStep s = generate(m, "pp=4,vpp=2", config(1, 8));
  const std::vector<std::set<int>> want = {{0, 7, 8}, {1, 2, 9, 10}, {3, 4, 11, 12}, {5, 6, 13}};
  std::vector<std::set<int>> got(4);
  for (OpId op = 0; op < s.workload.op_count(); ++op) {
    const std::string name = s.workload.name(op);
    const std::size_t at = name.find("/L");
    if (at != std::string::npos) {
      got[s.workload.rank_of(op)].insert(std::stoi(name.substr(at + 2)));
    }
  }
  EXPECT_EQ(got, want);
  // More than two short chunks is not Llama 3's balancing: 13 blocks on 8 chunks is refused.
  m.layers = 13;
  EXPECT_THROW(generate(m, "pp=4,vpp=2", config(1, 8)), Error);
}

TEST(GeneratorPipeline, SchedulesAreDeadlockFreeAcrossLayouts) {
  // analyze() proves every send meets its recv and no cycle of waits exists.
  ModelSpec m = tiny();
  for (const LayoutCase& c : pipeline_layouts()) {
    SCOPED_TRACE(c.par);
    m.layers = c.layers;
    const GeneratedStep s = generate(m, c.par, c.training());
    EXPECT_NO_THROW(traces::analyze(s.workload, "generated"));
  }
  ModelSpec moe = tiny_moe();
  TrainingConfig two = config(2, 16);
  two.overlap = Overlap::kTwoBatch;
  EXPECT_NO_THROW(traces::analyze(generate(moe, "ep=2,pp=2,dp=2", two).workload, "generated"));
}

// --- Counting a step before generating it -------------------------------------------------------

TEST(GeneratorCount, CountStepOpsIsExactAcrossLayouts) {
  // count_step_ops emits one rank per stage at one and two micro-batches and extrapolates; the
  // count must equal the generated workload's exactly (the CLI refuses absurd steps with it).
  ModelSpec m = tiny();
  std::vector<LayoutCase> cases = pipeline_layouts();
  for (const LayoutCase& c :
       {LayoutCase{8, "dp=2", 1, 2}, LayoutCase{8, "dp=2", 1, 14},
        LayoutCase{8, "fsdp=4", 2, 24, Overlap::kNone, true},
        LayoutCase{8, "tp=2,dp=2,zero=2", 1, 10}, LayoutCase{8, "pp=4", 1, 9},
        LayoutCase{8, "pp=4,vpp=2", 1, 12, Overlap::kNone, true},
        LayoutCase{10, "pp=4,dp=2", 1, 14, Overlap::kNone, false, true},
        LayoutCase{8, "tp=2,pp=4,fsdp=2", 2, 16, Overlap::kDomino, false, true}}) {
    cases.push_back(c);
  }
  for (const LayoutCase& c : cases) {
    SCOPED_TRACE(fmt::format("{} gbs {}", c.par, c.gbs));
    m.layers = c.layers;
    const Parallelism par = parse_parallelism(c.par);
    const StepSize size = count_step_ops(m, par, c.training());
    const GeneratedStep s = generate_step(m, par, c.training());
    EXPECT_EQ(size.ranks, s.workload.rank_count());
    EXPECT_EQ(size.ops, static_cast<double>(s.workload.op_count()));
  }
  ModelSpec moe = tiny_moe();
  TrainingConfig two = config(2, 24);
  two.overlap = Overlap::kTwoBatch;
  const Parallelism par = parse_parallelism("ep=2,pp=2,dp=2");
  EXPECT_EQ(count_step_ops(moe, par, two).ops,
            static_cast<double>(generate_step(moe, par, two).workload.op_count()));
  // FP8's quantization kernels, with recomputation, Domino and experts.
  TrainingConfig q = fp8(config(2, 16, 0, true));
  q.overlap = Overlap::kDomino;
  m.layers = 8;
  const Parallelism tp = parse_parallelism("tp=2,sp,pp=2,dp=2");
  EXPECT_EQ(count_step_ops(m, tp, q).ops,
            static_cast<double>(generate_step(m, tp, q).workload.op_count()));
  const Parallelism ep = parse_parallelism("tp=2,sp,ep=2,pp=2");
  const TrainingConfig qe = fp8(config(2, 8, 0, true));
  EXPECT_EQ(count_step_ops(moe, ep, qe).ops,
            static_cast<double>(generate_step(moe, ep, qe).workload.op_count()));
}

// Generated ops are named by what they are: layer, kernel or communication, pass and
// micro-batch ("r0/L3.attn.qkv.fwd.mb1"), unique on every layout the generator makes, so that
// traces read and Chakra / JSON exports (which carry the names as ids) read back.
TEST(GeneratorNames, EveryOpHasAUniqueReadableName) {
  ModelSpec m = tiny();
  std::vector<LayoutCase> cases = pipeline_layouts();
  for (const LayoutCase& c :
       {LayoutCase{8, "dp=2", 1, 14}, LayoutCase{8, "fsdp=4", 2, 24, Overlap::kNone, true},
        LayoutCase{8, "tp=2,dp=2,zero=2", 1, 10},
        LayoutCase{8, "pp=4,vpp=2", 1, 12, Overlap::kNone, true},
        LayoutCase{10, "pp=4,dp=2", 1, 14, Overlap::kNone, false, true},
        LayoutCase{8, "tp=2,sp,pp=4,fsdp=2", 2, 16, Overlap::kDomino, false, true}}) {
    cases.push_back(c);
  }
  auto check = [](const Workload& w) {
    std::set<std::string> names;
    for (OpId op = 0; op < w.op_count(); ++op) {
      const std::string n = w.name(op);
      EXPECT_FALSE(w.label(op).empty()) << n;
      EXPECT_TRUE(names.insert(n).second) << "duplicate " << n;
    }
  };
  for (const LayoutCase& c : cases) {
    SCOPED_TRACE(fmt::format("{} gbs {}", c.par, c.gbs));
    m.layers = c.layers;
    check(generate_step(m, parse_parallelism(c.par), c.training()).workload);
  }
  TrainingConfig two = config(2, 24);
  two.overlap = Overlap::kTwoBatch;
  check(generate_step(tiny_moe(), parse_parallelism("ep=2,pp=2,dp=2"), two).workload);
  // FP8 adds quantizations ("L0.attn.proj.cast", "L0.mlp.fc2.gradcast"), recomputed too.
  TrainingConfig q = fp8(config(2, 8, 0, true));
  q.overlap = Overlap::kDomino;
  check(generate_step(tiny_moe(), parse_parallelism("tp=2,sp,ep=2,pp=2"), q).workload);
  {
    const Workload f =
        generate_step(tiny(), parse_parallelism("tp=2,sp"), fp8(config(1, 1))).workload;
    EXPECT_TRUE(f.find_op("r0/L0.attn.proj.cast.fwd.mb0").has_value());
    EXPECT_TRUE(f.find_op("r1/L3.mlp.fc2.gradcast.mb0").has_value());
  }
  // What the names say, on one rank of tp=2 with sequence parallelism, DDP and two micro-batches.
  m.layers = 2;
  const Workload w = generate_step(m, parse_parallelism("tp=2,sp,dp=2"), config(1, 4)).workload;
  std::vector<std::string> first;
  for (OpId op = 0; op < 12; ++op) {
    first.push_back(w.name(op));
  }
  EXPECT_EQ(first, (std::vector<std::string>{
                       "r0/embed.fwd.mb0", "r0/L0.residual.fwd.mb0", "r0/L0.attn.norm.fwd.mb0",
                       "r0/L0.attn.sp.allgather.fwd.mb0", "r0/L0.attn.qkv.fwd.mb0",
                       "r0/L0.attn.core.fwd.mb0", "r0/L0.attn.proj.fwd.mb0",
                       "r0/L0.attn.tp.reducescatter.fwd.mb0", "r0/L0.mlp.norm.fwd.mb0",
                       "r0/L0.mlp.sp.allgather.fwd.mb0", "r0/L0.mlp.fc1.fwd.mb0",
                       "r0/L0.mlp.act.fwd.mb0"}));
  EXPECT_TRUE(w.find_op("r1/L1.attn.qkv.wgrad.mb1").has_value());
  EXPECT_TRUE(w.find_op("r3/L0.dp.allreduce.mb1").has_value());
  EXPECT_TRUE(w.find_op("r2/optimizer.step").has_value());
}

TEST(GeneratorCount, AnAbsurdStepIsCountedWithoutBeingGenerated) {
  // 10^9 sequences: counted from a few ranks' ops, with the generator's own checks first.
  const ModelSpec m = tiny();
  const StepSize size = count_step_ops(m, parse_parallelism("pp=4,dp=2"), config(1, 1000000000));
  EXPECT_EQ(size.ranks, 8u);
  EXPECT_GT(size.ops, 1e11);
  EXPECT_THROW(count_step_ops(m, parse_parallelism("dp=2"), config(1, 3)), Error);
}

// --- Folding ------------------------------------------------------------------------------------

TEST(GeneratorFold, FoldedStepHasWorldOverDpRanksAndTheSameStepTime) {
  // tp=2, pp=2, dp=4 on 16 H100s (two DGX nodes): the 4 data-parallel replicas run the same
  // program at the same communicator positions on hardware that looks the same from each (every
  // GPU has its own NIC at the same distance), so simulating replica 0 (4 ranks whose
  // data-parallel communicators still span 4 GPUs each) gives the same step, and the folded
  // figures are one replica's: x dp for the whole step.
  const ModelSpec m = tiny();
  const Parallelism p = parse_parallelism("tp=2,pp=2,dp=4");
  const Hardware hw = hardware("dgx-h100", 2);
  TrainingConfig c = config(2, 2 * 4 * 4);
  const GeneratedStep full = generate_step(m, p, c);
  c.fold_dp = true;
  const GeneratedStep folded = generate_step(m, p, c);
  EXPECT_EQ(full.workload.rank_count(), 16u);
  EXPECT_EQ(folded.workload.rank_count(), 4u);
  EXPECT_EQ(folded.folded_replicas, 4);
  EXPECT_EQ(full.folded_replicas, 1);
  expect_rel(4 * folded.figures.flops, full.figures.flops, 1e-12, "flops");
  for (int k = 0; k < traces::kOpKindCount; ++k) {
    EXPECT_EQ(4 * folded.figures.comm_bytes[static_cast<std::size_t>(k)],
              full.figures.comm_bytes[static_cast<std::size_t>(k)]);
  }
  const sim::SimResult a = simulate_on(full.workload, hw);
  const sim::SimResult b = simulate_on(folded.workload, hw);
  EXPECT_EQ(a.step_time, b.step_time);
  // Every data-parallel communicator of the folded step spans 4 GPUs of the cluster.
  for (const traces::Group& g : folded.workload.groups()) {
    if (g.name.starts_with("dp")) {
      EXPECT_EQ(g.ranks.size(), 1u) << g.name;
      EXPECT_EQ(g.cluster_gpus().size(), 4u) << g.name;
    }
  }
}

TEST(GeneratorFold, UnevenInterleavedStagesFoldToTheSameStepTime) {
  // Llama 3's layout in small: 10 blocks as pp=2 x vpp=2 chunks of 3, 2 short (2, 3, 3, 2),
  // tp=2, dp=4 on two DGX H100 nodes.
  ModelSpec m = tiny();
  m.layers = 10;
  const Parallelism p = parse_parallelism("tp=2,pp=2,vpp=2,dp=4");
  const Hardware hw = hardware("dgx-h100", 2);
  TrainingConfig c = config(1, 4 * 4);
  const GeneratedStep full = generate_step(m, p, c);
  c.fold_dp = true;
  const GeneratedStep folded = generate_step(m, p, c);
  EXPECT_EQ(simulate_on(full.workload, hw).step_time, simulate_on(folded.workload, hw).step_time);
}

TEST(GeneratorFold, ContextParallelStepsFoldToTheSameStepTime) {
  const ModelSpec m = tiny();
  const Parallelism p = parse_parallelism("tp=2,cp=2,pp=2,dp=2");
  const Hardware hw = hardware("dgx-h100", 2);
  TrainingConfig c = config(1, 4);
  const GeneratedStep full = generate_step(m, p, c);
  c.fold_dp = true;
  const GeneratedStep folded = generate_step(m, p, c);
  EXPECT_EQ(folded.workload.rank_count(), 8u);
  EXPECT_EQ(simulate_on(full.workload, hw).step_time, simulate_on(folded.workload, hw).step_time);
}

// The replicas' pipeline sends and tensor-parallel all-reduces are mirrors of replica 0's: on
// cluster A (a NIC per socket, its 4 GPUs alike) they split the NICs as the unfolded step's do,
// to the nanosecond. On cluster B the one NIC sits on the PCIe switch of GPUs 0 and 1 (replica
// 0's), and the other replicas reach it through the CPU, where they may be held back while
// replica 0 is not; the folded step runs every replica at replica 0's pace. Close there, not
// exact (topologies::gpus_differ).
TEST(GeneratorFold, FoldingIsExactWhereGpusAreAlikeAndCloseWhereNot) {
  const ModelSpec m = tiny();
  const Parallelism p = parse_parallelism("tp=2,pp=2,dp=4");
  TrainingConfig c = config(2, 2 * 4 * 4);
  const GeneratedStep full = generate_step(m, p, c);
  c.fold_dp = true;
  const GeneratedStep folded = generate_step(m, p, c);
  std::size_t mirrored = 0;
  for (const traces::Group& g : folded.workload.groups()) {
    mirrored += g.mirrors.empty() ? 0 : 1;
    if (g.name.starts_with("pp") || g.name.starts_with("tp")) {
      EXPECT_EQ(g.mirrors.size(), 3u) << g.name;  // the other 3 replicas' instances
    }
  }
  EXPECT_GT(mirrored, 0u);
  const Hardware a = hardware("a40-nvlink", 2);
  EXPECT_EQ(topologies::gpus_differ(a.cluster), "");
  EXPECT_EQ(simulate_on(full.workload, a).step_time, simulate_on(folded.workload, a).step_time);
  const Hardware b = hardware("a40-pcie", 2);
  EXPECT_NE(topologies::gpus_differ(b.cluster), "");
  const double unfolded_us = simulate_on(full.workload, b).step_time.us();
  // 0.6% slow here: the folded sends split the NIC evenly, where unfolded the replicas that
  // also cross the CPU leave replica 0 more of it (this tiny step's sends are a large share).
  EXPECT_NEAR(simulate_on(folded.workload, b).step_time.us(), unfolded_us, 1e-2 * unfolded_us);
}

TEST(GeneratorFold, FoldedExpertParallelStepHasTheSameStepTime) {
  // ep=2, dp=2 with ZeRO-1 on 4 A40s: folding keeps replica 0's 2 ranks; their dense
  // data-parallel communicator spans all 4 GPUs (dp x ep) while holding 2 ranks, the experts'
  // (edp) spans the 2 replicas while holding 1.
  const ModelSpec m = tiny_moe();
  const Parallelism p = parse_parallelism("ep=2,dp=2,zero=1");
  const Hardware hw = hardware("a40-nvlink", 1);
  TrainingConfig c = config(2, 2 * 4 * 2);
  const GeneratedStep full = generate_step(m, p, c);
  c.fold_dp = true;
  const GeneratedStep folded = generate_step(m, p, c);
  EXPECT_EQ(folded.workload.rank_count(), 2u);
  for (const traces::Group& g : folded.workload.groups()) {
    const bool dense = g.name.starts_with("dp");
    if (dense || g.name.starts_with("edp")) {
      EXPECT_EQ(g.ranks.size(), dense ? 2u : 1u) << g.name;
      EXPECT_EQ(g.cluster_gpus().size(), dense ? 4u : 2u) << g.name;
    }
  }
  EXPECT_EQ(simulate_on(full.workload, hw).step_time, simulate_on(folded.workload, hw).step_time);
}

// Tensor-parallel ranks fold where they are the step's only parallelism (tp_folds_exactly):
// one rank stands for all, each collective is still one instance sized and routed by every GPU
// of the communicator, and the ranks left out would run the same kernels beside it. Exact on
// hosts whose GPUs sit differently (the A40 pairs on NVLink bridges, PCIe switches, one NIC per
// node), on one node and across two, with and without Domino and sequence parallelism.
TEST(GeneratorFold, TensorParallelRanksFoldToTheSameStepTime) {
  const ModelSpec m = tiny();
  struct Case {
    const char* cluster;
    int nodes;
    const char* par;
    Overlap overlap;
    bool recompute;
  };
  for (const Case& k : {Case{"a40-nvlink", 1, "tp=8", Overlap::kDomino, false},
                        Case{"a40-pcie", 1, "tp=4,sp", Overlap::kNone, true},
                        Case{"dgx-h100", 1, "tp=8,sp", Overlap::kDomino, false},
                        Case{"a40-nvlink", 2, "tp=16", Overlap::kNone, false}}) {
    SCOPED_TRACE(fmt::format("{} on {} x{}", k.par, k.cluster, k.nodes));
    const Parallelism p = parse_parallelism(k.par);
    ModelSpec mm = m;
    mm.heads = 16;
    mm.kv_heads = 16;
    const Hardware hw = hardware(k.cluster, k.nodes);
    TrainingConfig c = config(2, 4, 512, k.recompute);
    c.overlap = k.overlap;
    ASSERT_TRUE(tp_folds_exactly(p, c));
    const GeneratedStep full = generate_step(mm, p, c);
    c.fold_tp = true;
    const GeneratedStep folded = generate_step(mm, p, c);
    EXPECT_EQ(folded.workload.rank_count(), 1u);
    EXPECT_EQ(folded.folded_replicas, p.tp);
    expect_rel(p.tp * folded.figures.flops, full.figures.flops, 1e-12, "flops");
    for (int kind = 0; kind < traces::kOpKindCount; ++kind) {
      EXPECT_EQ(p.tp * folded.figures.comm_bytes[static_cast<std::size_t>(kind)],
                full.figures.comm_bytes[static_cast<std::size_t>(kind)]);
    }
    for (const traces::Group& g : folded.workload.groups()) {
      EXPECT_EQ(g.ranks.size(), 1u) << g.name;
      EXPECT_EQ(g.cluster_gpus().size(), static_cast<std::size_t>(p.tp)) << g.name;
    }
    EXPECT_EQ(simulate_on(full.workload, hw).step_time, simulate_on(folded.workload, hw).step_time);
  }
}

// Beside other parallelism, tensor-parallel rank 0 stands for the others when data-parallel
// replicas fold too, every GPU sees the node alike and the tensor-parallel groups fill whole
// nodes: each of rank 0's data-parallel, pipeline and expert communicators lists the instances
// of the ranks left out as mirrors, whose traffic loads the links they cross (a socket's NIC).
// The step time is then the same to the nanosecond: cluster A (a NIC per socket, shared by its 4
// GPUs) and DGX H100 (a NIC per GPU), with pipelines, sequence parallelism and experts. Cluster
// B's one NIC sits behind GPUs 0 and 1, so its GPUs differ and tensor-parallel ranks fold there
// only when they are the only parallelism.
TEST(GeneratorFold, TensorParallelRanksFoldBesideOtherParallelismThroughMirrors) {
  struct Case {
    const char* cluster;
    int nodes;
    const char* par;
    int gbs;
  };
  for (const Case& k :
       {Case{"a40-nvlink", 2, "tp=8,dp=2", 8}, Case{"a40-nvlink", 4, "tp=8,pp=2,dp=2", 8},
        Case{"dgx-h100", 2, "tp=8,sp,pp=2", 8}, Case{"dgx-h100", 4, "tp=8,sp,pp=2,dp=2", 8},
        Case{"dgx-h100", 2, "tp=8,ep=2", 8}}) {
    SCOPED_TRACE(fmt::format("{} on {} x{}", k.par, k.cluster, k.nodes));
    const Parallelism p = parse_parallelism(k.par);
    ModelSpec mm = p.ep > 1 ? tiny_moe() : tiny();
    mm.heads = 16;
    mm.kv_heads = 16;
    const Hardware hw = hardware(k.cluster, k.nodes);
    TrainingConfig c = config(1, k.gbs, 512);
    const GeneratedStep full = generate_step(mm, p, c);
    c.fold_dp = true;
    c.fold_tp = true;
    EXPECT_FALSE(tp_folds_exactly(p, c));  // not without knowing the GPUs are alike
    ASSERT_EQ(topologies::gpus_differ(hw.cluster), "");
    c.gpus_alike = true;
    c.gpus_per_node = hw.cluster.gpus_per_node();
    ASSERT_TRUE(tp_folds_exactly(p, c));
    const GeneratedStep folded = generate_step(mm, p, c);
    const int fold = p.tp * p.dp;
    EXPECT_EQ(folded.workload.rank_count(), full.workload.rank_count() / fold);
    EXPECT_EQ(folded.folded_replicas, fold);
    expect_rel(fold * folded.figures.flops, full.figures.flops, 1e-12, "flops");
    std::size_t instances = 0;
    for (const traces::Group& g : folded.workload.groups()) {
      instances += 1 + g.mirrors.size();
      for (const std::vector<std::uint32_t>& mirror : g.mirrors) {
        EXPECT_EQ(mirror.size(), g.cluster_gpus().size()) << g.name;
      }
    }
    // Every communicator of the full step is one of the folded step's instances.
    EXPECT_EQ(instances, full.workload.groups().size() +
                             (p.pp > 1 ? static_cast<std::size_t>(full.workload.rank_count()) : 0));
    EXPECT_EQ(simulate_on(full.workload, hw).step_time, simulate_on(folded.workload, hw).step_time);
  }
}

TEST(GeneratorFold, TensorParallelRanksFoldOnlyWhereNothingElseWouldGoMissing) {
  // With another communicator the ranks left out would each run their own copy of its traffic
  // (a data-parallel all-reduce, a pipeline send) beside the one kept, on links they may share:
  // fold_tp folds such steps only with fold_dp, which the searches clear where the replicas'
  // traffic would not be alike (an oversubscribed fabric, a slow part, a placement).
  const ModelSpec m = tiny();
  TrainingConfig c = config(1, 4);
  c.fold_tp = true;
  for (const char* par : {"tp=2,dp=2", "tp=2,pp=2", "tp=2,cp=2", "tp=1,dp=4"}) {
    const Parallelism p = parse_parallelism(par);
    EXPECT_FALSE(tp_folds_exactly(p, c)) << par;
    EXPECT_EQ(generate_step(m, p, c).workload.rank_count(), 4u) << par;
  }
  // A placement can set tensor-parallel ranks on GPUs that differ (around a down node).
  TrainingConfig placed = c;
  placed.placement = {3, 2, 1, 0};
  EXPECT_FALSE(tp_folds_exactly(parse_parallelism("tp=4"), placed));
  EXPECT_EQ(generate_step(m, parse_parallelism("tp=4"), placed).workload.rank_count(), 4u);
  // Tensor-parallel groups smaller than a node do not fold beside other parallelism, alike GPUs
  // or not: their ranks' data-parallel instances can hold different places in a tree's chain.
  c.fold_dp = true;
  c.gpus_alike = true;
  c.gpus_per_node = 8;
  EXPECT_FALSE(tp_folds_exactly(parse_parallelism("tp=2,dp=4"), c));
  EXPECT_TRUE(tp_folds_exactly(parse_parallelism("tp=8,dp=4"), c));
  EXPECT_TRUE(tp_folds_exactly(parse_parallelism("tp=16,pp=2"), c));
  c.gpus_alike = false;
  EXPECT_FALSE(tp_folds_exactly(parse_parallelism("tp=8,dp=4"), c));
  c.fold_dp = false;
  c.gpus_alike = true;
  EXPECT_FALSE(tp_folds_exactly(parse_parallelism("tp=8,dp=4"), c));  // replicas not folded
  // Cluster B's GPUs differ: GPUs 0 and 1 share a PCIe switch with the NIC, the others reach it
  // through the CPU.
  EXPECT_NE(topologies::gpus_differ(hardware("a40-pcie", 2).cluster).find("local GPUs 0 and 2"),
            std::string::npos);
  // On one node nothing crosses the NIC, and each GPU has one switch peer: alike.
  EXPECT_EQ(topologies::gpus_differ(hardware("a40-pcie", 1).cluster), "");
  // Folding data-parallel replicas and tensor-parallel ranks of a tp-only step: one rank.
  c.fold_dp = true;
  EXPECT_EQ(generate_step(m, parse_parallelism("tp=4"), c).workload.rank_count(), 1u);
}

// --- Chakra -------------------------------------------------------------------------------------

TEST(GeneratorChakra, RoundTripOfAGeneratedStepSimulatesIdentically) {
  // Chakra carries durations in whole microseconds. Time every op of a generated Phi-2 step
  // (tp=2, pp=2, dp=2 on a DGX H100) once with Lagom's cost model, alone, round to whole
  // microseconds and fix those durations in the workload; then the step written as Chakra and
  // read back must replay identically without any cost model: same step time, same fingerprint
  // of the event stream. (One micro-batch keeps it fast; the pipeline still sends both ways.)
  const ModelSpec m = load_model("phi-2");
  const GeneratedStep s = generate(m, "tp=2,pp=2,dp=2", config(1, 2, 512));
  const Hardware hw = hardware("dgx-h100", 1);
  const sim::ModelCost cost(hw.cluster, hw.profile, s.workload);
  const Workload w = with_durations(s.workload, [&](OpId op) {
    return 1000 * static_cast<std::int64_t>(std::llround(cost.alone_us(op)));
  });
  test::TempDir tmp;
  const std::string prefix = (tmp.path() / "phi2").string();
  traces::write_chakra(w, prefix);
  const Workload back = traces::read_chakra(prefix, traces::chakra_comm_groups_path(prefix));
  EXPECT_EQ(back.op_count(), w.op_count());
  // Everything else survives too: ops, dependencies, communicators, compute shapes.
  std::ostringstream before;
  std::ostringstream after;
  traces::write_workload_json(w, before);
  traces::write_workload_json(back, after);
  EXPECT_EQ(after.str(), before.str());
  const test::Simulated a = test::simulate(Workload(w));
  const test::Simulated b = test::simulate(Workload(back));
  EXPECT_GT(a.r.step_time.count_ns(), 0);
  EXPECT_EQ(a.r.step_time, b.r.step_time);
  EXPECT_EQ(a.r.fingerprint, b.r.fingerprint);
}

// --- Bad input ----------------------------------------------------------------------------------

TEST(GeneratorErrors, EachRuleIsNamed) {
  const ModelSpec m = tiny();
  const ModelSpec moe = tiny_moe();
  auto err = [](const ModelSpec& model, std::string_view par, TrainingConfig c) {
    return test::error_of([&] { generate_step(model, parse_parallelism(par), c); });
  };
  auto has = [](const std::string& e, std::string_view what) {
    EXPECT_NE(e.find(what), std::string::npos) << "expected '" << what << "' in: " << e;
  };
  has(err(m, "tp=16", config(1, 1)), "tp=16 does not divide the 8 attention heads");
  has(err(m, "tp=3", config(1, 1)), "tp=3 does not divide the 8 attention heads");
  // 8 blocks on 3 stages (2, 3, 3) is Llama 3's balancing, allowed; on 6 it leaves 4 short.
  EXPECT_NO_THROW(generate_step(m, parse_parallelism("pp=3"), config(1, 3)));
  has(err(m, "pp=6", config(1, 6)), "pp=6 x vpp=1 = 6 stages do not divide the 8 layers");
  has(err(m, "pp=2,vpp=3", config(1, 2)), "stages do not divide the 8 layers");
  has(err(m, "ep=2", config(1, 2)), "ep=2 needs a mixture-of-experts model; tiny is dense");
  has(err(moe, "ep=16", config(1, 16)), "ep=16 does not divide the 8 experts");
  has(err(m, "dp=4", config(2, 12)),
      "--gbs 12 is not a multiple of --mbs 2 x data-parallel degree 4 = 8");
  has(err(m, "pp=4,vpp=2", config(1, 6)), "micro-batches to be a multiple of pp=4");
  has(err(m, "sp,dp=2", config(1, 2)), "sp (sequence parallelism) needs tp > 1");
  has(err(m, "vpp=2", config(1, 2)), "needs pp > 1");
  TrainingConfig domino = config(2, 2);
  domino.overlap = Overlap::kDomino;
  has(err(m, "dp=1", domino), "Domino overlap splits TP communication: it needs tp > 1");
  TrainingConfig two = config(2, 2);
  two.overlap = Overlap::kTwoBatch;
  has(err(m, "tp=2", two), "two-batch overlap hides expert all-to-alls");
  TrainingConfig odd = config(1, 1);
  odd.overlap = Overlap::kDomino;
  has(err(m, "tp=2", odd), "--mbs 1 is odd");
  has(err(m, "dp=1", config(0, 1)), "--mbs must be at least 1");
  has(err(m, "dp=1", config(1, 0)), "--gbs must be at least 1");
  has(test::error_of([] { parse_parallelism("tp=2,foo=3"); }), "unknown key 'foo'");
  has(test::error_of([] { parse_parallelism("tp=0"); }),
      "--parallel 'tp=0': tp: expected an integer from 1 to 1048576, got '0'");
  has(test::error_of([] { parse_parallelism("tp=2x"); }), "got '2x'");
  has(test::error_of([] { parse_parallelism("tp=8,tp=4"); }),
      "--parallel 'tp=8,tp=4': tp is set twice");
  has(test::error_of([] { parse_parallelism("fsdp=8,zero=1"); }),
      "zero is set twice (fsdp=N sets dp=N and zero=3)");
  has(test::error_of([] { parse_parallelism("foo=1,foo=2"); }), "unknown key 'foo'");
  has(test::error_of([] { parse_parallelism("sp,sp,tp=2"); }), "sp is set twice");
  const std::string tp_twice = test::error_of([] { parse_parallelism("fsdp=8,tp=2,tp=4"); });
  has(tp_twice, "tp is set twice");
  EXPECT_EQ(tp_twice.find("fsdp=N sets"), std::string::npos) << tp_twice;
  has(test::error_of([] { parse_parallelism("zero=4"); }), "zero is 0, 1, 2 or 3");
  has(test::error_of([] { parse_parallelism("tp"); }), "is not key=value");
  has(test::error_of([] { parse_parallelism(""); }), "--parallel is empty");
}

}  // namespace
}  // namespace lagom::models
