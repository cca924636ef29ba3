// The model zoo and format: every zoo model loads, parameter counts match the published figures,
// hand-derived counts on small models, and a catalogue of bad inputs whose errors name the file,
// the JSON path and what was expected.
#include "lagom/models/model_spec.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "test_util.hpp"

namespace lagom::models {
namespace {

using nlohmann::json;
using test::error_of;

std::string zoo_text(const std::string& name) {
  std::ifstream in(std::string(LAGOM_SOURCE_DIR) + "/models/zoo/" + name + ".json");
  EXPECT_TRUE(in) << name;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ModelZoo, ListsEveryModel) {
  EXPECT_EQ(list_models(),
            (std::vector<std::string>{"deepseek-moe-16b", "gpt3-1.3b", "gpt3-13b", "gpt3-175b",
                                      "llama3-70b", "llama3-8b", "llama3.1-405b", "mixtral-8x7b",
                                      "mpt-7b", "olmoe-1b-7b", "phi-2"}));
}

TEST(ModelZoo, EveryModelLoadsAndCitesItsSources) {
  for (const std::string& name : list_models()) {
    SCOPED_TRACE(name);
    const ModelSpec m = load_model(name);
    EXPECT_EQ(m.name, name);
    EXPECT_EQ(m.origin, "builtin:" + name);
    EXPECT_FALSE(m.description.empty());
    EXPECT_FALSE(m.sources.empty());
    EXPECT_GT(m.params(), 1e9);
    EXPECT_LE(m.active_params(), m.params());
    EXPECT_EQ(m.is_moe(), m.active_params() < m.params());
    // The embedded copy is the file in the source tree.
    const ModelSpec from_file = parse_model_json(zoo_text(name), "x.json");
    EXPECT_EQ(from_file.name, name);
    EXPECT_EQ(from_file.params(), m.params());
  }
}

// Published parameter counts. Published figures are rounded to two or three significant digits
// and we count neither biases nor learned position embeddings, so each is checked within a
// tolerance that covers its rounding.
struct Published {
  const char* model;
  double total;
  double active;  // 0: dense, active = total
  double tolerance;
  const char* source;
};

constexpr Published kPublished[] = {
    {"phi-2", 2.7e9, 0, 0.035, "microsoft/phi-2 model card: 2.7 billion parameters"},
    {"llama3-8b", 8.0e9, 0, 0.015, "Meta Llama 3 model card: 8B"},
    {"llama3-70b", 70.6e9, 0, 0.01,
     "Hugging Face safetensors metadata of the Llama 3 70B checkpoints: 70.6B params"},
    {"llama3.1-405b", 405e9, 0, 0.01, "The Llama 3 Herd of Models (arXiv 2407.21783): 405B"},
    {"mpt-7b", 6.7e9, 0, 0.015, "mosaicml/mpt-7b model card: n_parameters 6.7B"},
    {"deepseek-moe-16b", 16.4e9, 2.8e9, 0.02,
     "DeepSeekMoE (arXiv 2401.06066) §5: 16.4B total, 2.8B activated"},
    {"olmoe-1b-7b", 6.9e9, 1.3e9, 0.03, "OLMoE (arXiv 2409.02060): 6.9B total, 1.3B active"},
    {"mixtral-8x7b", 46.7e9, 12.9e9, 0.01,
     "Mistral AI, Mixtral of experts: 46.7B total, 12.9B per token"},
    {"gpt3-1.3b", 1.3e9, 0, 0.03, "GPT-3 paper (arXiv 2005.14165) Table 2.1: 1.3B"},
    {"gpt3-13b", 13.0e9, 0, 0.015, "GPT-3 paper Table 2.1: 13.0B"},
    {"gpt3-175b", 175.0e9, 0, 0.01, "GPT-3 paper Table 2.1: 175.0B"},
};

TEST(ModelZoo, ParameterCountsMatchThePublishedFigures) {
  for (const Published& p : kPublished) {
    SCOPED_TRACE(std::string(p.model) + " (" + p.source + ")");
    const ModelSpec m = load_model(p.model);
    EXPECT_NEAR(m.params() / p.total, 1.0, p.tolerance) << m.params();
    const double active = p.active > 0 ? p.active : p.total;
    EXPECT_NEAR(m.active_params() / active, 1.0, p.tolerance) << m.active_params();
  }
}

TEST(ModelZoo, ArchitecturesAsPublished) {
  // Numbers from each model's config.json / paper, as cited in the zoo files.
  const ModelSpec llama = load_model("llama3-8b");
  EXPECT_EQ(llama.layers, 32);
  EXPECT_EQ(llama.hidden, 4096);
  EXPECT_EQ(llama.ffn_hidden, 14336);
  EXPECT_EQ(llama.heads, 32);
  EXPECT_EQ(llama.kv_heads, 8);
  EXPECT_EQ(llama.head_dim, 128);
  EXPECT_EQ(llama.vocab, 128256);
  EXPECT_EQ(llama.seq_len, 8192);
  EXPECT_TRUE(llama.gated_mlp);
  EXPECT_TRUE(llama.rmsnorm);
  EXPECT_FALSE(llama.tied_embeddings);

  const ModelSpec phi = load_model("phi-2");
  EXPECT_TRUE(phi.parallel_attn_mlp);
  EXPECT_FALSE(phi.gated_mlp);
  EXPECT_EQ(phi.head_dim, 80);  // 2560 / 32
  EXPECT_EQ(phi.vocab, 51200);

  const ModelSpec mpt = load_model("mpt-7b");
  EXPECT_EQ(mpt.ffn_hidden, 4 * mpt.hidden);  // expansion_ratio 4
  EXPECT_TRUE(mpt.tied_embeddings);
  EXPECT_FALSE(mpt.gated_mlp);

  // DeepSeekMoE: layer 0 dense (first_k_dense_replace 1), the other 27 with 64 + 2 experts.
  const ModelSpec ds = load_model("deepseek-moe-16b");
  EXPECT_FALSE(ds.layer_is_moe(0));
  for (int l = 1; l < ds.layers; ++l) {
    EXPECT_TRUE(ds.layer_is_moe(l)) << l;
  }
  EXPECT_EQ(ds.moe_layers(), 27);
  EXPECT_EQ(ds.experts, 64);
  EXPECT_EQ(ds.top_k, 6);
  EXPECT_EQ(ds.shared_experts, 2);
  EXPECT_EQ(ds.moe_ffn_hidden, 1408);
  EXPECT_EQ(ds.ffn_hidden, 10944);

  const ModelSpec olmoe = load_model("olmoe-1b-7b");
  EXPECT_EQ(olmoe.moe_layers(), 16);
  EXPECT_EQ(olmoe.experts, 64);
  EXPECT_EQ(olmoe.top_k, 8);

  const ModelSpec mixtral = load_model("mixtral-8x7b");
  EXPECT_EQ(mixtral.moe_layers(), 32);
  EXPECT_EQ(mixtral.experts, 8);
  EXPECT_EQ(mixtral.top_k, 2);
  EXPECT_EQ(mixtral.moe_ffn_hidden, 14336);

  // GPT-3 13B as Table 2.1 prints it: 40 heads of 128 (5120) on d_model 5140.
  const ModelSpec g13 = load_model("gpt3-13b");
  EXPECT_EQ(g13.hidden, 5140);
  EXPECT_EQ(g13.heads * g13.head_dim, 5120);
  EXPECT_EQ(g13.ffn_hidden, 4 * g13.hidden);

  const ModelSpec l405 = load_model("llama3.1-405b");
  EXPECT_EQ(l405.kv_heads, 8);
  EXPECT_FALSE(l405.assumptions.empty());
}

// A dense model small enough to count by hand.
constexpr const char* kTinyDense = R"({
  "format": "lagom.model", "version": 1, "name": "tiny", "description": "test",
  "layers": 2, "hidden": 8, "ffn_hidden": 16, "heads": 4, "kv_heads": 2, "vocab": 10,
  "seq_len": 128, "gated_mlp": true, "tied_embeddings": false, "rmsnorm": true,
  "sources": ["made up"]})";

TEST(ModelSpecCounts, DenseByHand) {
  const ModelSpec m = parse_model_json(kTinyDense, "tiny.json");
  EXPECT_EQ(m.head_dim, 2);  // 8 / 4
  // Q 8x(4*2) + K, V 8x(2*2) each + O (4*2)x8 = 64 + 32 + 32 + 64.
  EXPECT_EQ(m.attention_params(), 192);
  // Gated: gate, up 8x16 and down 16x8.
  EXPECT_EQ(m.dense_mlp_params(), 3 * 8 * 16);
  EXPECT_EQ(m.norm_params(), 2 * 8);            // two RMSNorms of 8
  EXPECT_EQ(m.embedding_params(), 2 * 10 * 8);  // untied: embedding and head
  EXPECT_EQ(m.layer_params(0), 192 + 384 + 16);
  // 2 blocks + embeddings + final norm.
  EXPECT_EQ(m.params(), 2 * (192 + 384 + 16) + 160 + 8);
  EXPECT_EQ(m.active_params(), m.params());
  EXPECT_FALSE(m.is_moe());
  EXPECT_EQ(m.moe_layers(), 0);
  EXPECT_EQ(m.router_params(), 0);

  // LayerNorm (weight and shift), tied embeddings, plain MLP, one shared norm per block.
  json doc = json::parse(kTinyDense);
  doc["rmsnorm"] = false;
  doc["tied_embeddings"] = true;
  doc["gated_mlp"] = false;
  doc["parallel_attn_mlp"] = true;
  const ModelSpec p = parse_model_json(doc.dump(), "tiny.json");
  EXPECT_EQ(p.norm_params(), 2 * 8);  // one LayerNorm: 8 weights + 8 shifts
  EXPECT_EQ(p.dense_mlp_params(), 2 * 8 * 16);
  EXPECT_EQ(p.embedding_params(), 10 * 8);
  EXPECT_EQ(p.params(), 2 * (192 + 256 + 16) + 80 + 16);
}

TEST(ModelSpecCounts, MoeByHand) {
  // 5 layers: layer 0 dense, then every 2nd of the rest has experts: layers 1 and 3.
  json doc = json::parse(kTinyDense);
  doc["layers"] = 5;
  doc["experts"] = 4;
  doc["top_k"] = 2;
  doc["shared_experts"] = 1;
  doc["moe_ffn_hidden"] = 4;
  doc["first_dense_layers"] = 1;
  doc["moe_every"] = 2;
  const ModelSpec m = parse_model_json(doc.dump(), "moe.json");
  const std::vector<bool> pattern = {false, true, false, true, false};
  for (int l = 0; l < 5; ++l) {
    EXPECT_EQ(m.layer_is_moe(l), pattern[l]) << l;
  }
  EXPECT_FALSE(m.layer_is_moe(-1));
  EXPECT_FALSE(m.layer_is_moe(5));
  EXPECT_EQ(m.moe_layers(), 2);
  EXPECT_EQ(m.expert_params(), 3 * 8 * 4);  // gated, width 4
  EXPECT_EQ(m.router_params(), 4 * 8);
  const double attn_norm = 192 + 16;
  const double dense = attn_norm + 384;
  // An MoE block holds 4 routed + 1 shared expert and the router; a token uses 2 + 1.
  const double moe_all = attn_norm + 5 * 96 + 32;
  const double moe_active = attn_norm + 3 * 96 + 32;
  EXPECT_EQ(m.layer_params(1), moe_all);
  EXPECT_EQ(m.active_layer_params(1), moe_active);
  EXPECT_EQ(m.layer_params(0), dense);
  EXPECT_EQ(m.params(), 3 * dense + 2 * moe_all + 160 + 8);
  EXPECT_EQ(m.active_params(), 3 * dense + 2 * moe_active + 160 + 8);
}

TEST(ModelSpecCounts, HeadDimGivenExplicitly) {
  // 3 heads of 4 on a width of 8 (heads need not divide hidden when head_dim is given).
  json doc = json::parse(kTinyDense);
  doc["heads"] = 3;
  doc["kv_heads"] = 3;
  doc["head_dim"] = 4;
  const ModelSpec m = parse_model_json(doc.dump(), "hd.json");
  // Q, K, V 8x12 each, O 12x8.
  EXPECT_EQ(m.attention_params(), 4 * 8 * 12);
}

// Bad inputs: each mutation of a valid document, and the words its error must contain.
struct BadCase {
  const char* what;
  std::function<void(json&)> mutate;
  const char* message;
};

TEST(ModelFormat, BadInputCatalogue) {
  const json moe = [] {
    json d = json::parse(kTinyDense);
    d["experts"] = 4;
    d["top_k"] = 2;
    d["moe_ffn_hidden"] = 4;
    d.erase("ffn_hidden");
    return d;
  }();
  const std::vector<BadCase> cases = {
      {"wrong format", [](json& d) { d["format"] = "lagom.cluster"; },
       "format: expected \"lagom.model\", got the string \"lagom.cluster\""},
      {"newer version", [](json& d) { d["version"] = 2; },
       "version: unsupported version 2: this lagom reads version 1"},
      {"no version", [](json& d) { d.erase("version"); }, "missing required field 'version'"},
      {"unknown field", [](json& d) { d["hiden"] = 8; }, "hiden: unknown field (known fields:"},
      {"zero layers", [](json& d) { d["layers"] = 0; },
       "layers: must be between 1 and 100000, got 0"},
      {"negative seq_len", [](json& d) { d["seq_len"] = -4; }, "seq_len: must be between 1"},
      {"huge vocab", [](json& d) { d["vocab"] = 99999999999LL; }, "got 99999999999"},
      {"layers as a string", [](json& d) { d["layers"] = "32"; },
       "layers: expected an integer, got the string \"32\""},
      {"fractional width", [](json& d) { d["hidden"] = 8.5; },
       "hidden: expected an integer, got the number 8.5"},
      {"no hidden", [](json& d) { d.erase("hidden"); }, "missing required field 'hidden'"},
      {"heads do not divide hidden",
       [](json& d) {
         d["heads"] = 3;
         d["kv_heads"] = 3;
       },
       "heads: 3 heads do not divide hidden = 8; expected a divisor of hidden, or give 'head_dim'"},
      {"kv_heads do not divide heads", [](json& d) { d["kv_heads"] = 3; },
       "kv_heads: 3 key/value heads do not divide the 4 attention heads"},
      {"more kv_heads than heads", [](json& d) { d["kv_heads"] = 8; },
       "kv_heads: 8 key/value heads do not divide the 4 attention heads"},
      {"zero head_dim", [](json& d) { d["head_dim"] = 0; }, "head_dim: must be between 1"},
      {"dense without ffn_hidden", [](json& d) { d.erase("ffn_hidden"); },
       "ffn_hidden: missing: a dense model needs the inner width of its MLP"},
      {"gated_mlp missing", [](json& d) { d.erase("gated_mlp"); },
       "missing required field 'gated_mlp'"},
      {"gated_mlp as a string", [](json& d) { d["gated_mlp"] = "yes"; },
       "gated_mlp: expected true or false, got the string \"yes\""},
      {"empty name", [](json& d) { d["name"] = ""; }, "name: must not be empty"},
      {"no sources", [](json& d) { d.erase("sources"); }, "missing required field 'sources'"},
      {"empty sources", [](json& d) { d["sources"] = json::array(); },
       "sources: expected a non-empty array of strings, got an empty array"},
      {"a source that is not a string",
       [](json& d) {
         d["sources"] = {"ok", 3};
       },
       "sources[1]: expected a string, got the number 3"},
      {"assumptions as a string", [](json& d) { d["assumptions"] = "x"; },
       "assumptions: expected an array of strings, got the string \"x\""},
      {"top_k without experts", [](json& d) { d["top_k"] = 2; },
       "top_k: is a mixture-of-experts field but the model has no 'experts'"},
      {"zero experts", [](json& d) { d["experts"] = 0; },
       "experts: must be at least 1; leave 'experts' out for a dense model"},
  };
  const std::vector<BadCase> moe_cases = {
      {"top_k above experts", [](json& d) { d["top_k"] = 5; },
       "top_k: each token goes to between 1 and 'experts' = 4 routed experts, got 5"},
      {"experts without moe_ffn_hidden", [](json& d) { d.erase("moe_ffn_hidden"); },
       "moe_ffn_hidden: missing: a model with experts needs the inner width"},
      {"experts without top_k", [](json& d) { d.erase("top_k"); },
       "missing required field 'top_k'"},
      {"every layer dense", [](json& d) { d["first_dense_layers"] = 2; },
       "first_dense_layers: must be between 0 and layers - 1 = 1"},
      {"dense layers without ffn_hidden", [](json& d) { d["first_dense_layers"] = 1; },
       "ffn_hidden: missing: 1 of the 2 layers have a dense MLP"},
      {"moe_every zero", [](json& d) { d["moe_every"] = 0; }, "moe_every: must be between 1"},
      {"negative shared experts", [](json& d) { d["shared_experts"] = -1; },
       "shared_experts: must be between 0"},
  };
  const auto run = [](const json& base, const std::vector<BadCase>& list) {
    // The base document itself is valid.
    EXPECT_NO_THROW(parse_model_json(base.dump(), "bad.json"));
    for (const BadCase& c : list) {
      SCOPED_TRACE(c.what);
      json d = base;
      c.mutate(d);
      const std::string err = error_of([&] { parse_model_json(d.dump(), "bad.json"); });
      EXPECT_EQ(err.rfind("bad.json: ", 0), 0u) << err;
      EXPECT_NE(err.find(c.message), std::string::npos) << err;
    }
  };
  run(json::parse(kTinyDense), cases);
  run(moe, moe_cases);
}

TEST(ModelFormat, MalformedDocuments) {
  EXPECT_NE(error_of([] { parse_model_json("", "e.json"); }).find("e.json: the file is empty"),
            std::string::npos);
  EXPECT_NE(
      error_of([] { parse_model_json("{\"format\": ", "t.json"); }).find("t.json: not valid JSON"),
      std::string::npos);
  EXPECT_NE(error_of([] {
              parse_model_json("[1, 2]", "a.json");
            }).find("a.json: expected a JSON object at the top level, got array"),
            std::string::npos);
}

TEST(ModelFormat, ValidateCatchesSpecsBuiltInCode) {
  ModelSpec m = parse_model_json(kTinyDense, "tiny.json");
  m.origin.clear();
  m.kv_heads = 3;
  EXPECT_NE(error_of([&] { validate(m); }).find("tiny: kv_heads: 3 key/value heads"),
            std::string::npos);
  m.kv_heads = 2;
  m.experts = 4;
  m.top_k = 0;
  m.moe_ffn_hidden = 4;
  EXPECT_NE(error_of([&] { validate(m); }).find("top_k: each token goes to between 1"),
            std::string::npos);
}

TEST(ModelLoad, UnknownNamesListTheZoo) {
  const std::string err = error_of([] { load_model("llama-3-8b"); });
  EXPECT_NE(err.find("unknown model 'llama-3-8b'"), std::string::npos) << err;
  EXPECT_NE(err.find("known models: deepseek-moe-16b, gpt3-1.3b"), std::string::npos) << err;
  EXPECT_NE(err.find("phi-2"), std::string::npos) << err;
  EXPECT_NE(error_of([] { load_model(""); }).find("no model given"), std::string::npos);
  EXPECT_NE(error_of([] {
              load_model("/nonexistent/m.json");
            }).find("cannot open model file '/nonexistent/m.json'"),
            std::string::npos);
}

TEST(ModelLoad, UserFileLoadsByPath) {
  const test::TempDir dir;
  const std::string path = (dir.path() / "my-model.json").string();
  {
    json doc = json::parse(kTinyDense);
    doc["name"] = "my-model";
    std::ofstream(path) << doc.dump(2);
  }
  const ModelSpec m = load_model(path);
  EXPECT_EQ(m.name, "my-model");
  EXPECT_EQ(m.origin, path);
  EXPECT_EQ(m.layers, 2);
  EXPECT_EQ(m.params(), parse_model_json(kTinyDense, "tiny.json").params());
  // A bad file names itself.
  std::ofstream(path) << R"({"format": "lagom.model", "version": 1, "name": "x"})";
  EXPECT_EQ(error_of([&] { load_model(path); }).rfind(path + ": ", 0), 0u);
}

}  // namespace
}  // namespace lagom::models
