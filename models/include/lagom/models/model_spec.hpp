// A transformer architecture as the step generators need it (layers, widths, heads, MoE), read
// from the model zoo (models/zoo/*.json, embedded) or a user's JSON file (docs/formats/model.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lagom::models {

inline constexpr std::string_view kModelFormat = "lagom.model";
inline constexpr int kModelVersion = 1;

struct ModelSpec {
  std::string name;  // "llama3-8b"
  std::string description;
  std::vector<std::string> sources;      // where each number comes from (config.json, paper, ...)
  std::string origin;                    // "builtin:llama3-8b" or the file path
  std::vector<std::string> assumptions;  // choices made where the sources disagree or are silent

  int layers = 0;                  // transformer blocks
  int hidden = 0;                  // model width d
  int ffn_hidden = 0;              // dense MLP inner width (per expert width is moe_ffn_hidden)
  int heads = 0;                   // attention heads
  int kv_heads = 0;                // key/value heads (GQA/MQA); = heads for multi-head attention
  int head_dim = 0;                // per-head width; hidden / heads unless the model says otherwise
  int vocab = 0;                   // vocabulary size
  int seq_len = 0;                 // default training sequence length
  bool gated_mlp = false;          // SwiGLU/GeGLU: three MLP matrices instead of two
  bool tied_embeddings = false;    // the output projection reuses the input embedding
  bool rmsnorm = false;            // RMSNorm (one weight vector) instead of LayerNorm (two)
  bool parallel_attn_mlp = false;  // attention and MLP read the same input (GPT-J/Phi-2 style)
  // Dropout on the attention and MLP outputs (GPT-2/GPT-3's resid_pdrop, Megatron's
  // hidden_dropout): its 1-byte masks are kept for backward (the memory estimate counts them).
  bool residual_dropout = false;

  // Mixture of experts (experts == 0: dense).
  int experts = 0;             // routed experts per MoE layer
  int top_k = 0;               // experts each token is routed to
  int shared_experts = 0;      // always-active experts per MoE layer
  int moe_ffn_hidden = 0;      // inner width of one expert's MLP
  int first_dense_layers = 0;  // leading layers with a dense MLP instead of experts
  int moe_every = 1;           // among the rest, every k-th layer is MoE (1: all)

  bool is_moe() const { return experts > 0; }
  // Block `layer` (0-based) has experts: layer >= first_dense_layers and
  // (layer - first_dense_layers) % moe_every == 0. False for a dense model or outside [0, layers).
  bool layer_is_moe(int layer) const;
  int moe_layers() const;  // how many blocks have experts

  // Parameter counts (weights only, biases ignored): all of them, and those one token uses.
  double params() const;
  double active_params() const;
  // Per layer: attention weights, MLP (or experts, shared experts, router) weights.
  double attention_params() const;
  double dense_mlp_params() const;
  double expert_params() const;          // one routed expert
  double embedding_params() const;       // input embedding (+ output head unless tied)
  double router_params() const;          // one MoE layer's router (experts x hidden); 0 if dense
  double norm_params() const;            // one block's norms (1 if parallel_attn_mlp, else 2)
  double layer_params(int layer) const;  // all weights of block `layer`
  double active_layer_params(int layer) const;  // those of block `layer` one token uses
};

// Cross-field rules (kv_heads divides heads, top_k <= experts, ...); lagom::Error naming the
// origin, the field and what was expected. parse_model_json() calls it; call it on specs built
// in code.
void validate(const ModelSpec& spec);

// Parses a model document; `origin` names it in errors (file, JSON path, what was expected).
ModelSpec parse_model_json(std::string_view text, std::string_view origin);
// A zoo name ("llama3-8b") or a path to a JSON file; unknown names list the known ones.
ModelSpec load_model(const std::string& name_or_path);
std::vector<std::string> list_models();

}  // namespace lagom::models
