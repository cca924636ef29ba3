// What-if overrides of a JSON document's fields: `--set PATH=VALUE` and `--scale PATH=FACTOR`
// on the cluster and profile documents, applied before they are parsed, so the readers'
// validation sees the result (docs/whatif.md).
//
// A PATH is dot-separated object keys and array indices ("network.nic_speed_Gbps",
// "network.nics.0.gpus"). A path naming a measured value ({"value": ..., "source": ...}, as a
// hardware profile stores its numbers) sets its value and records the override in its source.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace lagom::json_override {

enum class Op { kSet, kScale };

struct Override {
  Op op = Op::kSet;
  std::string path;
  std::string value;  // as written: JSON (3, true, "x", [0, 1]) or a bare string
  std::string text;   // "--set network.nic_speed_Gbps=800", for reports and sources
};

// "network.nic_speed_Gbps=800" -> an override; lagom::Error when there is no '=' or no path,
// or when a --scale factor is not a positive finite number.
Override parse(Op op, std::string_view spec);

// Whether `path` names a field of `doc`.
bool has_path(const nlohmann::ordered_json& doc, std::string_view path);

// Applies `o` to `doc`; lagom::Error (naming `o.text` and `origin`) when the path is missing,
// --scale meets a value that is not a number, or --set would change a field's JSON type (a
// number for a string, ...). Whole numbers stay whole under --scale only when the result is.
void apply(nlohmann::ordered_json& doc, const Override& o, std::string_view origin);

// Every path that leads to a number, string, boolean or array in `doc` (measured values stand
// for their "value"), in document order: what an override may name.
std::vector<std::string> paths(const nlohmann::ordered_json& doc);

// The `count` candidates closest to `path` by edit distance (ties in candidate order).
std::vector<std::string> nearest(std::string_view path, const std::vector<std::string>& candidates,
                                 std::size_t count = 3);

}  // namespace lagom::json_override
