// HardwareProfile format v1: built-in profiles, lookup by GPU type, exact JSON round trip, and
// the strict reader's errors (origin and JSON path in every message).
#include "lagom/hardware/profile.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "lagom/common/error.hpp"
#include "lagom/topologies/cluster_spec.hpp"
#include "test_util.hpp"

namespace lagom::hardware {
namespace {

using nlohmann::json;
using test::error_of;

constexpr const char* kLinkNames[] = {"nvlink", "pcie", "network"};
constexpr const char* kProtoNames[] = {"LL", "LL128", "Simple"};

// Calls f(json_path, measured) for every number of a profile, in the format's order, with the
// path the reader names in its errors.
template <typename Profile, typename F>
void for_each_measured(Profile& p, F&& f) {
  f("gpu.sms", p.gpu.sms);
  f("gpu.hbm_GBps", p.gpu.hbm_GBps);
  f("gpu.bf16_TFLOPS", p.gpu.bf16_TFLOPS);
  f("gpu.fp32_TFLOPS", p.gpu.fp32_TFLOPS);
  f("gpu.l2_MiB", p.gpu.l2_MiB);
  f("gpu.smem_per_sm_KiB", p.gpu.smem_per_sm_KiB);
  f("gpu.max_threads_per_sm", p.gpu.max_threads_per_sm);
  f("gpu.max_blocks_per_sm", p.gpu.max_blocks_per_sm);
  f("collective.launch_us", p.collective.launch_us);
  f("collective.per_channel_us", p.collective.per_channel_us);
  f("collective.nvls_efficiency", p.collective.nvls_efficiency);
  f("collective.nvls_step_us", p.collective.nvls_step_us);
  f("collective.nvls_chunk_us", p.collective.nvls_chunk_us);
  for (int k = 0; k < static_cast<int>(kProfiledLinks.size()); ++k) {
    const std::string lk = std::string("collective.links.") + kLinkNames[k];
    auto& link = p.collective.links[k];
    f(lk + ".efficiency", link.efficiency);
    for (int q = 0; q < nccl::kProtocolCount; ++q) {
      const std::string pq = lk + "." + kProtoNames[q];
      auto& proto = link.protocols[q];
      f(pq + ".step_us", proto.step_us);
      f(pq + ".chunk_us", proto.chunk_us);
      f(pq + ".channel_GBps", proto.channel_GBps);
      f(pq + ".saturation_threads", proto.saturation_threads);
    }
  }
}

std::vector<std::string> measured_paths() {
  std::vector<std::string> out;
  HardwareProfile p;
  for_each_measured(p, [&](const std::string& path, Measured&) { out.push_back(path); });
  return out;
}

// The JSON value at a dotted path ("collective.links.nvlink.LL"), created if missing.
json& at(json& doc, const std::string& dotted) {
  json* v = &doc;
  std::size_t start = 0;
  while (start <= dotted.size()) {
    const std::size_t dot = std::min(dotted.find('.', start), dotted.size());
    v = &(*v)[dotted.substr(start, dot - start)];
    start = dot + 1;
  }
  return *v;
}
// Removes the last key of a dotted path.
void erase(json& doc, const std::string& dotted) {
  const std::size_t dot = dotted.rfind('.');
  if (dot == std::string::npos) {
    doc.erase(dotted);
  } else {
    at(doc, dotted.substr(0, dot)).erase(dotted.substr(dot + 1));
  }
}

// Every field, exactly (origin aside: it says where a copy was read from).
void expect_same(const HardwareProfile& a, const HardwareProfile& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.gpu_type, b.gpu_type);
  EXPECT_EQ(a.description, b.description);
  EXPECT_EQ(a.calibration, b.calibration);
  std::vector<const Measured*> mb;
  for_each_measured(b, [&](const std::string&, const Measured& m) { mb.push_back(&m); });
  std::size_t i = 0;
  for_each_measured(a, [&](const std::string& path, const Measured& m) {
    // Bitwise: the writer must print enough digits to read back the same double.
    EXPECT_EQ(m.value, mb[i]->value) << path;
    EXPECT_EQ(m.source, mb[i]->source) << path;
    ++i;
  });
}

json h100_doc() {
  static const json doc = json::parse(profile_to_json(load_profile("h100-sxm")));
  return doc;
}

// --- Built-in profiles --------------------------------------------------------------------------

TEST(HardwareProfile, EveryBuiltinLoadsWithASourceForEveryNumber) {
  const std::vector<std::string> names = builtin_profiles();
  for (const char* expected : {"a100-sxm", "a40", "h100-sxm", "h200-sxm"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  for (const std::string& name : names) {
    const HardwareProfile p = load_profile(name);
    EXPECT_EQ(p.name, name);
    EXPECT_EQ(p.origin, "builtin:" + name);
    EXPECT_FALSE(p.gpu_type.empty()) << name;
    EXPECT_FALSE(p.calibration.empty()) << name << ": says whether it was calibrated";
    for_each_measured(p, [&](const std::string& path, const Measured& m) {
      EXPECT_TRUE(std::isfinite(m.value)) << name << " " << path;
      EXPECT_FALSE(m.source.empty()) << name << " " << path;
    });
    // A channel cannot exceed what the link gives a whole GPU: efficiencies are fractions.
    for (const LinkParams& l : p.collective.links) {
      EXPECT_GT(l.efficiency.value, 0) << name;
      EXPECT_LE(l.efficiency.value, 1) << name;
    }
    EXPECT_LE(p.collective.nvls_efficiency.value, 1) << name;
  }
}

// The GPU numbers against reference/nccl.md §6 (and the Lagom paper for the A40: 84 SMs).
TEST(HardwareProfile, BuiltinGpuNumbersMatchTheReference) {
  struct Row {
    const char* name;
    double sms;
    double hbm_GBps;
    double bf16_TFLOPS;
  };
  for (const Row& r : {Row{"a100-sxm", 108, 2039, 312}, Row{"h100-sxm", 132, 3350, 989.4},
                       Row{"h200-sxm", 132, 4800, 989}, Row{"a40", 84, 696, 149.7}}) {
    const HardwareProfile p = load_profile(r.name);
    EXPECT_EQ(p.gpu.sms.value, r.sms) << r.name;
    EXPECT_EQ(p.gpu.hbm_GBps.value, r.hbm_GBps) << r.name;
    EXPECT_EQ(p.gpu.bf16_TFLOPS.value, r.bf16_TFLOPS) << r.name;
  }
}

// Every cluster preset has a built-in profile for its GPU type.
TEST(HardwareProfile, EveryClusterPresetGpuHasADefaultProfile) {
  const std::vector<std::string> builtins = builtin_profiles();
  for (const std::string& preset : topologies::list_cluster_presets()) {
    const topologies::ClusterSpec spec = topologies::load_cluster_spec(preset);
    const HardwareProfile p = default_profile_for_gpu(spec.gpu_type);
    EXPECT_EQ(p.gpu_type, spec.gpu_type) << preset;
    EXPECT_EQ(p.origin, "builtin:" + p.name) << preset;
    EXPECT_NE(std::find(builtins.begin(), builtins.end(), p.name), builtins.end()) << preset;
  }
}

TEST(HardwareProfile, UnknownGpuTypeListsTheKnownOnes) {
  const std::string e = error_of([] { default_profile_for_gpu("B200-SXM-192GB"); });
  EXPECT_NE(e.find("'B200-SXM-192GB'"), std::string::npos) << e;
  for (const std::string& name : builtin_profiles()) {
    EXPECT_NE(e.find(load_profile(name).gpu_type), std::string::npos) << e;
  }
}

TEST(HardwareProfile, UnknownBuiltinNameListsTheKnownOnes) {
  const std::string e = error_of([] { load_profile("h100-pcie"); });
  EXPECT_NE(e.find("'h100-pcie'"), std::string::npos) << e;
  for (const std::string& name : builtin_profiles()) {
    EXPECT_NE(e.find(name), std::string::npos) << e;
  }
}

// --- Round trip ---------------------------------------------------------------------------------

TEST(HardwareProfile, JsonRoundTripIsExactForEveryBuiltin) {
  for (const std::string& name : builtin_profiles()) {
    const HardwareProfile p = load_profile(name);
    const std::string text = profile_to_json(p);
    const HardwareProfile back = parse_profile_json(text, "roundtrip.json");
    expect_same(p, back);
    EXPECT_EQ(back.origin, "roundtrip.json");
    EXPECT_EQ(profile_to_json(back), text) << name;
  }
}

// Numbers that need all 17 significant digits, and text that needs escaping.
TEST(HardwareProfile, JsonRoundTripKeepsAwkwardValuesAndText) {
  HardwareProfile p = load_profile("h100-sxm");
  p.description = "quote \" backslash \\ newline \n tab \t section \u00a7 micro \u00b5s";
  p.calibration = {"fit on 01-h100x8: median |err| 1.6%", "", "line with \"quotes\""};
  p.collective.launch_us.value = 1.0 / 3.0;
  p.collective.per_channel_us.value = 0.1 + 0.2;
  p.collective.nvls_efficiency.value = std::nextafter(0.85, 1.0);
  p.collective.link(nccl::LinkClass::kNetwork).proto(nccl::Protocol::kLL).step_us.value = 1e-7;
  p.collective.link(nccl::LinkClass::kPcie).proto(nccl::Protocol::kSimple).channel_GBps.value =
      12345.678901234567;
  p.gpu.l2_MiB.value = 0;
  p.gpu.sms.source = "measured: cudaGetDeviceProperties \"multiProcessorCount\"";
  const std::string text = profile_to_json(p);
  const HardwareProfile back = parse_profile_json(text, "awkward.json");
  expect_same(p, back);
  EXPECT_EQ(profile_to_json(back), text);
}

// An empty description and calibration list are written and read back as empty.
TEST(HardwareProfile, OptionalFieldsMayBeAbsent) {
  json doc = h100_doc();
  doc.erase("description");
  doc.erase("calibration");
  const HardwareProfile p = parse_profile_json(doc.dump(), "minimal.json");
  EXPECT_EQ(p.description, "");
  EXPECT_TRUE(p.calibration.empty());
  expect_same(p, parse_profile_json(profile_to_json(p), "again.json"));
}

TEST(HardwareProfile, LoadsAFileAndNamesItInErrors) {
  test::TempDir dir;
  const std::string good = (dir.path() / "mine.json").string();
  std::ofstream(good) << profile_to_json(load_profile("a40"));
  const HardwareProfile p = load_profile(good);
  EXPECT_EQ(p.origin, good);
  EXPECT_EQ(p.name, "a40");

  json doc = json::parse(profile_to_json(p));
  doc["gpu"]["sms"]["value"] = -1;
  const std::string bad = (dir.path() / "bad.json").string();
  std::ofstream(bad) << doc.dump();
  const std::string e = error_of([&] { load_profile(bad); });
  EXPECT_EQ(e.rfind(bad + ": gpu.sms.value: ", 0), 0u) << e;
}

// --- Bad input ----------------------------------------------------------------------------------

// The reader's message is "<origin>: <JSON path>: <what>"; "(top level)" for the document.
void expect_error(const std::string& text, const std::string& path, const std::string& what) {
  const std::string e = error_of([&] { parse_profile_json(text, "bad.json"); });
  EXPECT_EQ(e.rfind("bad.json: " + path + ": ", 0), 0u) << "expected path " << path << ": " << e;
  EXPECT_NE(e.find(what), std::string::npos) << "expected '" << what << "': " << e;
}

void expect_error(const std::function<void(json&)>& edit, const std::string& path,
                  const std::string& what) {
  json doc = h100_doc();
  edit(doc);
  SCOPED_TRACE(doc.dump().substr(0, 200));
  expect_error(doc.dump(), path, what);
}

TEST(HardwareProfile, NotJsonOrNotAProfile) {
  for (const char* text : {"{\"format\": ", "{]", "not json", "{\"version\": 1e400}"}) {
    const std::string e = error_of([&] { parse_profile_json(text, "bad.json"); });
    EXPECT_EQ(e.rfind("bad.json: not valid JSON", 0), 0u) << e;
  }
  EXPECT_EQ(
      error_of([] { parse_profile_json(" \n", "bad.json"); }),
      "bad.json: the file is empty; expected a JSON object with \"format\": \"lagom.profile\"");
  expect_error("[]", "(top level)", "expected a JSON object");
  expect_error("42", "(top level)", "expected a JSON object");
  expect_error([](json& d) { d["format"] = "lagom.cluster"; }, "format", "\"lagom.profile\"");
  expect_error([](json& d) { d["format"] = 1; }, "format", "must be a string");
  expect_error([](json& d) { d.erase("format"); }, "(top level)",
               "missing required field 'format'");
  expect_error([](json& d) { d["version"] = 2; }, "version", "unsupported version 2");
  expect_error([](json& d) { d["version"] = "1"; }, "version", "unsupported version \"1\"");
  expect_error([](json& d) { d["version"] = 1.5; }, "version", "unsupported version 1.5");
  expect_error([](json& d) { d.erase("version"); }, "(top level)",
               "missing required field 'version'");
  expect_error([](json& d) { d["name"] = 5; }, "name", "must be a string");
  expect_error([](json& d) { d["description"] = json::array(); }, "description",
               "must be a string");
  expect_error([](json& d) { d.erase("gpu_type"); }, "(top level)",
               "missing required field 'gpu_type'");
  expect_error([](json& d) { d.erase("gpu"); }, "(top level)", "missing required field 'gpu'");
  expect_error([](json& d) { d.erase("collective"); }, "(top level)",
               "missing required field 'collective'");
  expect_error([](json& d) { d["calibration"] = "fitted"; }, "calibration",
               "must be an array of strings");
  expect_error([](json& d) { d["calibration"] = json::array({1}); }, "calibration",
               "must be an array of strings");
}

TEST(HardwareProfile, UnknownFieldsAreErrorsAtEveryLevel) {
  expect_error([](json& d) { d["gpus"] = 8; }, "(top level)", "unknown field 'gpus'");
  expect_error([](json& d) { d["gpu"]["tensor_cores"] = d["gpu"]["sms"]; }, "gpu",
               "unknown field 'tensor_cores'");
  expect_error([](json& d) { d["collective"]["nvls_latency_us"] = d["collective"]["launch_us"]; },
               "collective", "unknown field 'nvls_latency_us'");
  expect_error([](json& d) { d["collective"]["links"]["nvswitch"] = 1; }, "collective.links",
               "unknown field 'nvswitch'");
  expect_error([](json& d) { d["collective"]["links"]["pcie"]["LL64"] = 1; },
               "collective.links.pcie", "unknown field 'LL64'");
  expect_error([](json& d) { d["collective"]["links"]["nvlink"]["LL128"]["bandwidth_GBps"] = 1; },
               "collective.links.nvlink.LL128", "unknown field 'bandwidth_GBps'");
  // Every measured number is exactly {value, source}: a unit field is a typo of the schema.
  for (const std::string& path : measured_paths()) {
    expect_error([&](json& d) { at(d, path)["unit"] = "us"; }, path, "unknown field 'unit'");
  }
}

TEST(HardwareProfile, EveryNumberNeedsAValueAndANonEmptySource) {
  for (const std::string& path : measured_paths()) {
    expect_error([&](json& d) { erase(d, path); }, path.substr(0, path.rfind('.')),
                 "missing required field '" + path.substr(path.rfind('.') + 1) + "'");
    expect_error([&](json& d) { at(d, path).erase("value"); }, path,
                 "missing required field 'value'");
    expect_error([&](json& d) { at(d, path).erase("source"); }, path,
                 "missing required field 'source'");
    expect_error([&](json& d) { at(d, path)["source"] = ""; }, path + ".source",
                 "must say where the number came from");
    expect_error([&](json& d) { at(d, path)["source"] = 1; }, path + ".source", "must be a string");
    expect_error([&](json& d) { at(d, path)["value"] = "3"; }, path + ".value", "must be a number");
    expect_error([&](json& d) { at(d, path)["value"] = nullptr; }, path + ".value",
                 "must be a number");
    expect_error([&](json& d) { at(d, path) = 3; }, path, "must be an object");
  }
}

// Ranges from hardware_profile.cpp: each bound is named in the message.
TEST(HardwareProfile, OutOfRangeNumbersNameTheirRange) {
  struct Case {
    std::string path;
    double value;
    std::string range;
  };
  const std::vector<Case> cases = {
      {"gpu.sms", 0, "[1, 10000]"},
      {"gpu.sms", 20000, "[1, 10000]"},
      {"gpu.hbm_GBps", 0.5, "[1, 1000000]"},
      {"gpu.bf16_TFLOPS", 0, "[0.1, 1000000]"},
      {"gpu.l2_MiB", -1, "[0, 10000]"},
      {"gpu.max_threads_per_sm", 16, "[32, 100000]"},
      {"gpu.max_blocks_per_sm", 0, "[1, 1000]"},
      {"collective.launch_us", -0.1, "[0, 100000]"},
      {"collective.per_channel_us", 2000, "[0, 1000]"},
      {"collective.nvls_efficiency", 0, "[0.01, 2]"},
      {"collective.nvls_efficiency", 2.5, "[0.01, 2]"},
      {"collective.nvls_step_us", -1, "[0, 10000]"},
      {"collective.links.pcie.efficiency", 1.6, "[0.01, 1.5]"},
      {"collective.links.network.efficiency", 0, "[0.01, 1.5]"},
      {"collective.links.nvlink.LL.step_us", -1, "[0, 10000]"},
      {"collective.links.nvlink.LL128.chunk_us", 1001, "[0, 1000]"},
      {"collective.links.network.Simple.channel_GBps", 0, "[0.001, 100000]"},
      {"collective.links.pcie.Simple.saturation_threads", 16, "[32, 1024]"},
      {"collective.links.pcie.LL.saturation_threads", 2048, "[32, 1024]"},
  };
  for (const Case& c : cases) {
    expect_error([&](json& d) { at(d, c.path)["value"] = c.value; }, c.path + ".value",
                 "outside the plausible range " + c.range);
  }
  // 1e400 overflows a double: an error (never a silent infinity, never an exception other than
  // lagom::Error).
  std::string text = profile_to_json(load_profile("h100-sxm"));
  const std::string needle = "\"value\": 132.0,";
  ASSERT_NE(text.find(needle), std::string::npos);
  text.replace(text.find(needle), needle.size(), "\"value\": 1e400,");
  const std::string e = error_of([&] { parse_profile_json(text, "bad.json"); });
  EXPECT_EQ(e.rfind("bad.json: not valid JSON", 0), 0u) << e;
}

TEST(HardwareProfile, SmCountMustBeAWholeNumber) {
  expect_error([](json& d) { d["gpu"]["sms"]["value"] = 132.5; }, "gpu.sms.value",
               "must be a whole number");
  EXPECT_NO_THROW(parse_profile_json(
      [] {
        json d = h100_doc();
        d["gpu"]["sms"]["value"] = 132.0;
        return d.dump();
      }(),
      "ok.json"));
}

// A section of the wrong JSON type is named as such, not as a list of odd "unknown fields".
TEST(HardwareProfile, SectionsMustBeObjects) {
  expect_error([](json& d) { d["gpu"] = json::array({1, 2}); }, "gpu", "expected an object");
  expect_error([](json& d) { d["gpu"] = 5; }, "gpu", "expected an object");
  expect_error([](json& d) { d["collective"] = "fast"; }, "collective", "expected an object");
  expect_error([](json& d) { d["collective"]["links"] = json::array(); }, "collective.links",
               "expected an object");
  expect_error([](json& d) { d["collective"]["links"]["nvlink"]["LL"] = 0.5; },
               "collective.links.nvlink.LL", "expected an object");
}

TEST(HardwareProfile, FieldsListEveryNumberOfTheFormat) {
  // profile_fields() names every {"value", "source"} the writer emits, by its JSON path, once.
  HardwareProfile p = load_profile("a40");
  const nlohmann::json doc = nlohmann::json::parse(profile_to_json(p));
  std::vector<std::string> written;
  std::function<void(const nlohmann::json&, const std::string&)> walk =
      [&](const nlohmann::json& j, const std::string& path) {
        if (j.is_object() && j.contains("value") && j.contains("source")) {
          written.push_back(path);
          return;
        }
        if (j.is_object()) {
          for (const auto& [k, v] : j.items()) {
            walk(v, path.empty() ? k : path + "." + k);
          }
        }
      };
  walk(doc, "");
  std::vector<std::string> listed;
  for (const ProfileField& f : profile_fields(p)) {
    listed.push_back(f.path);
  }
  std::sort(written.begin(), written.end());
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(listed, written);
  // And each points at the number: scaling through it changes what is written.
  for (const ProfileField& f : profile_fields(p)) {
    f.number->value += 1;
  }
  const nlohmann::json changed = nlohmann::json::parse(profile_to_json(p));
  EXPECT_EQ(changed["gpu"]["sms"]["value"].get<double>(),
            doc["gpu"]["sms"]["value"].get<double>() + 1);
  EXPECT_TRUE(is_prior(load_profile("a40").contention.l2_spill));
  EXPECT_FALSE(is_prior(load_profile("a40").gpu.sms));
  EXPECT_FALSE(is_prior(load_profile("h100-sxm").collective.nvls_efficiency));  // fitted
}

}  // namespace
}  // namespace lagom::hardware
