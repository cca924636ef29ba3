// Internal: Chakra ET files as bytes: gzip, the varint32-length-prefixed message stream (read
// and write), and protobuf parsing whose complaints go into our errors.
#pragma once

#include <fmt/format.h>
#include <google/protobuf/message_lite.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "chakra_format.hpp"
#include "lagom/common/error.hpp"

namespace lagom::traces::chakra {

// protobuf's log messages (e.g. "String field ... contains invalid UTF-8") belong in our error,
// not on stderr: while a thread parses, they are collected into its sink; otherwise printed as
// protobuf does.
std::string*& protobuf_log_sink();
void install_protobuf_log_handler();

// Parses `bytes` into `m`; on failure returns false and sets `why` to protobuf's own words, if any.
template <typename Message>
bool parse_message(Message& m, std::string_view bytes, std::string& why) {
  install_protobuf_log_handler();
  protobuf_log_sink() = &why;
  const bool ok = m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  protobuf_log_sink() = nullptr;
  return ok;
}

// The decompressed contents of gzip data `in` read from `path` (concatenated members allowed).
std::string gunzip(const std::string& path, const std::string& in);
inline bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

// Walks a stream of varint32-length-prefixed messages.
class MessageStream {
 public:
  MessageStream(std::string_view data, const std::string& file) : data_(data), file_(file) {}

  // The next message, or false at a clean end of the data.
  bool next(std::string_view& message) {
    if (pos_ == data_.size()) {
      return false;
    }
    start_ = pos_;
    std::uint64_t len = 0;
    for (int shift = 0;; shift += 7) {
      if (pos_ == data_.size()) {
        fail(
            fmt::format("the length prefix is cut off by the end of the file after {} bytes "
                        "(is the file truncated?)",
                        pos_ - start_));
      }
      if (shift == 35) {
        fail("malformed length prefix: more than 5 bytes (expected a varint32)");
      }
      const auto b = static_cast<unsigned char>(data_[pos_++]);
      len |= std::uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80u) == 0) {
        break;
      }
    }
    if (len > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
      fail(fmt::format("malformed length prefix: {} bytes is more than a protobuf message may hold",
                       len));
    }
    const std::size_t left = data_.size() - pos_;
    if (len > left) {
      fail(
          fmt::format("the length prefix says {} bytes, but only {} remain in the file (is the "
                      "file truncated?)",
                      len, left));
    }
    message = data_.substr(pos_, len);
    pos_ += len;
    ++index_;
    return true;
  }

  // "FILE: message 3 (byte 120)": where the last message returned by next() starts.
  std::string where() const {
    return fmt::format("{}: message {} (byte {})", file_, index_ == 0 ? 0 : index_ - 1, start_);
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("{}: message {} (byte {}): {}", file_, index_, start_, what));
  }

 private:
  std::string_view data_;
  const std::string& file_;
  std::size_t pos_ = 0;
  std::size_t start_ = 0;
  std::size_t index_ = 0;  // messages returned so far
};

void put_varint(std::string& out, std::uint64_t v);
// Appends `m` with its varint32 length prefix.
void append_message(std::string& out, const google::protobuf::MessageLite& m);

}  // namespace lagom::traces::chakra
