// What the strict JSON readers (cluster, model, workload) share: a context that tracks the JSON
// path for error messages, and checked accessors whose lagom::Error names the document, the path
// and what was expected.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>

namespace lagom::json_reader {

// Where we are in the document: errors read "<origin>: <path>: <what>" ("<origin>: <what>" at
// the top level).
struct Ctx {
  std::string_view origin;
  std::string path;

  Ctx at(std::string_view key) const;  // path.key
  Ctx at(std::size_t index) const;     // path[index]
  [[noreturn]] void fail(std::string_view what) const;
};

// Whether a cluster, model or similar argument names a file rather than a built-in: it contains
// '/' or ends in .json (the rule every `NAME|FILE` argument follows).
inline bool names_a_file(std::string_view name_or_path) {
  return name_or_path.find('/') != std::string_view::npos || name_or_path.ends_with(".json");
}

// The whole file as a string; an Error "cannot open <what> '<path>': <reason>" if it cannot be
// read.
std::string read_text_file(const std::string& path, std::string_view what);

// Parses `text`. An empty text or invalid JSON is an Error naming `origin`; `format` is the value
// the document's "format" field should have, for the hint on an empty file.
nlohmann::json parse_document(std::string_view text, std::string_view origin,
                              std::string_view format);
// The same, keeping the document's key order (sweep files, what-if overrides).
nlohmann::ordered_json parse_ordered_document(std::string_view text, std::string_view origin,
                                              std::string_view format);
// Parses `text` (no format hint): any syntax error and any number JSON cannot hold (1e400) is an
// Error "<origin>: not valid JSON: ...".
nlohmann::ordered_json parse_ordered_json(std::string_view text, std::string_view origin);

// How a value reads in an error: the string "x", the number 3, the boolean true, or the JSON type
// name (null, array, object).
std::string type_of(const nlohmann::json& v);

// Where an unknown field is named: in the message ("unknown field 'x' (known fields: ...)") or as
// the last step of the path ("x: unknown field (known fields: ...)").
enum class UnknownField { kInMessage, kInPath };

// Every key of `obj` is one of `known`.
void check_known_fields(const Ctx& ctx, const nlohmann::json& obj,
                        std::span<const std::string_view> known,
                        UnknownField style = UnknownField::kInMessage);
void check_known_fields(const Ctx& ctx, const nlohmann::json& obj,
                        std::initializer_list<std::string_view> known);

// `v` is an object whose keys are all in `known`.
void expect_object(const Ctx& ctx, const nlohmann::json& v,
                   std::initializer_list<std::string_view> known);

// obj[key]; missing is an error at `ctx`, which may say `what` the field holds.
const nlohmann::json& require(const Ctx& ctx, const nlohmann::json& obj, const char* key);
const nlohmann::json& require(const Ctx& ctx, const nlohmann::json& obj, const char* key,
                              std::string_view what);

// &obj[key], or nullptr when absent.
const nlohmann::json* optional_field(const nlohmann::json& obj, const char* key);

std::string get_string(const Ctx& ctx, const nlohmann::json& v);
bool get_bool(const Ctx& ctx, const nlohmann::json& v);

// An integer in [lo, hi]; huge values report themselves rather than wrapping.
int get_int(const Ctx& ctx, const nlohmann::json& v, int lo, int hi);

// get_int() of the required field obj[key], at path.key.
int int_field(const Ctx& ctx, const nlohmann::json& obj, const char* key, int lo, int hi);
int int_field(const Ctx& ctx, const nlohmann::json& obj, const char* key, int lo, int hi,
              std::string_view what);

}  // namespace lagom::json_reader
