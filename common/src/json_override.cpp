// What-if overrides of JSON fields (json_override.hpp).
#include "lagom/common/json_override.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

#include "lagom/common/error.hpp"

namespace lagom::json_override {
namespace {

using json = nlohmann::ordered_json;

std::vector<std::string> split(std::string_view path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t dot = path.find('.', start);
    parts.emplace_back(path.substr(start, dot == std::string_view::npos ? path.npos : dot - start));
    if (dot == std::string_view::npos) {
      return parts;
    }
    start = dot + 1;
  }
}

bool is_measured(const json& v) {
  return v.is_object() && v.contains("value") && v.contains("source");
}

// The node `path` names, or nullptr.
json* find(json& doc, std::string_view path) {
  json* at = &doc;
  for (const std::string& part : split(path)) {
    if (part.empty()) {
      return nullptr;
    }
    if (at->is_object()) {
      const auto it = at->find(part);
      if (it == at->end()) {
        return nullptr;
      }
      at = &*it;
    } else if (at->is_array()) {
      std::size_t i = 0;
      const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), i);
      if (ec != std::errc() || end != part.data() + part.size() || i >= at->size()) {
        return nullptr;
      }
      at = &(*at)[i];
    } else {
      return nullptr;
    }
  }
  return at;
}

const char* kind_of(const json& v) {
  return v.is_number()    ? "a number"
         : v.is_string()  ? "a string"
         : v.is_boolean() ? "a boolean"
         : v.is_array()   ? "an array"
         : v.is_object()  ? "an object"
                          : "null";
}

// Leaves, arrays and measured values are what an override may name; arrays' elements too.
void collect(const json& v, const std::string& prefix, std::vector<std::string>& out) {
  if (!prefix.empty() && (is_measured(v) || !v.is_object())) {
    out.push_back(prefix);
  }
  if (is_measured(v)) {
    return;
  }
  const auto join = [&](const std::string& key) {
    return prefix.empty() ? key : prefix + "." + key;
  };
  if (v.is_object()) {
    for (const auto& [key, child] : v.items()) {
      collect(child, join(key), out);
    }
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      collect(v[i], join(std::to_string(i)), out);
    }
  }
}

std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

Override parse(Op op, std::string_view spec) {
  const char* flag = op == Op::kSet ? "--set" : "--scale";
  const std::size_t eq = spec.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == spec.size()) {
    throw Error(fmt::format("{} '{}': expected PATH={}, e.g. {} {}", flag, spec,
                            op == Op::kSet ? "VALUE" : "FACTOR", flag,
                            op == Op::kSet ? "network.nic_speed_Gbps=800" : "gpu.hbm_GBps=1.5"));
  }
  Override o;
  o.op = op;
  o.path = std::string(spec.substr(0, eq));
  o.value = std::string(spec.substr(eq + 1));
  o.text = fmt::format("{} {}", flag, spec);
  if (op == Op::kScale) {
    const json parsed = json::parse(o.value, nullptr, false);
    const double f = parsed.is_number() ? parsed.get<double>() : 0;
    if (!parsed.is_number() || !std::isfinite(f) || !(f > 0)) {
      throw Error(
          fmt::format("{}: the factor must be a positive number, got '{}'", o.text, o.value));
    }
  }
  return o;
}

bool has_path(const json& doc, std::string_view path) {
  return find(const_cast<json&>(doc), path) != nullptr;
}

void apply(json& doc, const Override& o, std::string_view origin) {
  json* at = find(doc, o.path);
  if (at == nullptr) {
    throw Error(fmt::format("{}: {} has no field '{}'", o.text, origin, o.path));
  }
  // A measured value's parts: its value is the value (its source then records the override);
  // its source only changes with it.
  if (const auto dot = o.path.rfind('.'); dot != std::string::npos) {
    json* parent = find(doc, std::string_view(o.path).substr(0, dot));
    const std::string_view leaf = std::string_view(o.path).substr(dot + 1);
    if (parent != nullptr && is_measured(*parent)) {
      if (leaf == "source") {
        throw Error(
            fmt::format("{}: a measured value's source records where it came from; set "
                        "'{}' and the override is recorded there",
                        o.text, o.path.substr(0, dot)));
      }
      if (leaf == "value") {
        at = parent;
      }
    }
  }
  json* target = is_measured(*at) ? &(*at)["value"] : at;
  if (o.op == Op::kScale) {
    if (!target->is_number()) {
      throw Error(fmt::format("{}: {}: '{}' is {}, not a number", o.text, origin, o.path,
                              kind_of(*target)));
    }
    const double scaled = target->get<double>() * std::strtod(o.value.c_str(), nullptr);
    if (!std::isfinite(scaled)) {
      throw Error(fmt::format("{}: {}: '{}' times {} is not a finite number", o.text, origin,
                              o.path, o.value));
    }
    if (target->is_number_integer() && scaled == std::floor(scaled) && std::abs(scaled) < 9.0e15) {
      *target = static_cast<std::int64_t>(scaled);
    } else {
      *target = scaled;
    }
  } else {
    json v = json::parse(o.value, nullptr, false);
    if (v.is_discarded()) {
      v = o.value;  // a bare word: a string
    }
    const bool same =
        (v.is_number() && target->is_number()) || (v.is_string() && target->is_string()) ||
        (v.is_boolean() && target->is_boolean()) || (v.is_array() && target->is_array()) ||
        (v.is_object() && target->is_object());
    if (!same && target->is_number() && v.is_string()) {
      throw Error(
          fmt::format("{}: {}: '{}' is a number and '{}' is not one (JSON syntax: 800, "
                      "0.5, 1e3)",
                      o.text, origin, o.path, o.value));
    }
    if (!same) {
      throw Error(fmt::format("{}: {}: '{}' is {}, not {}", o.text, origin, o.path,
                              kind_of(*target), kind_of(v)));
    }
    *target = std::move(v);
  }
  if (is_measured(*at)) {
    (*at)["source"] = fmt::format(
        "what-if {} (was: {})", o.text,
        (*at)["source"].is_string() ? (*at)["source"].get<std::string>() : (*at)["source"].dump());
  }
}

std::vector<std::string> paths(const json& doc) {
  std::vector<std::string> out;
  collect(doc, "", out);
  return out;
}

std::vector<std::string> nearest(std::string_view path, const std::vector<std::string>& candidates,
                                 std::size_t count) {
  std::vector<std::pair<std::size_t, std::size_t>> scored;  // distance, index
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    // The last component counts most: "nic_speed_gbps" should find "network.nic_speed_Gbps".
    const std::string_view c = candidates[i];
    const std::string_view tail = c.substr(c.rfind('.') == c.npos ? 0 : c.rfind('.') + 1);
    const std::string_view ptail =
        path.substr(path.rfind('.') == path.npos ? 0 : path.rfind('.') + 1);
    scored.emplace_back(std::min(distance(path, c), 2 * distance(ptail, tail) + 1), i);
  }
  std::stable_sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (std::size_t k = 0; k < std::min(count, scored.size()); ++k) {
    out.push_back(candidates[scored[k].second]);
  }
  return out;
}

}  // namespace lagom::json_override
