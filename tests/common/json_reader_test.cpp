// The shared JSON parse: a key given twice in one object is refused with its path, in every
// reader (they all parse through json_reader).
#include "lagom/common/json_reader.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "lagom/common/error.hpp"
#include "lagom/topologies/cluster_spec.hpp"
#include "lagom/traces/workload_json.hpp"
#include "strings.hpp"
#include "test_util.hpp"

namespace lagom {
namespace {

std::string error_of(const std::string& text) {
  try {
    (void)json_reader::parse_document(text, "doc.json", "x");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(JsonReader, AKeyGivenTwiceIsRefusedWithItsPath) {
  EXPECT_EQ(error_of(R"({"a": 1, "a": 2})"),
            "doc.json: a: the key 'a' is given twice in one object (a JSON reader keeps only one "
            "of them; give each key once)");
  EXPECT_NE(error_of(R"({"x": [{"b": 1}, {"c": [0, {"d": 1, "d": 1}]}]})")
                .find("doc.json: x[1].c[1].d: the key 'd'"),
            std::string::npos);
  // Past the linear scan's 32 keys, the set takes over.
  std::string many = "{";
  for (int i = 0; i < 40; ++i) {
    many += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
  }
  EXPECT_NE(error_of(many + "\"k7\": 0}").find("doc.json: k7: the key 'k7'"), std::string::npos);
  EXPECT_EQ(error_of(many + "\"k40\": 0}"), "");
}

TEST(JsonReader, TheSameKeyInDifferentObjectsIsFine) {
  EXPECT_EQ(error_of(R"({"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}], "c": {"a": [1, 1]}})"), "");
  const auto doc = json_reader::parse_ordered_json(R"({"z": 1, "a": {"z": 2}})", "o");
  EXPECT_EQ(doc.begin().key(), "z");  // the ordered parse keeps the document's order
  EXPECT_EQ(doc["a"]["z"], 2);
}

// The readers that were found keeping the last of two values: a workload op's duration and a
// cluster's NIC speed.
TEST(JsonReader, ReadersRefuseDuplicatedFields) {
  const std::string workload = R"({"format": "lagom.workload", "version": 1,
    "ranks": [{"rank": 0, "streams": [{"stream": "s", "ops": [
      {"id": "a", "kind": "compute", "duration_us": 10, "duration_us": 99}]}]}]})";
  const std::string w =
      test::error_of([&] { (void)traces::parse_workload_json(workload, "w.json"); });
  EXPECT_TRUE(test::contains(w, "ranks[0].streams[0].ops[0].duration_us")) << w;
  const std::string cluster = R"({"format": "lagom.cluster", "version": 1, "name": "c",
    "network": {"nic_speed_Gbps": 400, "nic_speed_Gbps": 4}})";
  const std::string c =
      test::error_of([&] { (void)topologies::parse_cluster_json(cluster, "c.json"); });
  EXPECT_TRUE(test::contains(c, "network.nic_speed_Gbps: the key")) << c;
}

}  // namespace
}  // namespace lagom
