// Chakra ET files as bytes (see chakra_stream.hpp).
#include "chakra_stream.hpp"

#include <fmt/format.h>
#include <google/protobuf/stubs/logging.h>
#include <zlib.h>

#include <algorithm>
#include <mutex>

namespace lagom::traces::chakra {
namespace {

void protobuf_log_handler(google::protobuf::LogLevel level, const char* filename, int line,
                          const std::string& message) {
  if (protobuf_log_sink() != nullptr) {
    if (!protobuf_log_sink()->empty()) {
      *protobuf_log_sink() += "; ";
    }
    *protobuf_log_sink() += message;
    return;
  }
  static constexpr const char* kLevel[] = {"INFO", "WARNING", "ERROR", "FATAL"};
  fmt::print(stderr, "[libprotobuf {} {}:{}] {}\n",
             kLevel[std::clamp(static_cast<int>(level), 0, 3)], filename, line, message);
}

}  // namespace

std::string*& protobuf_log_sink() {
  thread_local std::string* sink = nullptr;
  return sink;
}

void install_protobuf_log_handler() {
  static std::once_flag installed;
  std::call_once(installed, [] { google::protobuf::SetLogHandler(&protobuf_log_handler); });
}

std::string gunzip(const std::string& path, const std::string& in) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
    throw Error(fmt::format("{}: cannot start gzip decompression", path));
  }
  std::string out;
  std::string chunk(std::size_t{1} << 18, '\0');
  std::size_t consumed = 0;  // input bytes handed to zlib so far
  int rc = Z_OK;
  for (;;) {
    if (zs.avail_in == 0 && consumed < in.size()) {
      const std::size_t n = std::min<std::size_t>(in.size() - consumed, std::size_t{1} << 30);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + consumed));
      zs.avail_in = static_cast<uInt>(n);
      consumed += n;
    }
    zs.next_out = reinterpret_cast<Bytef*>(chunk.data());
    zs.avail_out = static_cast<uInt>(chunk.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(chunk.data(), chunk.size() - zs.avail_out);
    if (rc == Z_STREAM_END) {
      const std::size_t left = zs.avail_in + (in.size() - consumed);
      if (left == 0) {
        break;
      }
      // Concatenated gzip members (as `cat a.gz b.gz` makes) are one stream.
      const std::size_t at = in.size() - left;
      if (left < 2 || static_cast<unsigned char>(in[at]) != 0x1f ||
          static_cast<unsigned char>(in[at + 1]) != 0x8b) {
        inflateEnd(&zs);
        throw Error(fmt::format("{}: {} bytes of trailing data after the gzip stream", path, left));
      }
      inflateReset(&zs);
      continue;
    }
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && consumed == in.size()) {
      inflateEnd(&zs);
      throw Error(fmt::format(
          "{}: the gzip data ends early ({} bytes decompressed): is the file truncated?", path,
          out.size()));
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string msg = zs.msg != nullptr ? zs.msg : fmt::format("zlib error {}", rc);
      inflateEnd(&zs);
      throw Error(fmt::format("{}: corrupt gzip data: {}", path, msg));
    }
  }
  inflateEnd(&zs);
  return out;
}

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void append_message(std::string& out, const google::protobuf::MessageLite& m) {
  const std::string bytes = m.SerializeAsString();
  put_varint(out, bytes.size());
  out += bytes;
}

}  // namespace lagom::traces::chakra
