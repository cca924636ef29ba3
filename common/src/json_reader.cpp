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
#include <string>
#include <unordered_set>
#include <vector>

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

// Refuses a key given twice in one object. JSON allows it and nlohmann keeps the last value,
// so `"nic_speed_Gbps": 400, "nic_speed_Gbps": 4` would run 4 Gb/s NICs without a word. Tracks
// the path of open containers for the message; frames are reused, so a document of a million
// small objects allocates once per depth.
class DuplicateKeys {
 public:
  explicit DuplicateKeys(std::string_view origin) : origin_(origin) {}

  // An element begins: a value, an object or an array.
  void element() {
    if (open_ > 0 && !frames_[open_ - 1].object) {
      ++frames_[open_ - 1].index;
    }
  }
  void push(bool object) {
    if (open_ == frames_.size()) {
      frames_.emplace_back();
    }
    Frame& f = frames_[open_++];
    f.object = object;
    f.index = 0;
    f.keys.clear();
    f.many.clear();
  }
  void pop() { --open_; }
  void key(const std::string& k) {
    Frame& f = frames_[open_ - 1];
    bool seen = false;
    if (f.keys.size() < kLinear) {
      seen = std::find(f.keys.begin(), f.keys.end(), k) != f.keys.end();
      if (!seen) {
        f.keys.push_back(k);
      }
    } else {
      if (f.many.empty()) {
        f.many.insert(f.keys.begin(), f.keys.end());
      }
      seen = !f.many.insert(k).second;
      f.last = k;
    }
    if (seen) {
      std::string path;
      for (std::size_t i = 0; i + 1 < open_; ++i) {
        const Frame& o = frames_[i];
        path += o.object ? (path.empty() ? o.current() : "." + o.current())
                         : fmt::format("[{}]", o.index - 1);
      }
      path += path.empty() ? k : "." + k;
      throw Error(fmt::format(
          "{}: {}: the key '{}' is given twice in one object (a JSON reader keeps only one of "
          "them; give each key once)",
          origin_, path, k));
    }
  }

 private:
  struct Frame {
    bool object = false;
    std::size_t index = 0;          // arrays: elements begun so far
    std::vector<std::string> keys;  // objects: in order, while there are at most kLinear
    std::unordered_set<std::string> many;
    std::string last;  // the current key once past kLinear
    const std::string& current() const { return many.empty() ? keys.back() : last; }
  };
  static constexpr std::size_t kLinear = 32;

  std::string_view origin_;
  std::vector<Frame> frames_;
  std::size_t open_ = 0;
};

// nlohmann's own DOM builder, told every event, with DuplicateKeys watching the keys.
template <class Json>
class CheckedDom {
 public:
  using number_integer_t = typename Json::number_integer_t;
  using number_unsigned_t = typename Json::number_unsigned_t;
  using number_float_t = typename Json::number_float_t;
  using string_t = typename Json::string_t;
  using binary_t = typename Json::binary_t;

  CheckedDom(Json& result, std::string_view origin) : dom_(result, true), keys_(origin) {}

  bool null() { return keys_.element(), dom_.null(); }
  bool boolean(bool v) { return keys_.element(), dom_.boolean(v); }
  bool number_integer(number_integer_t v) { return keys_.element(), dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) { return keys_.element(), dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) {
    return keys_.element(), dom_.number_float(v, s);
  }
  bool string(string_t& v) { return keys_.element(), dom_.string(v); }
  bool binary(binary_t& v) { return keys_.element(), dom_.binary(v); }
  bool start_object(std::size_t n) {
    keys_.element();
    keys_.push(true);
    return dom_.start_object(n);
  }
  bool key(string_t& k) {
    keys_.key(k);
    return dom_.key(k);
  }
  bool end_object() {
    keys_.pop();
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    keys_.element();
    keys_.push(false);
    return dom_.start_array(n);
  }
  bool end_array() {
    keys_.pop();
    return dom_.end_array();
  }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& last_token, const Exception& e) {
    return dom_.parse_error(position, last_token, e);
  }

 private:
  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  DuplicateKeys keys_;
};

// nlohmann's syntax errors and number overflows (out_of_range.406, "number overflow parsing
// '1e400'") as one Error; its bracketed tag ("[json.exception.parse_error.101] ") dropped. A key
// given twice in one object is an Error too (DuplicateKeys).
template <class Json>
Json parse_or_refuse(std::string_view text, std::string_view origin) {
  try {
    Json doc;
    CheckedDom<Json> sax(doc, origin);
    Json::sax_parse(text, &sax);
    return doc;
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
