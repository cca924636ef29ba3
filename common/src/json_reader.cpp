// The strict JSON readers' shared context and checked accessors.
#include "lagom/common/json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lagom/common/error.hpp"

namespace lagom::json_reader {

using nlohmann::json;

Ctx Ctx::at(std::string_view key) const {
  return Ctx{origin, path.empty() ? std::string(key) : fmt::format("{}.{}", path, key)};
}

Ctx Ctx::at(std::size_t index) const {
  return Ctx{origin, fmt::format("{}[{}]", path, index)};
}

void Ctx::fail(std::string_view what) const {
  throw Error(fmt::format("{}: {}{}{}", origin, path, path.empty() ? "" : ": ", what));
}

std::string read_text_file(const std::string& path, std::string_view what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(fmt::format("cannot read {} '{}': it is a directory, not a file", what, path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(fmt::format("cannot open {} '{}': {}", what, path, std::strerror(errno)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    throw Error(fmt::format("cannot read {} '{}'", what, path));
  }
  return std::move(ss).str();
}

namespace {

void refuse_empty(std::string_view text, std::string_view origin, std::string_view format) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    throw Error(fmt::format("{}: the file is empty; expected a JSON object with \"format\": \"{}\"",
                            origin, format));
  }
}

// nlohmann's syntax errors and number overflows (out_of_range.406, "number overflow parsing
// '1e400'") as one Error; its bracketed tag ("[json.exception.parse_error.101] ") dropped.
template <class Json>
Json parse_or_refuse(std::string_view text, std::string_view origin) {
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    if (auto tag_end = what.find("] "); tag_end != std::string::npos) {
      what = what.substr(tag_end + 2);
    }
    const auto* syntax = dynamic_cast<const nlohmann::json::parse_error*>(&e);
    const bool truncated = syntax != nullptr && syntax->byte >= text.size();
    throw Error(fmt::format("{}: not valid JSON: {}{}", origin, what,
                            truncated ? " (the document ends early: is the file truncated?)" : ""));
  }
}

}  // namespace

json parse_document(std::string_view text, std::string_view origin, std::string_view format) {
  refuse_empty(text, origin, format);
  return parse_or_refuse<json>(text, origin);
}

nlohmann::ordered_json parse_ordered_document(std::string_view text, std::string_view origin,
                                              std::string_view format) {
  refuse_empty(text, origin, format);
  return parse_or_refuse<nlohmann::ordered_json>(text, origin);
}

nlohmann::ordered_json parse_ordered_json(std::string_view text, std::string_view origin) {
  return parse_or_refuse<nlohmann::ordered_json>(text, origin);
}

std::string type_of(const json& v) {
  if (v.is_string()) {
    return fmt::format("the string \"{}\"", v.get<std::string>());
  }
  if (v.is_number()) {
    return fmt::format("the number {}", v.dump());
  }
  if (v.is_boolean()) {
    return fmt::format("the boolean {}", v.dump());
  }
  return std::string(v.type_name());
}

void check_known_fields(const Ctx& ctx, const json& obj, std::span<const std::string_view> known,
                        UnknownField style) {
  for (const auto& [key, value] : obj.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) {
      continue;
    }
    if (style == UnknownField::kInPath) {
      ctx.at(key).fail(fmt::format("unknown field (known fields: {})", fmt::join(known, ", ")));
    }
    ctx.fail(fmt::format("unknown field '{}' (known fields: {})", key, fmt::join(known, ", ")));
  }
}

void check_known_fields(const Ctx& ctx, const json& obj,
                        std::initializer_list<std::string_view> known) {
  check_known_fields(ctx, obj, std::span<const std::string_view>(known.begin(), known.size()));
}

void expect_object(const Ctx& ctx, const json& v, std::initializer_list<std::string_view> known) {
  if (!v.is_object()) {
    ctx.fail(fmt::format("expected an object, got {}", type_of(v)));
  }
  check_known_fields(ctx, v, known);
}

const json& require(const Ctx& ctx, const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    ctx.fail(fmt::format("missing required field '{}'", key));
  }
  return *it;
}

const json& require(const Ctx& ctx, const json& obj, const char* key, std::string_view what) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    ctx.fail(fmt::format("missing required field '{}' ({})", key, what));
  }
  return *it;
}

const json* optional_field(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::string get_string(const Ctx& ctx, const json& v) {
  if (!v.is_string()) {
    ctx.fail(fmt::format("expected a string, got {}", type_of(v)));
  }
  return v.get<std::string>();
}

bool get_bool(const Ctx& ctx, const json& v) {
  if (!v.is_boolean()) {
    ctx.fail(fmt::format("expected true or false, got {}", type_of(v)));
  }
  return v.get<bool>();
}

int get_int(const Ctx& ctx, const json& v, int lo, int hi) {
  if (!v.is_number_integer()) {
    ctx.fail(fmt::format("expected an integer, got {}", type_of(v)));
  }
  // Compare as 64-bit so that huge values report themselves rather than wrapping.
  const bool is_neg = !v.is_number_unsigned() && v.get<std::int64_t>() < 0;
  const std::int64_t value = is_neg ? v.get<std::int64_t>()
                                    : static_cast<std::int64_t>(std::min<std::uint64_t>(
                                          v.get<std::uint64_t>(), std::uint64_t{1} << 62));
  if (value < lo || value > hi) {
    ctx.fail(fmt::format("must be between {} and {}, got {}", lo, hi, v.dump()));
  }
  return static_cast<int>(value);
}

int int_field(const Ctx& ctx, const json& obj, const char* key, int lo, int hi) {
  return get_int(ctx.at(key), require(ctx, obj, key), lo, hi);
}

int int_field(const Ctx& ctx, const json& obj, const char* key, int lo, int hi,
              std::string_view what) {
  return get_int(ctx.at(key), require(ctx, obj, key, what), lo, hi);
}

}  // namespace lagom::json_reader
