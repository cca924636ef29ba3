// Placement files (docs/formats/placement.md) and their composition with down nodes.
#include "lagom/models/placement.hpp"

#include <gtest/gtest.h>

#include <string>

#include "lagom/common/error.hpp"
#include "lagom/models/generator.hpp"
#include "lagom/models/model_spec.hpp"

namespace lagom::models {
namespace {

std::string doc(const std::string& body) {
  return R"({"format": "lagom.placement", "version": 1, )" + body + "}";
}

std::string placement_error(const std::string& text, std::int64_t world = 8, std::int64_t gpus = 8,
                            int per_node = 2) {
  try {
    parse_placement(text, "p.json", world, gpus, per_node);
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(Placement, ANodeOrderPlacesWholeNodes) {
  // Four 2-GPU nodes filled in the order 3, 1, 0, 2: positions 0 and 1 on node 3 (GPUs 6, 7)...
  EXPECT_EQ(parse_placement(doc(R"("nodes": [3, 1, 0, 2])"), "p", 8, 8, 2),
            (std::vector<std::uint32_t>{6, 7, 2, 3, 0, 1, 4, 5}));
  EXPECT_EQ(parse_placement(doc(R"("gpus": [1, 0, 2, 3])"), "p", 4, 4, 2),
            (std::vector<std::uint32_t>{1, 0, 2, 3}));
}

TEST(Placement, BadFilesNameTheField) {
  EXPECT_EQ(placement_error(doc(R"("nodes": [3, 1, 0])")),
            "p.json: nodes: expected an array of 4 node numbers (the step has 8 ranks on 2-GPU "
            "nodes), got 3 entries");
  EXPECT_EQ(placement_error(doc(R"("nodes": [3, 1, 0, 1])")),
            "p.json: nodes[3]: node 1 is already nodes[1]");
  EXPECT_EQ(placement_error(doc(R"("nodes": [3, 1, 0, 4])")),
            "p.json: nodes[3]: node 4 is not in the cluster (nodes 0..3)");
  EXPECT_EQ(placement_error(doc(R"("gpus": [0, 1, 2, 3, 4, 5, 6, -1])")),
            "p.json: gpus[7]: GPU -1 is not in the cluster (GPUs 0..7)");
  EXPECT_EQ(placement_error(doc(R"("gpus": [0, 1, 2, 3, 4, 5, 6, 2.5])")),
            "p.json: gpus[7]: expected an integer, got the number 2.5");
  EXPECT_NE(
      placement_error(doc(R"("nodes": [0, 1, 2, 3], "gpus": [0])")).find("give exactly one of"),
      std::string::npos);
  EXPECT_NE(placement_error(doc(R"("node": [0])")).find("unknown field 'node'"), std::string::npos);
  EXPECT_NE(placement_error(R"({"format": "lagom.cluster", "version": 1, "nodes": [0]})")
                .find("p.json: format: expected \"lagom.placement\""),
            std::string::npos);
  EXPECT_NE(
      placement_error(doc(R"("nodes": [0, 1, 2])"), 6, 8, 4).find("do not fill whole 4-GPU nodes"),
      std::string::npos);
  EXPECT_NE(placement_error("").find("p.json"), std::string::npos);
}

TEST(Placement, DownNodesFollowThePlacement) {
  // tp=2, dp=4 on four 2-GPU nodes placed in reverse: replica r runs on node 3 - r. Node 0 down
  // drops replica 3 (not replica 0), and the three kept replicas keep their placed GPUs.
  Parallelism par = parse_parallelism("tp=2,dp=4");
  TrainingConfig cfg;
  cfg.gbs = 8;
  cfg.placement = parse_placement(doc(R"("nodes": [3, 2, 1, 0])"), "p", 8, 8, 2);
  EXPECT_EQ(place_around_down_nodes(par, cfg, {0}, 2), std::vector<int>{3});
  EXPECT_EQ(par.dp, 3);
  EXPECT_EQ(cfg.placement, (std::vector<std::uint32_t>{6, 7, 4, 5, 2, 3}));
  const GeneratedStep step = generate_step(load_model("llama3-8b"), par, cfg);
  for (traces::Rank r = 0; r < 6; ++r) {
    EXPECT_EQ(step.workload.gpu_of(r), cfg.placement[r]) << r;
  }
  // A placement of the wrong size is refused by the generator.
  TrainingConfig bad;
  bad.gbs = 4;
  bad.placement = {0, 1, 2};
  EXPECT_THROW(generate_step(load_model("llama3-8b"), parse_parallelism("tp=2,dp=2"), bad), Error);
}

}  // namespace
}  // namespace lagom::models
