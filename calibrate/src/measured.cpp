// Reading and writing lagom-validate's measurements (see measured.hpp).
#include "lagom/calibrate/measured.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "lagom/common/error.hpp"
#include "lagom/common/json_reader.hpp"

namespace lagom::calibrate {
namespace {

using json_reader::Ctx;
using nlohmann::json;

double time_field(const Ctx& ctx, const json& obj, const char* key) {
  const json& v = json_reader::require(ctx, obj, key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
    ctx.at(key).fail(
        fmt::format("expected a time in microseconds >= 0, got {}", json_reader::type_of(v)));
  }
  return v.get<double>();
}

std::string text_field(const Ctx& ctx, const json& obj, const char* key) {
  const json* v = json_reader::optional_field(obj, key);
  return v == nullptr ? std::string() : json_reader::get_string(ctx.at(key), *v);
}

}  // namespace

MeasuredStep read_measured(const std::string& path) {
  const std::string text = json_reader::read_text_file(path, "measurements");
  const json doc = json_reader::parse_document(text, path, kMeasuredFormat);
  const Ctx ctx{path, ""};
  json_reader::expect_object(ctx, doc,
                             {"format", "version", "workload", "gpu", "date", "host", "steps",
                              "standins", "step_time_us", "ops"});
  if (json_reader::get_string(ctx.at("format"), json_reader::require(ctx, doc, "format")) !=
      kMeasuredFormat) {
    ctx.at("format").fail(fmt::format("expected \"{}\"", kMeasuredFormat));
  }
  json_reader::int_field(ctx, doc, "version", kMeasuredVersion, kMeasuredVersion);
  MeasuredStep m;
  m.source = path;
  m.workload = text_field(ctx, doc, "workload");
  m.gpu = text_field(ctx, doc, "gpu");
  m.date = text_field(ctx, doc, "date");
  m.host = text_field(ctx, doc, "host");
  m.steps = json_reader::int_field(ctx, doc, "steps", 1, 1 << 20);
  if (const json* s = json_reader::optional_field(doc, "standins")) {
    m.standins = json_reader::get_bool(ctx.at("standins"), *s);
  }
  m.step_time_us = time_field(ctx, doc, "step_time_us");
  if (m.step_time_us <= 0) {
    ctx.at("step_time_us").fail("must be > 0: a step that took no time was not measured");
  }
  const json& ops = json_reader::require(ctx, doc, "ops");
  if (!ops.is_array()) {
    ctx.at("ops").fail("expected an array of {id, rank, start_us, end_us}");
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Ctx oc = ctx.at("ops").at(i);
    json_reader::expect_object(oc, ops[i], {"id", "rank", "start_us", "end_us"});
    MeasuredOp op;
    op.id = json_reader::get_string(oc.at("id"), json_reader::require(oc, ops[i], "id"));
    op.rank = static_cast<std::uint32_t>(json_reader::int_field(oc, ops[i], "rank", 0, 1 << 30));
    op.start_us = time_field(oc, ops[i], "start_us");
    op.end_us = time_field(oc, ops[i], "end_us");
    if (op.end_us < op.start_us) {
      oc.fail(fmt::format("ends ({} us) before it starts ({} us)", op.end_us, op.start_us));
    }
    m.ops.push_back(std::move(op));
  }
  if (m.ops.empty()) {
    ctx.at("ops").fail("is empty: nothing was measured");
  }
  return m;
}

std::string measured_to_json(const MeasuredStep& m) {
  nlohmann::ordered_json doc;
  doc["format"] = kMeasuredFormat;
  doc["version"] = kMeasuredVersion;
  doc["workload"] = m.workload;
  doc["gpu"] = m.gpu;
  doc["date"] = m.date;
  doc["host"] = m.host;
  doc["steps"] = m.steps;
  doc["standins"] = m.standins;
  doc["step_time_us"] = m.step_time_us;
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const MeasuredOp& op : m.ops) {
    ops.push_back(
        {{"id", op.id}, {"rank", op.rank}, {"start_us", op.start_us}, {"end_us", op.end_us}});
  }
  doc["ops"] = std::move(ops);
  return doc.dump(1) + "\n";
}

}  // namespace lagom::calibrate
