// Step generators (see generator.hpp and docs/models.md §8).
#include "lagom/models/generator.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lagom/common/error.hpp"
#include "lagom/common/interrupt.hpp"
#include "lagom/common/numbers.hpp"
#include "lagom/models/kernels.hpp"
#include "lagom/models/pipeline.hpp"
#include "layout.hpp"

namespace lagom::models {

using traces::ComputeClass;
using traces::ComputeShape;
using traces::GroupId;
using traces::OpId;
using traces::OpKind;
using traces::OpSpec;
using traces::Rank;
using traces::StreamId;

namespace {

// Megatron pads the vocabulary to a multiple of 128 x tp (--make-vocab-size-divisible-by 128) so
// that every tensor-parallel shard of the embedding and the output layer is equal.
double padded_vocab(const ModelSpec& m, const Parallelism& p) {
  const double unit = 128.0 * p.tp;
  return std::ceil(m.vocab / unit) * unit;
}

// The final norm's weights: RMSNorm has a scale, LayerNorm a scale and a shift.
double final_norm_params(const ModelSpec& m) {
  return m.rmsnorm ? m.hidden : 2.0 * m.hidden;
}

// Whether the memory estimate holds Transformer Engine's cached FP8 weights and transposes:
// under FP8 unless the weights are FP8 themselves (--fp8-param-gather) or FSDP gathers them per
// layer.
bool fp8_weight_copies(const Parallelism& p, const TrainingConfig& c) {
  return c.precision == traces::Precision::kFp8 && !c.fp8_param_gather && p.zero < 3;
}

// --- Blocks ------------------------------------------------------------------------------------

// A communication that follows a block of kernels and that the next block waits for.
struct Comm {
  OpKind kind = OpKind::kAllReduce;
  GroupId group = traces::kNoGroup;
  double bytes = 0;
  const char* name = "";  // for op labels ("attn.tp"); the kind follows ("attn.tp.allreduce")
  // A sequence-parallel all-gather or reduce-scatter of a Transformer Engine linear layer: when
  // it runs as an all-gather (the input's in forward, the output gradient's in backward) under
  // FP8 it carries FP8 (TE quantizes before it gathers); as a reduce-scatter it stays 16-bit.
  bool te_linear = false;
  // What its backward is (backward_blocks): kPlain mirrors it before the block's backward (an
  // all-gather becomes a reduce-scatter, an all-to-all stays); kSpGather's backward is the next
  // block's Block::bwd_input; kTpReduce's is an all-gather of the output gradient before the
  // block's backward with SP, and nothing without (Megatron's g: identity backward).
  enum class Role : std::uint8_t { kPlain, kSpGather, kTpReduce };
  Role role = Role::kPlain;
};

struct Block {
  std::vector<Kernel> kernels;
  std::optional<Comm> comm;
  // Forward blocks that start with a column-parallel linear (QKV, fc1, a MoE layer's router):
  // the reduction of its input gradient in backward (Megatron's f: an all-reduce; with SP the
  // reduce-scatter that mirrors the all-gather before it), issued as soon as the input gradient
  // exists and run beside the weight gradient (Megatron's and TE's async TP communication).
  std::optional<Comm> bwd_input = std::nullopt;
  // With SP: the all-gather of the linear's saved input shard that its weight gradient needs
  // (TE and Megatron keep the shard only), issued as the linear's backward starts, beside its
  // input gradient. `regather_of`: the kernel (by name) whose backward it serves.
  std::optional<Comm> regather = std::nullopt;
  const char* regather_of = nullptr;
  // Backward blocks: how many trailing kernels run beside `comm` (0: it follows them), and the
  // index of the kernel that `regather` is issued before and the last kernel waits for.
  int tail = 0;
  int regather_at = -1;
};

// --- The generator ----------------------------------------------------------------------------

class Generator {
 public:
  Generator(const ModelSpec& m, const Parallelism& p, const TrainingConfig& c)
      : m_(m),
        p_(p),
        c_(c),
        layout_(p, c.fold_dp, c.fold_tp && tp_folds_exactly(p, c), &c_.placement),
        b_(static_cast<std::uint32_t>(layout_.rank_count())) {
    seq_ = c.seq > 0 ? c.seq : m.seq_len;
    lseq_ = static_cast<double>(seq_) / p.cp;
    bpe_ = c.bytes_per_element;
    fp8_ = c.precision == traces::Precision::kFp8;
    tensor_ = c.precision == traces::Precision::kFp32 ? traces::Precision::kFp32
                                                      : traces::Precision::kBf16;
    splits_ = c.overlap == Overlap::kNone ? 1 : 2;
    micro_ = static_cast<int>(c.gbs / (c.mbs * p.dense_dp()));
    hd_ = m.head_dim > 0 ? m.head_dim : m.hidden / m.heads;
    vocab_ = padded_vocab(m, p);
    first_layer_ = internal::stage_first_layers(m.layers, p.pp * p.vpp);
  }

  // Ops that one rank of each pipeline stage emits with `micro` micro-batches, emitted into a
  // scratch builder (ranks of one stage emit the same ops, whatever their other coordinates).
  std::vector<std::uint64_t> stage_op_counts(int micro) {
    if (comms_.tp.empty()) {
      comms_ = internal::make_communicators(layout_, p_, b_);
    }
    micro_ = micro;
    std::vector<std::uint64_t> out;
    for (int stage = 0; stage < p_.pp; ++stage) {
      const std::size_t before = b_.op_count();
      emit_rank(layout_.rank_of(internal::Coord{0, 0, 0, 0, stage}));
      out.push_back(b_.op_count() - before);
    }
    return out;
  }

  GeneratedStep run() {
    comms_ = internal::make_communicators(layout_, p_, b_);
    for (int r = 0; r < layout_.rank_count(); ++r) {
      check_interrupt();  // SIGINT/SIGTERM: a 16k-rank step takes seconds to generate
      emit_rank(r);
    }
    GeneratedStep out;
    out.figures = figures_;
    out.folded_replicas = layout_.fold();
    out.figures.micro_batches = micro_;
    out.figures.tokens = static_cast<double>(c_.gbs) * seq_;
    out.workload = std::move(b_).build("generated step");
    return out;
  }

 private:
  // --- Emission helpers ------------------------------------------------------------------------

  // `what` names the op for its label: "L12.attn.qkv.fwd"; ".mb<micro-batch>" is appended.
  OpId add_kernel(StreamId s, const Kernel& k, std::string_view what) {
    const OpId op = b_.add_op(s, OpSpec{OpKind::kCompute, static_cast<std::int64_t>(k.bytes),
                                        traces::kNoGroup, traces::kNoPeer, traces::kNoDuration});
    last_kernel_ = op;
    b_.set_compute_shape(op, k.shape);
    label(op, what);
    // Model FLOPs (StepFigures::flops) leave recomputation out, as the MFU convention does.
    if (!recomputing_ && !k.recomputed &&
        (k.shape.cls == ComputeClass::kGemm || k.shape.cls == ComputeClass::kAttention)) {
      figures_.flops += k.model_flops >= 0 ? k.model_flops : k.shape.flops;
    }
    return op;
  }

  OpId add_comm(StreamId s, OpKind kind, GroupId g, double bytes, std::string_view what,
                std::int32_t peer = -1) {
    const auto b = static_cast<std::int64_t>(std::max(1.0, std::round(bytes)));
    figures_.comm_bytes[static_cast<std::size_t>(kind)] += static_cast<double>(b);
    const OpId op = b_.add_op(s, OpSpec{kind, b, g, peer, traces::kNoDuration});
    label(op, what);
    return op;
  }

  // Labels are unique on a rank: what the op is (layer, kernel or communication, pass, part)
  // and the micro-batch (none for the optimizer's ops, outside any micro-batch).
  void label(OpId op, std::string_view what) { b_.set_label(op, what, mb_); }

  // --- One layer's blocks ----------------------------------------------------------------------

  // A linear layer's GEMM (out[m, n] = in[m, k] W[k, n]): in FP8 under --precision fp8 (both
  // operands one byte, the output 16-bit), else as the other tensor kernels.
  // `fused_input`: the input's FP8 cast is fused into the norm before it (TE's LayerNormLinear:
  // QKV and fc1), which writes it once, so backward transposes it for the weight gradient (reads
  // and writes a byte an element); a linear whose input fp8_input_cast quantizes gets its
  // transpose there (TE's cast-transpose).
  Kernel linear(double m, double n, double k, bool fused_input = false) const {
    Kernel g = gemm(m, n, k, bpe_);
    if (fp8_) {
      g.shape.precision = traces::Precision::kFp8;
      g.bytes = (m * k + k * n) + m * n * bpe_;
      g.grad_cast_bytes = m * n * (bpe_ + 2.0) + (fused_input ? 2.0 * m * k : 0.0);
    } else {
      g.shape.precision = tensor_;
    }
    return g;
  }

  // Under FP8, the quantization of `elems` 16-bit values into a linear's FP8 input, where no
  // fused kernel does it (TE fuses it into the norm before QKV and fc1; Megatron-Core's dense MLP
  // is TE's LayerNormColumnParallelLinear, Megatron's own activation, then TE's RowParallelLinear,
  // so fc2's input is cast apart): TE's cast-transpose reads two bytes an element and writes the
  // FP8 value and its transpose (for the weight gradient), one byte each.
  void fp8_input_cast(Block& b, double elems, const char* name) const {
    if (fp8_) {
      Kernel q = stream(ComputeClass::kElementwise, elems, 1, 1, 0, bpe_);
      q.bytes = elems * (bpe_ + 2.0);
      q.forward_only = true;
      b.kernels.push_back(named(q, name));
    }
  }

  // A GEMM outside the transformer layers' linears (router, output head): never FP8.
  Kernel plain_gemm(double m, double n, double k) const {
    Kernel g = gemm(m, n, k, bpe_);
    g.shape.precision = tensor_;
    return g;
  }

  // Attention's core for `seqs` sequences on one GPU: FlashAttention over the whole sequence, or
  // with context parallelism this GPU's seq / cp queries against every key (causal work balanced
  // over the group, as Megatron-Core orders the chunks): 1 / cp of the FLOPs, the queries and
  // outputs 1 / cp of the bytes, the gathered keys and values all of theirs.
  Kernel attention_core(double seqs, double q_heads) const {
    Kernel a = attention(seqs, seq_, q_heads, hd_, bpe_, 1.0);
    a.shape.precision = tensor_;
    if (p_.cp > 1) {
      const double cp = p_.cp;
      a.shape.flops /= cp;
      a.bytes *= (2.0 / cp + 2.0) / 4.0;
      a.shape.blocks = std::max(1, static_cast<int>(std::ceil(a.shape.blocks / cp)));
    }
    return a;
  }

  // Context parallelism's gather of the keys and values of `seqs` whole sequences over the cp
  // group, on one GPU's key/value heads (an all-gather's output, in bytes).
  Comm cp_kv_gather(double seqs, int rank, const char* name) const {
    const double kv = std::max(1.0, m_.kv_heads / static_cast<double>(p_.tp));
    return Comm{OpKind::kAllGather, comms_.cp[static_cast<std::size_t>(rank)],
                seqs * seq_ * 2 * kv * hd_ * bpe_, name};
  }

  // Forward blocks of layer l for `tokens` tokens (`seqs` sequences) on one GPU.
  std::vector<Block> forward_blocks(int l, double seqs, int rank) const {
    const double tokens = seqs * lseq_;  // this GPU's: seq / cp of each sequence
    const double h = m_.hidden;
    const double tp = p_.tp;
    const GroupId tpg = comms_.tp[static_cast<std::size_t>(rank)];
    const double act_bytes = tokens * h * bpe_;
    // `te`: the communication of a Transformer Engine linear (Comm::te_linear); the MoE
    // dispatcher's gathers and reductions are Megatron's own, in 16 bits.
    auto tp_reduce = [&](const char* name, bool te) -> std::optional<Comm> {
      if (p_.tp == 1) {
        return std::nullopt;
      }
      return Comm{p_.sp ? OpKind::kReduceScatter : OpKind::kAllReduce,
                  tpg,
                  act_bytes,
                  name,
                  te && p_.sp,
                  Comm::Role::kTpReduce};
    };
    auto sp_gather = [&](const char* name, bool te) -> std::optional<Comm> {
      if (p_.tp == 1 || !p_.sp) {
        return std::nullopt;
      }
      return Comm{OpKind::kAllGather, tpg, act_bytes, name, te, Comm::Role::kSpGather};
    };
    // The input-gradient reduction of a block that starts with a column-parallel linear
    // (`sp_name` names it with SP, as the mirror of that all-gather; `tp_name` without).
    auto input_reduction = [&](const char* sp_name, const char* tp_name) -> std::optional<Comm> {
      if (p_.tp == 1) {
        return std::nullopt;
      }
      return p_.sp ? Comm{OpKind::kReduceScatter, tpg, act_bytes, sp_name}
                   : Comm{OpKind::kAllReduce, tpg, act_bytes, tp_name};
    };
    // With SP, the backward all-gather of a TE linear's input (FP8 under FP8).
    auto input_regather = [&](Block& b, const char* name, const char* of) {
      if (p_.tp > 1 && p_.sp) {
        b.regather = Comm{OpKind::kAllGather, tpg, act_bytes, name, true};
        b.regather_of = of;
      }
    };
    const double norm_tokens = p_.sp ? tokens / tp : tokens;
    std::vector<Block> blocks;
    // Attention.
    blocks.push_back(
        {{named(stream(ComputeClass::kNorm, norm_tokens * h, 5, 1, 1, bpe_), "attn.norm")},
         sp_gather("attn.sp", true)});
    const double q_heads = m_.heads / tp;
    const double kv = std::max(1.0, m_.kv_heads / tp);
    Block attn;
    attn.kernels.push_back(
        named(linear(tokens, (q_heads + 2 * kv) * hd_, h, /*fused_input=*/true), "attn.qkv"));
    // A parallel attention + MLP block (Phi-2, GPT-J) reduces the shared input's gradient once.
    attn.bwd_input = input_reduction("attn.sp", "attn.tp");
    // A parallel block's MLP shares this input and, backward first, gathers it for both.
    if (!m_.parallel_attn_mlp) {
      input_regather(attn, "attn.qkv.input", "attn.qkv");
    }
    if (p_.cp > 1) {
      // Context parallelism: the keys and values of the whole sequence, gathered over the cp
      // group (Megatron-Core's cp_comm_type all_gather; their gradients reduce-scatter back in
      // backward).
      attn.comm = cp_kv_gather(seqs, rank, "attn.cp");
      blocks.push_back(attn);
      attn = Block{};
    }
    attn.kernels.push_back(named(attention_core(seqs, q_heads), "attn.core"));
    fp8_input_cast(attn, tokens * q_heads * hd_, "attn.proj.cast");
    attn.kernels.push_back(named(linear(tokens, h, q_heads * hd_), "attn.proj"));
    attn.comm = m_.parallel_attn_mlp ? std::nullopt : tp_reduce("attn.tp", true);
    blocks.push_back(attn);
    // MLP or experts.
    if (!m_.parallel_attn_mlp) {
      blocks.push_back(
          {{named(stream(ComputeClass::kNorm, norm_tokens * h, 5, 1, 1, bpe_), "mlp.norm")},
           sp_gather("mlp.sp", !m_.layer_is_moe(l))});
    }
    const double gate = m_.gated_mlp ? 2.0 : 1.0;
    if (!m_.layer_is_moe(l)) {
      const double f = m_.ffn_hidden / tp;
      Block mlp;
      mlp.kernels.push_back(named(linear(tokens, gate * f, h, /*fused_input=*/true), "mlp.fc1"));
      if (!m_.parallel_attn_mlp) {
        mlp.bwd_input = input_reduction("mlp.sp", "mlp.tp");
      }
      input_regather(mlp, "mlp.fc1.input", "mlp.fc1");
      mlp.kernels.push_back(named(
          stream(ComputeClass::kElementwise, tokens * f, 8, 1 + (m_.gated_mlp ? 1 : 0), 1, bpe_),
          "mlp.act"));
      fp8_input_cast(mlp, tokens * f, "mlp.fc2.cast");
      mlp.kernels.push_back(named(linear(tokens, h, f), "mlp.fc2"));
      mlp.comm = tp_reduce("mlp.tp", true);
      blocks.push_back(mlp);
    } else {
      const GroupId epg = comms_.ep[static_cast<std::size_t>(rank)];
      const double routed = tokens * m_.top_k;  // token-expert pairs this GPU sends
      Block router;
      router.kernels.push_back(named(plain_gemm(tokens, m_.experts, h), "moe.router"));
      if (!m_.parallel_attn_mlp) {
        router.bwd_input = input_reduction("mlp.sp", "moe.tp");
      }
      if (p_.ep > 1) {
        router.comm = Comm{OpKind::kAllToAll, epg, routed * h * bpe_, "moe.dispatch"};
      }
      blocks.push_back(router);
      // Balanced routing: this GPU's experts receive as many token-expert pairs as it sent.
      const double f = m_.moe_ffn_hidden / tp;
      // The experts' grouped linears (TE GroupedLinear) quantize their inputs themselves.
      Block experts;
      fp8_input_cast(experts, routed * h, "moe.fc1.cast");
      experts.kernels.push_back(named(linear(routed, gate * f, h), "moe.fc1"));
      experts.kernels.push_back(named(
          stream(ComputeClass::kElementwise, routed * f, 8, 1 + (m_.gated_mlp ? 1 : 0), 1, bpe_),
          "moe.act"));
      fp8_input_cast(experts, routed * f, "moe.fc2.cast");
      experts.kernels.push_back(named(linear(routed, h, f), "moe.fc2"));
      if (m_.shared_experts > 0) {
        const double sf = m_.shared_experts * m_.moe_ffn_hidden / tp;
        fp8_input_cast(experts, tokens * h, "moe.shared.fc1.cast");
        experts.kernels.push_back(named(linear(tokens, gate * sf, h), "moe.shared.fc1"));
        experts.kernels.push_back(named(
            stream(ComputeClass::kElementwise, tokens * sf, 8, 1 + (m_.gated_mlp ? 1 : 0), 1, bpe_),
            "moe.shared.act"));
        fp8_input_cast(experts, tokens * sf, "moe.shared.fc2.cast");
        experts.kernels.push_back(named(linear(tokens, h, sf), "moe.shared.fc2"));
      }
      if (p_.ep > 1) {
        experts.comm = Comm{OpKind::kAllToAll, epg, routed * h * bpe_, "moe.combine"};
      }
      blocks.push_back(experts);
      if (p_.tp > 1) {
        blocks.push_back({{}, tp_reduce("moe.tp", false)});
      }
    }
    return blocks;
  }

  // Backward blocks: the forward blocks in reverse, each kernel's backward (a GEMM's input and
  // weight gradients, attention's backward at twice its forward, streaming kernels twice). The
  // gradient meets a forward communication before the backward of the block it followed: an
  // all-gather's reduce-scatter, an all-to-all's all-to-all, and with SP a TP reduction's
  // all-gather (without SP its backward is nothing). A block that starts with a column-parallel
  // linear ends with its input-gradient reduction, beside the weight gradient, and with SP
  // regathers the linear's input beside its input gradient (Block::bwd_input, ::regather).
  std::vector<Block> backward_blocks(int l, double seqs, int rank) const {
    std::vector<Block> fwd = forward_blocks(l, seqs, rank);
    std::vector<Block> bwd;
    for (auto it = fwd.rbegin(); it != fwd.rend(); ++it) {
      if (it->comm && (it->comm->role == Comm::Role::kPlain ||
                       (it->comm->role == Comm::Role::kTpReduce && p_.sp))) {
        Comm c = *it->comm;
        if (c.kind == OpKind::kAllGather) {
          c.kind = OpKind::kReduceScatter;
        } else if (c.kind == OpKind::kReduceScatter) {
          c.kind = OpKind::kAllGather;
        }
        bwd.push_back(Block{{}, c});
      }
      Block b;
      for (auto k = it->kernels.rbegin(); k != it->kernels.rend(); ++k) {
        if (k->forward_only) {
          continue;
        }
        if (k->shape.cls == ComputeClass::kGemm) {
          if (it->regather && k->name == std::string_view(it->regather_of)) {
            b.regather = it->regather;
            b.regather_at = static_cast<int>(b.kernels.size());
          }
          if (k->grad_cast_bytes > 0) {
            Kernel q = stream(ComputeClass::kElementwise, k->grad_cast_bytes / (bpe_ + 2.0), 1, 1,
                              0, bpe_);
            q.bytes = k->grad_cast_bytes;
            q.name = k->name;
            q.pass = "gradcast";
            b.kernels.push_back(q);
          }
          // dgrad C[m,k] = dC[m,n] B^T and wgrad C[k,n] = A^T dC, each with its own tiles
          // (kernels.hpp); the forward's precision and HBM bytes (the same three matrices).
          Kernel dgrad = *k;
          Kernel wgrad = *k;
          const auto [dg, wg] = gemm_backward(k->m, k->n, k->k, bpe_);
          for (auto [to, from] : {std::pair{&dgrad, &dg}, std::pair{&wgrad, &wg}}) {
            to->shape.flops = from->shape.flops;
            to->shape.blocks = from->shape.blocks;
            to->model_flops = from->model_flops;
            to->m = from->m;
            to->n = from->n;
            to->k = from->k;
          }
          dgrad.pass = "dgrad";
          wgrad.pass = "wgrad";
          b.kernels.push_back(dgrad);
          b.kernels.push_back(wgrad);
        } else if (k->shape.cls == ComputeClass::kAttention) {
          Kernel a = *k;
          a.shape.flops *= 2.0;
          a.bytes *= 2.0;
          a.pass = "bwd";
          b.kernels.push_back(a);
        } else {
          Kernel e = *k;
          e.bytes *= 1.5;  // reads the saved input and the output gradient, writes one
          e.pass = "bwd";
          b.kernels.push_back(e);
        }
      }
      if (it->bwd_input) {
        b.comm = it->bwd_input;
        b.tail = 1;  // the column-parallel linear's weight gradient, its last kernel
      }
      bwd.push_back(std::move(b));
    }
    // What attention's backward needs first, in order: TransformerEngine's all-gather context
    // parallelism keeps only the local keys and values and gathers them again
    // (AttnFuncWithCPAndKVAllGather); selective recomputation then reruns the core's forward.
    std::vector<Block> before_attention;
    if (p_.cp > 1) {
      before_attention.push_back(Block{{}, cp_kv_gather(seqs, rank, "attn.cp.kv")});
    }
    if (c_.selective_recompute) {
      Block again;
      again.kernels.push_back(named(attention_core(seqs, m_.heads / p_.tp), "attn.core"));
      again.kernels.back().pass = "recompute";
      again.kernels.back().recomputed = true;
      before_attention.push_back(std::move(again));
    }
    if (!before_attention.empty()) {
      const auto attention = std::find_if(bwd.begin(), bwd.end(), [](const Block& b) {
        return std::any_of(b.kernels.begin(), b.kernels.end(),
                           [](const Kernel& k) { return k.shape.cls == ComputeClass::kAttention; });
      });
      bwd.insert(attention, std::make_move_iterator(before_attention.begin()),
                 std::make_move_iterator(before_attention.end()));
    }
    return bwd;
  }

  // --- Per rank --------------------------------------------------------------------------------

  struct RankStreams {
    StreamId compute = 0;
    StreamId side = 0;   // TP (Domino) or EP (two-batch) communication
    StreamId dp_ag = 0;  // parameter all-gathers (FSDP, ZeRO)
    StreamId dp_rs = 0;  // gradient reduce-scatters / all-reduces
    StreamId pp = 0;     // pipeline sends
  };

  // Emits `blocks` for `splits_` parts of the micro-batch on the compute stream; a block's
  // communication blocks the next block of the same part. Without overlap it runs on the compute
  // stream itself; with overlap on the side stream, under the other part's compute; one with a
  // tail (a backward input-gradient reduction) on the side stream beside the tail's kernels, and
  // a regather on the side stream beside the kernels before the last. Returns the last compute
  // op of every part (and keeps `wait` as the communication each part waits for).
  OpId emit_blocks(const RankStreams& s, const std::vector<Block>& blocks,
                   std::vector<std::optional<OpId>>& wait, int layer, const char* pass) {
    OpId last = 0;
    // Each part's last kernel: what a communication of that part issued on the side stream
    // waits for (the kernel before these blocks at first, e.g. the layer's residual add).
    std::vector<std::optional<OpId>> part_last(static_cast<std::size_t>(splits_), last_kernel_);
    std::string& what = what_;  // reused: no allocation per op
    auto name = [&](const char* thing, std::string_view kind, const char* p, int part) {
      what.clear();
      fmt::format_to(std::back_inserter(what), "L{}.{}", layer, thing);
      if (!kind.empty()) {
        what += '.';
        what += kind;
      }
      what += '.';
      what += p;
      if (splits_ > 1) {
        fmt::format_to(std::back_inserter(what), ".p{}", part);
      }
      return std::string_view(what);
    };
    // FP8 all-gathers of TE linears: one byte an element.
    auto bytes_of = [&](const Comm& c) {
      return fp8_ && c.te_linear && c.kind == OpKind::kAllGather ? c.bytes / bpe_ : c.bytes;
    };
    for (const Block& blk : blocks) {
      const bool comm = blk.comm && blk.comm->group != traces::kNoGroup;
      const int n = static_cast<int>(blk.kernels.size());
      // Where the communication is issued: after the kernels, or before the last `tail` of them,
      // which run beside it (on the side stream).
      const int comm_at = comm && blk.tail > 0 ? std::max(0, n - blk.tail) : n;
      for (int part = 0; part < splits_; ++part) {
        std::optional<OpId>& pending = wait[static_cast<std::size_t>(part)];
        // On the side stream, after this part's last kernel so far.
        auto on_side = [&](const Comm& c) {
          name(c.name, traces::to_string(c.kind), pass, part);
          const OpId op = add_comm(s.side, c.kind, c.group, bytes_of(c), what);
          if (part_last[static_cast<std::size_t>(part)]) {
            b_.add_dep(op, *part_last[static_cast<std::size_t>(part)]);
          }
          return op;
        };
        // ... and after whatever this part still waits for; the part's next kernel waits for it.
        auto issue_beside = [&](const Comm& c) {
          const OpId op = on_side(c);
          if (pending) {
            b_.add_dep(op, *pending);
          }
          pending = op;
        };
        std::optional<OpId> regathered;
        for (int i = 0; i < n; ++i) {
          if (blk.regather && i == blk.regather_at) {
            // The input's all-gather: only the weight gradient (the last kernel) waits for it.
            regathered = on_side(*blk.regather);
          }
          if (comm && i == comm_at) {
            issue_beside(*blk.comm);
          }
          const Kernel& k = blk.kernels[static_cast<std::size_t>(i)];
          const OpId op = add_kernel(s.compute, k, name(k.name, {}, k.pass ? k.pass : pass, part));
          if (i == 0 && pending) {
            b_.add_dep(op, *pending);
            pending.reset();
          }
          if (i == n - 1 && regathered) {
            b_.add_dep(op, *regathered);
          }
          last = op;
          part_last[static_cast<std::size_t>(part)] = op;
        }
        if (comm && comm_at == n) {
          if (splits_ == 1 && blk.tail == 0) {
            name(blk.comm->name, traces::to_string(blk.comm->kind), pass, part);
            last = add_comm(s.compute, blk.comm->kind, blk.comm->group, bytes_of(*blk.comm), what);
            if (pending) {
              b_.add_dep(last, *pending);
              pending.reset();
            }
          } else {
            issue_beside(*blk.comm);
          }
        }
      }
    }
    return last;
  }

  // Weights of block l on one GPU that its whole data-parallel group (dp x ep GPUs) holds alike:
  // attention and MLP matrices split over TP, norms (and a MoE block's router) whole on every TP
  // rank as in Megatron. With ep > 1 the routed experts are apart (expert_layer_params).
  double layer_params(int l) const {
    double whole = m_.norm_params();
    if (m_.layer_is_moe(l)) {
      whole += m_.router_params();
    }
    return layer_linear_params(l) + whole;
  }

  // The linear layers' share of layer_params (the weights TE's FP8 GEMMs use).
  double layer_linear_params(int l) const {
    double split = m_.attention_params();
    if (!m_.layer_is_moe(l)) {
      split += m_.dense_mlp_params();
    } else {
      split += m_.expert_params() * m_.shared_experts;
      if (p_.ep == 1) {
        split += m_.expert_params() * m_.experts;
      }
    }
    return split / p_.tp;
  }

  // Bytes a data-parallel parameter all-gather of unit (v, l) carries: 16-bit, or with
  // --fp8-param-gather the linear weights in FP8 (embedding, head and norms stay 16-bit).
  double unit_gather_bytes(int v, int l) const {
    const double all = unit_params(v, l) * bpe_;
    return c_.fp8_param_gather ? all - layer_linear_params(l) * (bpe_ - 1) : all;
  }
  // The same for routed experts (all linear weights).
  double expert_gather_bytes(double params) const {
    return params * (c_.fp8_param_gather ? 1 : bpe_);
  }

  // Block l's routed experts on one GPU when ep > 1 (experts / ep of them, split over TP): only
  // the dp replicas that hold the same experts (the expert-data-parallel group) share them.
  double expert_layer_params(int l) const {
    return p_.ep > 1 && m_.layer_is_moe(l) ? m_.expert_params() * m_.experts / p_.ep / p_.tp : 0.0;
  }

  // What data parallelism shards, gathers and reduces with block l of virtual stage v: the block,
  // plus the input embedding with the first stage's first block and the output head and final
  // norm with the last stage's last block (vocabulary-parallel over TP; one tensor when tied and
  // on the same GPU as the embedding).
  double unit_params(int v, int l) const {
    const int stages = p_.pp * p_.vpp;
    const double table = vocab_ * m_.hidden / p_.tp;
    double n = layer_params(l);
    if (v == 0 && l == 0) {
      n += table;
    }
    if (v == stages - 1 && l == m_.layers - 1) {
      n += (m_.tied_embeddings && stages == 1 ? 0.0 : table) + final_norm_params(m_);
    }
    return n;
  }

  // The routed experts' share of a data-parallel gather or reduction of block l: on the
  // expert-data-parallel group, when there is one (dp > 1) and the block has experts.
  std::optional<OpId> expert_comm(StreamId s, OpKind kind, GroupId edpg, double params,
                                  std::string_view what) {
    if (edpg == traces::kNoGroup || params <= 0) {
      return std::nullopt;
    }
    return add_comm(s, kind, edpg,
                    kind == OpKind::kAllGather ? expert_gather_bytes(params) : params * bpe_, what);
  }

  void emit_rank(int r) {
    last_kernel_.reset();  // never a dependency across ranks
    const internal::Coord c = layout_.coord(r);
    const auto rank = static_cast<Rank>(r);
    RankStreams s;
    s.compute = b_.add_stream(rank, "compute");
    if (splits_ > 1) {
      s.side = b_.add_stream(rank, c_.overlap == Overlap::kDomino ? "tp" : "ep");
    } else if (p_.tp > 1) {
      // Backward TP communication that runs beside the weight gradients.
      s.side = b_.add_stream(rank, "tp");
    }
    const bool dp_comm = p_.weight_replicas() > 1;
    if (dp_comm) {
      s.dp_ag = b_.add_stream(rank, "dp_allgather");
      s.dp_rs = b_.add_stream(rank, "dp_reduce");
    }
    if (p_.pp > 1) {
      s.pp = b_.add_stream(rank, "pp_send");
    }
    const double seqs_total = c_.mbs;
    const double seqs = seqs_total / splits_;
    const int stages = p_.pp * p_.vpp;
    const double act_bytes =
        static_cast<double>(c_.mbs) * lseq_ * m_.hidden * bpe_ / (p_.sp ? p_.tp : 1);
    // Megatron-LM's scatter/gather of pipeline transfers (Narayanan et al. SC'21 §4.1): without
    // SP every TP rank holds the whole activation, so each sends only its 1/t slice over its own
    // NIC and the receiving stage all-gathers the slices over NVLink before it computes. With
    // SP the activation is already split and travels as it is.
    const bool scatter_gather = p_.tp > 1 && !p_.sp;
    const double pp_bytes = scatter_gather ? act_bytes / p_.tp : act_bytes;

    const std::vector<PipelineUnit> order = pipeline_order(p_.pp, p_.vpp, c.pp, micro_);

    const GroupId dpg = comms_.dp[static_cast<std::size_t>(r)];
    const GroupId edpg = comms_.edp[static_cast<std::size_t>(r)];
    const bool fsdp = p_.zero == 3 && dp_comm;
    double bucket = 0;
    double expert_bucket = 0;
    std::optional<OpId> last_bwd;
    std::vector<std::optional<OpId>> wait(static_cast<std::size_t>(splits_));
    std::optional<OpId> prefetch_dep;  // FSDP: an all-gather waits for the layer before last

    auto next_rank = [&](int dir) {
      internal::Coord o = c;
      o.pp = (c.pp + dir + p_.pp) % p_.pp;
      return layout_.rank_of(o);
    };
    // The communicator of a pipeline transfer: none (the two ranks) unless folded.
    auto pp_group = [&](int dir) {
      return comms_.pp_pair.empty() ? traces::kNoGroup
                                    : comms_.pp_pair[static_cast<std::size_t>(r)][dir > 0 ? 1 : 0];
    };
    const GroupId tpg = comms_.tp[static_cast<std::size_t>(r)];
    auto receive = [&](int dir, const std::string& what) {
      add_comm(s.compute, OpKind::kRecv, pp_group(dir), pp_bytes, what, next_rank(dir));
      if (scatter_gather) {
        add_comm(s.compute, OpKind::kAllGather, tpg, act_bytes, what + ".gather");
      }
    };
    mb_ = -1;
    for (const PipelineUnit& u : order) {
      mb_ = u.micro_batch;
      const int v = u.chunk * p_.pp + c.pp;  // virtual stage
      const int l0 = first_layer_[static_cast<std::size_t>(v)];
      const int l1 = first_layer_[static_cast<std::size_t>(v) + 1];
      if (u.forward) {
        if (v > 0) {
          receive(-1, fmt::format("L{}.pp.recv.fwd", l0));
        } else {
          add_kernel(s.compute,
                     stream(ComputeClass::kElementwise,
                            static_cast<double>(c_.mbs) * lseq_ * m_.hidden, 0, 1, 1, bpe_),
                     "embed.fwd");
        }
        for (int l = l0; l < l1; ++l) {
          std::optional<OpId> gather;
          std::optional<OpId> expert_gather;
          if (fsdp) {
            gather = add_comm(s.dp_ag, OpKind::kAllGather, dpg, unit_gather_bytes(v, l),
                              fmt::format("L{}.fsdp.allgather.fwd", l));
            expert_gather = expert_comm(s.dp_ag, OpKind::kAllGather, edpg, expert_layer_params(l),
                                        fmt::format("L{}.fsdp.experts.allgather.fwd", l));
            if (prefetch_dep) {
              b_.add_dep(*gather, *prefetch_dep);
            }
          }
          std::vector<Block> blocks = forward_blocks(l, seqs, r);
          const OpId first_kernel = add_kernel(
              s.compute,
              stream(ComputeClass::kElementwise, seqs_total * lseq_ * m_.hidden, 1, 1, 1, bpe_),
              fmt::format("L{}.residual.fwd", l));
          if (gather) {
            b_.add_dep(first_kernel, *gather);
          }
          if (expert_gather) {
            b_.add_dep(first_kernel, *expert_gather);
          }
          const OpId end = emit_blocks(s, blocks, wait, l, "fwd");
          prefetch_dep = fsdp ? std::optional<OpId>(first_kernel) : std::nullopt;
          (void)end;
        }
        for (std::size_t part = 0; part < wait.size(); ++part) {
          if (wait[part]) {
            // The last part's communication must land before the activations leave.
            b_.add_dep(marker(s.compute, fmt::format("L{}.landed.fwd.p{}", l1 - 1, part)),
                       *wait[part]);
            wait[part].reset();
          }
        }
        if (v == stages - 1) {
          const double tokens = static_cast<double>(c_.mbs) * lseq_;
          add_kernel(s.compute, stream(ComputeClass::kNorm, tokens * m_.hidden, 5, 1, 1, bpe_),
                     "head.norm.fwd");
          add_kernel(s.compute, plain_gemm(tokens, vocab_ / p_.tp, m_.hidden), "head.logits.fwd");
          add_kernel(s.compute,
                     stream(ComputeClass::kElementwise, tokens * vocab_ / p_.tp, 5, 1, 1, bpe_),
                     "head.loss.fwd");
        } else {
          const OpId producer = marker(s.compute, fmt::format("L{}.pp.ready.fwd", l1 - 1));
          const OpId send = add_comm(s.pp, OpKind::kSend, pp_group(+1), pp_bytes,
                                     fmt::format("L{}.pp.send.fwd", l1 - 1), next_rank(+1));
          b_.add_dep(send, producer);
        }
      } else {
        const bool last_mb = u.micro_batch == micro_ - 1;
        if (v < stages - 1) {
          receive(+1, fmt::format("L{}.pp.recv.bwd", l1 - 1));
        } else {
          const double tokens = static_cast<double>(c_.mbs) * lseq_;
          auto [dgrad, wgrad] = gemm_backward(tokens, vocab_ / p_.tp, m_.hidden, bpe_);
          dgrad.shape.precision = tensor_;
          wgrad.shape.precision = tensor_;
          add_kernel(s.compute, dgrad, "head.logits.dgrad");
          add_kernel(s.compute, wgrad, "head.logits.wgrad");
        }
        for (int l = l1 - 1; l >= l0; --l) {
          std::optional<OpId> gather;
          std::optional<OpId> expert_gather;
          if (fsdp) {
            gather = add_comm(s.dp_ag, OpKind::kAllGather, dpg, unit_gather_bytes(v, l),
                              fmt::format("L{}.fsdp.allgather.bwd", l));
            expert_gather = expert_comm(s.dp_ag, OpKind::kAllGather, edpg, expert_layer_params(l),
                                        fmt::format("L{}.fsdp.experts.allgather.bwd", l));
            if (prefetch_dep) {
              b_.add_dep(*gather, *prefetch_dep);
            }
          }
          const OpId first_kernel = add_kernel(
              s.compute,
              stream(ComputeClass::kElementwise, seqs_total * lseq_ * m_.hidden, 1, 1, 1, bpe_),
              fmt::format("L{}.residual.bwd", l));
          if (gather) {
            b_.add_dep(first_kernel, *gather);
          }
          if (expert_gather) {
            b_.add_dep(first_kernel, *expert_gather);
          }
          if (c_.recompute) {
            recomputing_ = true;
            emit_blocks(s, forward_blocks(l, seqs, r), wait, l, "recompute");
            recomputing_ = false;
          }
          const OpId end = emit_blocks(s, backward_blocks(l, seqs, r), wait, l, "bwd");
          for (std::size_t part = 0; part < wait.size(); ++part) {
            if (wait[part]) {
              b_.add_dep(marker(s.compute, fmt::format("L{}.landed.bwd.p{}", l, part)),
                         *wait[part]);
              wait[part].reset();
            }
          }
          prefetch_dep = fsdp ? std::optional<OpId>(first_kernel) : std::nullopt;
          last_bwd = end;
          if (fsdp) {
            const OpId rs = add_comm(s.dp_rs, OpKind::kReduceScatter, dpg, unit_params(v, l) * bpe_,
                                     fmt::format("L{}.fsdp.reducescatter", l));
            b_.add_dep(rs, end);
            if (auto ers =
                    expert_comm(s.dp_rs, OpKind::kReduceScatter, edpg, expert_layer_params(l),
                                fmt::format("L{}.fsdp.experts.reducescatter", l))) {
              b_.add_dep(*ers, end);
            }
          } else if (dp_comm && (last_mb || p_.zero == 2)) {
            // DDP / ZeRO-1/2: gradients leave in buckets as backward produces them, after the
            // last micro-batch's backward (gradient accumulation, as PyTorch's no_sync and
            // Megatron's distributed optimizer do); ZeRO-2 keeps only its gradient shard, so it
            // reduce-scatters every micro-batch's gradients (DeepSpeed's stage 2).
            bucket += unit_params(v, l) * bpe_;
            expert_bucket += expert_layer_params(l);
            if (bucket >= c_.bucket_bytes || l == l0) {
              const OpKind kind = p_.zero == 0 ? OpKind::kAllReduce : OpKind::kReduceScatter;
              // A bucket is named by the layer that closes it.
              const OpId red = add_comm(s.dp_rs, kind, dpg, bucket,
                                        fmt::format("L{}.dp.{}", l, traces::to_string(kind)));
              b_.add_dep(red, end);
              if (auto ered =
                      expert_comm(s.dp_rs, kind, edpg, expert_bucket,
                                  fmt::format("L{}.dp.experts.{}", l, traces::to_string(kind)))) {
                b_.add_dep(*ered, end);
              }
              bucket = 0;
              expert_bucket = 0;
            }
          }
        }
        if (v > 0) {
          const OpId producer = marker(s.compute, fmt::format("L{}.pp.ready.bwd", l0));
          const OpId send = add_comm(s.pp, OpKind::kSend, pp_group(-1), pp_bytes,
                                     fmt::format("L{}.pp.send.bwd", l0), next_rank(-1));
          b_.add_dep(send, producer);
        } else {
          add_kernel(s.compute,
                     stream(ComputeClass::kElementwise,
                            static_cast<double>(c_.mbs) * lseq_ * m_.hidden, 0, 1, 1, bpe_),
                     "embed.bwd");
        }
      }
    }
    // Optimizer over this GPU's (shard of the) parameters, after its gradients are reduced.
    double local = 0;
    double local_gather_bytes = 0;
    double local_experts = 0;
    for (int ch = 0; ch < p_.vpp; ++ch) {
      const int v = ch * p_.pp + c.pp;
      for (int l = first_layer_[static_cast<std::size_t>(v)];
           l < first_layer_[static_cast<std::size_t>(v) + 1]; ++l) {
        local += unit_params(v, l);
        local_gather_bytes += unit_gather_bytes(v, l);
        local_experts += expert_layer_params(l);
      }
    }
    const double shard = p_.zero >= 1 ? local / static_cast<double>(p_.weight_replicas()) +
                                            local_experts / (p_.dp * p_.cp)
                                      : local + local_experts;
    mb_ = -1;  // the step's own ops
    const OpId opt = add_kernel(s.compute, stream(ComputeClass::kOptimizer, shard, 12, 9, 5, 2),
                                "optimizer.step");
    if (dp_comm) {
      // Waits for every gradient reduction this rank issued (the dp_reduce stream's last op).
      const OpId fence = marker(s.dp_rs, "dp.reduced");
      b_.add_dep(opt, fence);
      if (p_.zero == 1 || p_.zero == 2) {
        const OpId ag =
            add_comm(s.dp_ag, OpKind::kAllGather, dpg, local_gather_bytes, "zero.allgather");
        b_.add_dep(ag, opt);
        if (auto eag = expert_comm(s.dp_ag, OpKind::kAllGather, edpg, local_experts,
                                   "zero.experts.allgather")) {
          b_.add_dep(*eag, opt);
        }
      }
    }
  }

  // A zero-duration marker on stream `s`: a point later ops can wait for (or that waits).
  OpId marker(StreamId s, std::string_view what) {
    const OpId op = b_.add_op(s, OpSpec{OpKind::kCompute, 0, traces::kNoGroup, traces::kNoPeer, 0});
    label(op, what);
    return op;
  }

  const ModelSpec& m_;
  Parallelism p_;
  TrainingConfig c_;
  internal::RankLayout layout_;
  traces::WorkloadBuilder b_;
  int seq_ = 0;
  double lseq_ = 0;  // tokens of a sequence on this GPU: seq / cp
  int bpe_ = 2;
  std::optional<OpId> last_kernel_;  // the kernel add_kernel added last (of any rank)
  bool fp8_ = false;                 // --precision fp8
  traces::Precision tensor_ = traces::Precision::kBf16;  // of the tensor kernels that are not FP8
  int splits_ = 1;
  int micro_ = 1;
  double hd_ = 0;
  double vocab_ = 0;
  std::vector<int> first_layer_;
  internal::Communicators comms_;
  StepFigures figures_;
  bool recomputing_ = false;  // emitting a recomputed forward (not model FLOPs)
  int mb_ = -1;               // the micro-batch being emitted (labels); -1: none
  std::string what_;          // scratch for emit_blocks
};

}  // namespace

namespace {

// Degrees are at most 2^20 each, so their product is computed in floating point first.
void check_world(const Parallelism& p, std::string_view what) {
  const double world = static_cast<double>(p.tp) * p.cp * p.pp * p.dp * p.ep;
  if (p.tp < 1 || p.cp < 1 || p.pp < 1 || p.dp < 1 || p.ep < 1 || p.vpp < 1 ||
      world > static_cast<double>(Parallelism::kMaxGpus)) {
    throw Error(fmt::format("{}: tp x cp x pp x dp x ep = {:.4g} GPUs; lagom models 1 to {} GPUs",
                            what, world, Parallelism::kMaxGpus));
  }
}

}  // namespace

Parallelism parse_parallelism(std::string_view text) {
  Parallelism p;
  std::string s(text);
  std::size_t pos = 0;
  bool any = false;
  std::set<std::string> given;  // keys set so far
  bool fsdp_seen = false;
  while (pos <= s.size()) {
    const std::size_t comma = s.find(',', pos);
    const std::string item =
        s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? s.size() + 1 : comma + 1;
    if (item.empty()) {
      continue;
    }
    any = true;
    if (item == "sp") {
      if (p.sp) {
        throw Error(fmt::format("--parallel '{}': sp is set twice", text));
      }
      p.sp = true;
      continue;
    }
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      throw Error(
          fmt::format("--parallel '{}': '{}' is not key=value (keys: tp, cp, pp, dp, ep, "
                      "fsdp, vpp, zero, and the flag sp)",
                      text, item));
    }
    const std::string key = item.substr(0, eq);
    const std::string val = item.substr(eq + 1);
    static const std::set<std::string> kKeys = {"tp", "cp",  "pp",   "dp",
                                                "ep", "vpp", "fsdp", "zero"};
    if (!kKeys.contains(key)) {
      throw Error(
          fmt::format("--parallel '{}': unknown key '{}' (tp, cp, pp, dp, ep, fsdp, vpp, "
                      "zero, sp)",
                      text, key));
    }
    // fsdp=N sets dp and zero: each may be given once, by either spelling.
    const bool by_fsdp = key == "fsdp";
    for (const std::string& k :
         by_fsdp ? std::vector<std::string>{"dp", "zero"} : std::vector<std::string>{key}) {
      const bool fsdp_involved = by_fsdp || (fsdp_seen && (k == "dp" || k == "zero"));
      if (!given.insert(k).second) {
        throw Error(fmt::format("--parallel '{}': {} is set twice{}", text, k,
                                fsdp_involved ? " (fsdp=N sets dp=N and zero=3)" : ""));
      }
    }
    fsdp_seen = fsdp_seen || by_fsdp;
    const int min = key == "zero" ? 0 : 1;
    const int v = static_cast<int>(
        parse_integer(val, fmt::format("--parallel '{}': {}", text, key), min, 1 << 20));
    if (key == "tp") {
      p.tp = v;
    } else if (key == "cp") {
      p.cp = v;
    } else if (key == "pp") {
      p.pp = v;
    } else if (key == "dp") {
      p.dp = v;
    } else if (key == "ep") {
      p.ep = v;
    } else if (key == "vpp") {
      p.vpp = v;
    } else if (key == "fsdp") {
      p.dp = v;
      p.zero = 3;
    } else if (key == "zero") {
      if (v > 3) {
        throw Error(fmt::format("--parallel '{}': zero is 0, 1, 2 or 3", text));
      }
      p.zero = v;
    } else {
      throw Error(
          fmt::format("--parallel '{}': unknown key '{}' (tp, cp, pp, dp, ep, fsdp, vpp, "
                      "zero, sp)",
                      text, key));
    }
  }
  if (!any) {
    throw Error("--parallel is empty (e.g. \"tp=8,dp=2\" or \"fsdp=16\")");
  }
  check_world(p, fmt::format("--parallel '{}'", text));
  return p;
}

std::string to_string(const Parallelism& p) {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ",") + s; };
  if (p.tp > 1)
    add(fmt::format("tp={}", p.tp));
  if (p.sp)
    add("sp");
  if (p.cp > 1)
    add(fmt::format("cp={}", p.cp));
  if (p.pp > 1)
    add(fmt::format("pp={}", p.pp));
  if (p.vpp > 1)
    add(fmt::format("vpp={}", p.vpp));
  if (p.ep > 1)
    add(fmt::format("ep={}", p.ep));
  if (p.zero == 3) {
    add(fmt::format("fsdp={}", p.dp));
  } else {
    if (p.dp > 1)
      add(fmt::format("dp={}", p.dp));
    if (p.zero > 0)
      add(fmt::format("zero={}", p.zero));
  }
  return out.empty() ? "single GPU" : out;
}

namespace {

// Activation bytes block `layer` keeps for its backward, per micro-batch on one GPU: Korthikanti
// et al. (2022, §4) term by term, with this model's shapes. `tokens` are what a tensor-parallel
// rank's linears see (sequence / cp x mbs); `e` bytes per element.
//  * whole on every TP rank (split over it with sequence parallelism): each norm's input and
//    output (2 e d), the residual dropouts' 1-byte masks (d each, two per block);
//  * split over TP: queries, keys, values and the attention output (e (2 q + 2 kv)) and
//    FlashAttention's 4-byte log-sum-exp per head (no score matrix: Korthikanti's 5 a s / d term
//    is gone); fc1's output (twice the width when gated) and the activation's output;
//  * MoE blocks: each of a token's top_k copies reaches its expert whole (the dispatched input
//    and the expert's output, kept for the weighted sum: 2 e d), the experts' inner widths split
//    over TP as the generator runs them; shared experts see every token; the router's fp32
//    probabilities.
// For GPT (a 4d GELU MLP, multi-head attention, residual dropout) this is Korthikanti's
// s b d (10 + 24 / t) and, with sequence parallelism, s b d 34 / t, plus the log-sum-exp.
double layer_activation_bytes(const ModelSpec& m, const Parallelism& p, double tokens, double e,
                              int layer) {
  const double d = m.hidden;
  const double tp = p.tp;
  const double whole_tokens = p.sp ? tokens / tp : tokens;
  const double norms = m.parallel_attn_mlp ? 1.0 : 2.0;
  const double whole = norms * 2.0 * e * d + (m.residual_dropout ? 2.0 * d : 0.0);
  const double q = m.heads * static_cast<double>(m.head_dim) / tp;
  const double kv = m.kv_heads * static_cast<double>(m.head_dim) / tp;
  const double gate = m.gated_mlp ? 3.0 : 2.0;  // fc1's output (two halves when gated) + act's
  double split = e * (2.0 * q + 2.0 * kv) + 4.0 * m.heads / tp;
  if (!m.layer_is_moe(layer)) {
    split += e * gate * m.ffn_hidden / tp;
    return whole_tokens * whole + tokens * split;
  }
  const double routed = tokens * m.top_k;
  return whole_tokens * whole + tokens * split +
         routed * e * (2.0 * d + gate * m.moe_ffn_hidden / tp) +
         tokens * (e * gate * m.shared_experts * m.moe_ffn_hidden / tp + 4.0 * m.experts);
}

}  // namespace

ActivationFootprint activation_footprint(const ModelSpec& m, const Parallelism& p,
                                         const TrainingConfig& c) {
  const double seq = c.seq > 0 ? c.seq : m.seq_len;
  const int stages = p.pp * p.vpp;
  const double tokens = seq / p.cp * c.mbs;
  const double e = c.bytes_per_element;
  const std::vector<int> first = internal::stage_first_layers(m.layers, stages);
  // What a forward unit of virtual stage v leaves until its backward: every layer's set, or with
  // full recomputation each layer's input (split over TP with SP); the last virtual stage also
  // the fp32 softmax of its vocab-parallel cross-entropy.
  ActivationFootprint f;
  const double input = (p.sp ? tokens / p.tp : tokens) * e * m.hidden;
  const double logits = tokens * padded_vocab(m, p) / p.tp * 4.0;
  std::vector<double> unit(static_cast<std::size_t>(stages), 0.0);
  for (int v = 0; v < stages; ++v) {
    for (int l = first[static_cast<std::size_t>(v)]; l < first[static_cast<std::size_t>(v) + 1];
         ++l) {
      const double full = layer_activation_bytes(m, p, tokens, e, l);
      f.layer_max = std::max(f.layer_max, full);
      unit[static_cast<std::size_t>(v)] += c.recompute ? input : full;
    }
    if (v == stages - 1) {
      unit[static_cast<std::size_t>(v)] += logits;
    }
  }
  // Each stage's 1F1B order (interleaved with vpp), forward units adding and backward units
  // freeing. Stage s holds about pp - s micro-batches, so the peak is on the first stage, or on
  // the second when the first is a block short (Llama 3's balancing: 126 blocks on 16 stages
  // hold 7 x 16 on the first and 8 x 15 on the second), or on the last (the logits). Past its
  // warm-up a schedule repeats, so a few rounds of pp micro-batches beyond it show the peak
  // without walking every micro-batch.
  const std::int64_t dp = std::max<std::int64_t>(1, p.dense_dp());
  const std::int64_t micro_all = std::max<std::int64_t>(1, c.gbs / (c.mbs * dp));
  std::int64_t micro = std::min<std::int64_t>(micro_all, std::int64_t{p.pp} * (p.vpp + 3));
  if (p.vpp > 1 && micro_all % p.pp == 0) {
    micro -= micro % p.pp;
  }
  for (int stage : {0, std::min(1, p.pp - 1), p.pp - 1}) {
    double live = 0;
    double peak = 0;
    int held = 0;
    int at_peak = 0;  // forward passes held when the bytes peak
    for (const PipelineUnit& u : pipeline_order(p.pp, p.vpp, stage, static_cast<int>(micro))) {
      const double b = unit[static_cast<std::size_t>(u.chunk * p.pp + stage)];
      live += u.forward ? b : -b;
      held += u.forward ? 1 : -1;
      if (live > peak) {
        peak = live;
        at_peak = held;
      }
    }
    if (peak > f.held) {
      f.held = peak;
      f.stage = stage;
      f.units_in_flight = at_peak;
    }
  }
  return f;
}

MemoryEstimate estimate_memory(const ModelSpec& m, const Parallelism& p, const TrainingConfig& c) {
  const double stages = static_cast<double>(p.pp) * p.vpp;
  // Parameters on the most loaded GPU: its share of the transformer layers (matrices split over
  // TP, norms and the router whole on every TP rank) and the input embedding, vocab-parallel over
  // TP; with a single stage also the output head (unless tied) and the final norm. Routed
  // experts (experts / ep of them) are counted apart: ZeRO shards them over the dp replicas that
  // hold the same experts, not over the dense data-parallel degree dp x ep.
  double split = m.attention_params() + m.dense_mlp_params();
  double whole = m.norm_params();
  double per_layer_experts = 0;
  if (m.is_moe()) {
    split = m.attention_params() + m.expert_params() * m.shared_experts;
    whole += m.router_params();
    per_layer_experts = m.expert_params() * m.experts / p.ep / p.tp;
  }
  const double per_layer = split / p.tp + whole;
  const double layers_here = std::ceil(static_cast<double>(m.layers) / stages) * p.vpp;
  const double table = padded_vocab(m, p) * m.hidden / p.tp;
  const double params =
      layers_here * per_layer + table +
      (stages == 1 ? (m.tied_embeddings ? 0.0 : table) + final_norm_params(m) : 0.0);
  const double expert_params = layers_here * per_layer_experts;
  // Bytes of `per_param` each, sharded from ZeRO stage `zero` on.
  auto sharded = [&](double per_param, int zero) {
    return per_param * (p.zero >= zero ? params / static_cast<double>(p.weight_replicas()) +
                                             expert_params / (p.dp * p.cp)
                                       : params + expert_params);
  };
  MemoryEstimate e;
  // Mixed precision with Adam: 2 B weights + 2 B gradients + 12 B fp32 master, m, v (ZeRO paper).
  e.weights = sharded(c.bytes_per_element, 3);
  e.gradients = sharded(c.bytes_per_element, 2);
  e.optimizer = sharded(12.0, 1);
  // Activations (activation_footprint): what the busiest pipeline stage holds at its peak, and
  // with full recomputation one layer's whole set rebuilt during backward.
  const ActivationFootprint act = activation_footprint(m, p, c);
  e.activations = act.held + (c.recompute ? act.layer_max : 0.0);
  e.activation_stage = act.stage;
  e.forward_passes_in_flight = act.units_in_flight;
  // FSDP also gathers one layer (plus the prefetched next) in full.
  if (p.zero >= 3) {
    e.weights += 2.0 * (per_layer + per_layer_experts) * c.bytes_per_element;
  }
  // FP8: Transformer Engine keeps an FP8 copy of each linear weight and of its transpose across
  // the micro-batches of a step (2 bytes a parameter). With --fp8-param-gather the weights
  // themselves are FP8 (1 byte, plus the transpose), as much as the 16-bit copy they replace.
  // Activations stay counted at 16 bits: FP8 saves some (a bound from above there).
  if (fp8_weight_copies(p, c)) {
    e.weights += 2.0 * (layers_here * split / p.tp + expert_params);
  }
  e.buffers = 3.0e9;  // CUDA context, NCCL buffers, allocator fragmentation (an estimate)
  return e;
}

bool tp_folds_exactly(const Parallelism& p, const TrainingConfig& c) {
  return p.tp > 1 && c.placement.empty() &&
         (p.world() == p.tp ||
          (c.fold_dp && c.gpus_alike && c.gpus_per_node > 0 && p.tp % c.gpus_per_node == 0));
}

namespace {

// The rules generate_step checks before generating; returns the micro-batches per pipeline.
int check_step(const ModelSpec& m, const Parallelism& p, const TrainingConfig& c) {
  const std::string what = fmt::format("{} with {}", m.name, to_string(p));
  auto fail = [&](const std::string& why) -> void {
    throw Error(fmt::format("{}: {}", what, why));
  };
  check_world(p, what);
  if (!c.placement.empty() && static_cast<std::int64_t>(c.placement.size()) != p.world()) {
    fail(fmt::format("the placement has {} GPUs for {} ranks", c.placement.size(), p.world()));
  }
  if (c.mbs < 1) {
    fail(fmt::format("--mbs must be at least 1, got {}", c.mbs));
  }
  if (c.gbs < 1) {
    fail(fmt::format("--gbs must be at least 1, got {}", c.gbs));
  }
  const int seq = c.seq > 0 ? c.seq : m.seq_len;
  if (seq < 1) {
    fail("the model has no default sequence length; pass --seq");
  }
  if ((c.precision == traces::Precision::kFp32) != (c.bytes_per_element == 4)) {
    fail(
        fmt::format("precision {} with {}-byte elements: fp32 GEMMs go with 4-byte elements, "
                    "16-bit and fp8 ones with 2",
                    traces::to_string(c.precision), c.bytes_per_element));
  }
  if (c.recompute && c.selective_recompute) {
    fail("full and selective recomputation exclude each other: pick one");
  }
  if (c.fp8_param_gather && c.precision != traces::Precision::kFp8) {
    fail("--fp8-param-gather gathers FP8 weights: it needs --precision fp8");
  }
  if (c.fp8_param_gather && (p.zero == 0 || p.weight_replicas() == 1)) {
    fail(
        "--fp8-param-gather makes the data-parallel parameter all-gathers FP8, and this layout has "
        "none: it needs ZeRO (zero=1, 2) or FSDP over more than one data-parallel replica");
  }
  // Megatron-Core splits each sequence into 2 x cp chunks and gives rank i chunks i and
  // 2 cp - 1 - i, which balances causal attention over the group.
  if (p.cp > 1 && seq % (2 * p.cp) != 0) {
    fail(
        fmt::format("cp={} needs the sequence ({} tokens) to split into 2 x cp = {} equal chunks "
                    "(Megatron-Core's load-balanced causal split)",
                    p.cp, seq, 2 * p.cp));
  }
  if (m.heads % p.tp != 0) {
    fail(fmt::format("tp={} does not divide the {} attention heads", p.tp, m.heads));
  }
  // Sequence parallelism splits each sequence's tokens over the TP ranks; Megatron-LM asserts
  // that they divide.
  if (p.sp && seq % p.tp != 0) {
    fail(
        fmt::format("sp with tp={} needs the sequence ({} tokens) to divide by tp (Megatron-LM "
                    "splits its tokens over the tensor-parallel ranks)",
                    p.tp, seq));
  }
  // Megatron-LM shards whole key/value head groups (num_query_groups divisible by the TP size)
  // and refuses the rest; replicating KV heads over TP ranks is an inference engine's trick.
  if (m.kv_heads % p.tp != 0) {
    fail(
        fmt::format("tp={} does not divide the {} key/value heads (Megatron-LM shards whole "
                    "key/value head groups)",
                    p.tp, m.kv_heads));
  }
  if (m.ffn_hidden % p.tp != 0 || (m.is_moe() && m.moe_ffn_hidden % p.tp != 0)) {
    fail(fmt::format("tp={} does not divide the MLP width", p.tp));
  }
  if (p.ep > 1 && !m.is_moe()) {
    fail(fmt::format("ep={} needs a mixture-of-experts model; {} is dense", p.ep, m.name));
  }
  if (m.is_moe() && m.experts % p.ep != 0) {
    fail(fmt::format("ep={} does not divide the {} experts", p.ep, m.experts));
  }
  const std::int64_t stages = std::int64_t{p.pp} * p.vpp;  // each up to 2^20
  const std::int64_t per = (m.layers + stages - 1) / stages;
  // Llama 3's balancing: the first and the last (virtual) stage may each be a layer short, so
  // that 126 layers run as 16 stages of 8 less two, or with vpp=2 as 32 chunks of 4 less two
  // (the embedding and the head sit on those stages).
  if (per * stages - m.layers > 2 || per < 1 || (per * stages - m.layers > 0 && per < 2)) {
    fail(
        fmt::format("pp={} x vpp={} = {} stages do not divide the {} layers (up to two short "
                    "stages, the first and the last, are allowed as in Llama 3)",
                    p.pp, p.vpp, stages, m.layers));
  }
  if (p.vpp > 1 && p.pp < 2) {
    fail("vpp > 1 (interleaved 1F1B) needs pp > 1");
  }
  if (p.sp && p.tp == 1) {
    fail("sp (sequence parallelism) needs tp > 1");
  }
  if (c.overlap == Overlap::kDomino && p.tp == 1) {
    fail("Domino overlap splits TP communication: it needs tp > 1");
  }
  if (c.overlap == Overlap::kTwoBatch && !(m.is_moe() && p.ep > 1)) {
    fail("two-batch overlap hides expert all-to-alls: it needs a MoE model and ep > 1");
  }
  if (c.overlap != Overlap::kNone && c.mbs % 2 != 0) {
    fail(fmt::format("{} overlap splits each micro-batch in two: --mbs {} is odd",
                     c.overlap == Overlap::kDomino ? "Domino" : "two-batch", c.mbs));
  }
  const std::int64_t dp = p.dense_dp();  // at most 2^24: mbs x dp fits in 64 bits
  if (c.gbs % (c.mbs * dp) != 0) {
    fail(fmt::format("--gbs {} is not a multiple of --mbs {} x data-parallel degree {} = {}", c.gbs,
                     c.mbs, dp, c.mbs * dp));
  }
  const int micro = static_cast<int>(c.gbs / (c.mbs * dp));  // at most gbs
  if (p.vpp > 1 && micro % p.pp != 0) {
    fail(fmt::format("interleaved 1F1B needs the {} micro-batches to be a multiple of pp={}", micro,
                     p.pp));
  }
  return micro;
}

}  // namespace

void check_gpu_memory(const ModelSpec& m, const Parallelism& p, const TrainingConfig& c,
                      double gpu_memory_bytes) {
  const MemoryEstimate mem = estimate_memory(m, p, c);
  if (gpu_memory_bytes > 0 && mem.total() > gpu_memory_bytes) {
    throw Error(fmt::format(
        "{} with {}: does not fit in GPU memory: {:.1f} GB needed (weights {:.1f}, gradients "
        "{:.1f}, optimizer {:.1f}, activations {:.1f} for {} forward pass{} in flight on "
        "pipeline stage {}, buffers {:.1f}) > {:.1f} GB; an estimate (Korthikanti et al.'s "
        "activation accounting with this model's shapes, docs/models.md §8 \"Memory\"; the "
        "buffers are a guess), which `--scale gpu.memory_GB=...` lifts as a what-if; use more "
        "model parallelism, sequence parallelism (sp), ZeRO/FSDP, --recompute, or a smaller "
        "--mbs{}",
        m.name, to_string(p), mem.total() / 1e9, mem.weights / 1e9, mem.gradients / 1e9,
        mem.optimizer / 1e9, mem.activations / 1e9, mem.forward_passes_in_flight,
        mem.forward_passes_in_flight == 1 ? "" : "es", mem.activation_stage, mem.buffers / 1e9,
        gpu_memory_bytes / 1e9,
        fp8_weight_copies(p, c)
            ? "; the weights include Transformer Engine's FP8 weight copies, which ZeRO with "
              "--fp8-param-gather avoids"
            : ""));
  }
}

GeneratedStep generate_step(const ModelSpec& m, const Parallelism& p, const TrainingConfig& c,
                            double gpu_memory_bytes) {
  check_step(m, p, c);
  const int seq = c.seq > 0 ? c.seq : m.seq_len;
  check_gpu_memory(m, p, c, gpu_memory_bytes);
  Generator g(m, p, c);
  GeneratedStep out = g.run();
  out.memory = estimate_memory(m, p, c);
  out.description = fmt::format("{}, {}, mbs {}, gbs {}, seq {}, {}{}{}", m.name, to_string(p),
                                c.mbs, c.gbs, seq, traces::to_string(c.precision),
                                c.fp8_param_gather ? " (fp8 parameter gathers)" : "",
                                c.recompute             ? ", full recompute"
                                : c.selective_recompute ? ", selective recompute"
                                                        : "");
  return out;
}

std::vector<int> place_around_down_nodes(Parallelism& par, TrainingConfig& cfg,
                                         const std::vector<int>& down, int gpus_per_node) {
  if (down.empty()) {
    return {};
  }
  check_world(par, to_string(par));
  // Layout position = tp + TP (cp + CP (ep + EP (dp + DP pp))): a GPU's replica is its dp
  // coordinate.
  const std::int64_t world = par.world();
  const std::int64_t per_replica_row = std::int64_t{par.tp} * par.cp * par.ep;
  // A position's GPU: cfg.placement's (a placement file), or the position itself (packed).
  const std::vector<std::uint32_t> was_on = std::move(cfg.placement);
  const auto gpu_of = [&](std::int64_t position) {
    return was_on.empty() ? position : std::int64_t{was_on[static_cast<std::size_t>(position)]};
  };
  const std::set<int> down_set(down.begin(), down.end());
  std::vector<char> dropped(static_cast<std::size_t>(par.dp), 0);
  for (std::int64_t position = 0; position < world; ++position) {
    if (down_set.contains(static_cast<int>(gpu_of(position) / gpus_per_node))) {
      dropped[static_cast<std::size_t>((position / per_replica_row) % par.dp)] = 1;
    }
  }
  std::vector<int> out;
  std::vector<int> kept;
  for (int r = 0; r < par.dp; ++r) {
    (dropped[static_cast<std::size_t>(r)] ? out : kept).push_back(r);
  }
  if (kept.empty()) {
    cfg.placement = was_on;
    throw Error(fmt::format(
        "{}: with node{} {} down no data-parallel replica is left (each of the {} uses one)",
        to_string(par), down.size() == 1 ? "" : "s", fmt::join(down, ", "), par.dp));
  }
  if (cfg.mbs < 1 || cfg.gbs % (std::int64_t{cfg.mbs} * par.dense_dp()) != 0) {
    throw Error(fmt::format(
        "{}: --gbs {} is not a multiple of --mbs {} x data-parallel degree {} = {}", to_string(par),
        cfg.gbs, cfg.mbs, par.dense_dp(), std::int64_t{cfg.mbs} * par.dense_dp()));
  }
  const auto n_kept = static_cast<std::int64_t>(kept.size());
  std::vector<std::uint32_t> placement(static_cast<std::size_t>(world / par.dp * n_kept));
  for (std::int64_t pp = 0; pp < par.pp; ++pp) {
    for (std::int64_t r = 0; r < n_kept; ++r) {
      for (std::int64_t row = 0; row < per_replica_row; ++row) {
        const std::int64_t now = row + per_replica_row * (r + n_kept * pp);
        const std::int64_t was =
            row + per_replica_row * (kept[static_cast<std::size_t>(r)] + std::int64_t{par.dp} * pp);
        placement[static_cast<std::size_t>(now)] = static_cast<std::uint32_t>(gpu_of(was));
      }
    }
  }
  cfg.gbs = static_cast<int>(cfg.gbs / par.dp * n_kept);
  par.dp = static_cast<int>(n_kept);
  cfg.placement = std::move(placement);
  return out;
}

StepSize count_step_ops(const ModelSpec& m, const Parallelism& p, const TrainingConfig& c) {
  const int micro = check_step(m, p, c);
  // A rank's ops are affine in the micro-batches: every micro-batch adds the same forward and
  // backward units (interleaved 1F1B in groups of pp), and what differs (warm-up, the last
  // micro-batch's gradient reductions, the optimizer) is the same for any count. Two probes
  // give the slope; each stage's ranks all emit what its first rank does.
  const int q = p.vpp > 1 ? p.pp : 1;
  TrainingConfig probe = c;
  probe.gbs = static_cast<int>(q * c.mbs * p.dense_dp());  // at most gbs (check_step)
  Generator g(m, p, probe);
  const std::vector<std::uint64_t> one = g.stage_op_counts(q);
  const std::vector<std::uint64_t> two = g.stage_op_counts(2 * q);
  const internal::RankLayout layout(p, c.fold_dp, c.fold_tp && tp_folds_exactly(p, c));
  StepSize out;
  out.ranks = static_cast<std::uint64_t>(layout.rank_count());
  const double per_stage = static_cast<double>(out.ranks) / p.pp;
  for (std::size_t s = 0; s < one.size(); ++s) {
    const double slope = static_cast<double>(two[s] - one[s]) / q;
    out.ops += per_stage * (static_cast<double>(one[s]) + slope * (micro - q));
  }
  return out;
}

}  // namespace lagom::models
