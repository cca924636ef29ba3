#include "lagom/common/json_override.hpp"

#include <gtest/gtest.h>

#include "lagom/common/error.hpp"

namespace lagom::json_override {
namespace {

using json = nlohmann::ordered_json;

json doc() {
  return json::parse(R"({"network": {"nic_speed_Gbps": 400, "nics": [{"gpus": [0, 1]}],
                          "technology": "IB"},
                          "gpu": {"sms": {"value": 84, "source": "datasheet"}},
                          "flag": true})");
}

TEST(JsonOverride, SetsAndScalesKeepingTypes) {
  json d = doc();
  apply(d, parse(Op::kSet, "network.nic_speed_Gbps=800"), "x");
  EXPECT_EQ(d["network"]["nic_speed_Gbps"], 800);
  apply(d, parse(Op::kScale, "network.nic_speed_Gbps=1.5"), "x");
  EXPECT_TRUE(d["network"]["nic_speed_Gbps"].is_number_integer());  // 1200 is whole
  EXPECT_EQ(d["network"]["nic_speed_Gbps"], 1200);
  apply(d, parse(Op::kScale, "network.nic_speed_Gbps=0.001"), "x");
  EXPECT_DOUBLE_EQ(d["network"]["nic_speed_Gbps"].get<double>(), 1.2);
  apply(d, parse(Op::kSet, "network.nics.0.gpus=[2, 3]"), "x");
  EXPECT_EQ(d["network"]["nics"][0]["gpus"], json::array({2, 3}));
  apply(d, parse(Op::kSet, "network.technology=RoCE"), "x");  // a bare word is a string
  EXPECT_EQ(d["network"]["technology"], "RoCE");
  apply(d, parse(Op::kSet, "flag=false"), "x");
  EXPECT_EQ(d["flag"], false);
}

TEST(JsonOverride, MeasuredValuesRecordTheOverride) {
  json d = doc();
  apply(d, parse(Op::kScale, "gpu.sms=0.5"), "x");
  EXPECT_EQ(d["gpu"]["sms"]["value"], 42);
  EXPECT_EQ(d["gpu"]["sms"]["source"], "what-if --scale gpu.sms=0.5 (was: datasheet)");
}

TEST(JsonOverride, ErrorsNameTheOverride) {
  json d = doc();
  EXPECT_THROW(apply(d, parse(Op::kSet, "network.nope=1"), "x"), Error);
  EXPECT_THROW(apply(d, parse(Op::kSet, "network.nics.5.gpus=[1]"), "x"), Error);
  EXPECT_THROW(apply(d, parse(Op::kSet, "network.technology=3"), "x"), Error);
  EXPECT_THROW(apply(d, parse(Op::kScale, "network.technology=3"), "x"), Error);
  EXPECT_THROW(parse(Op::kScale, "a=0"), Error);
  EXPECT_THROW(parse(Op::kScale, "a=-1"), Error);
  EXPECT_THROW(parse(Op::kScale, "a=inf"), Error);
  EXPECT_THROW(parse(Op::kSet, "=3"), Error);
  EXPECT_THROW(parse(Op::kSet, "a="), Error);
  try {
    apply(d, parse(Op::kSet, "network.nope=1"), "preset:x");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--set network.nope=1: preset:x has no field 'network.nope'");
  }
}

TEST(JsonOverride, PathsAndNearest) {
  const std::vector<std::string> p = paths(doc());
  EXPECT_EQ(
      p, (std::vector<std::string>{"network.nic_speed_Gbps", "network.nics", "network.nics.0.gpus",
                                   "network.nics.0.gpus.0", "network.nics.0.gpus.1",
                                   "network.technology", "gpu.sms", "flag"}));
  EXPECT_EQ(nearest("network.nic_speed_gbps", p, 1)[0], "network.nic_speed_Gbps");
  EXPECT_EQ(nearest("sms", p, 1)[0], "gpu.sms");
}

}  // namespace
}  // namespace lagom::json_override
