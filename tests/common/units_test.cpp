// Byte-size parsing and exact microsecond printing.
#include "lagom/common/units.hpp"

#include <gtest/gtest.h>

#include "lagom/common/error.hpp"
#include "lagom/common/time.hpp"

namespace lagom {
namespace {

TEST(ParseBytes, AcceptsNcclTestsSuffixes) {
  EXPECT_EQ(parse_bytes("8", "size"), 8);
  EXPECT_EQ(parse_bytes("32K", "size"), 32 * 1024);
  EXPECT_EQ(parse_bytes("1M", "size"), 1 << 20);
  EXPECT_EQ(parse_bytes("16G", "size"), 16LL << 30);
  EXPECT_EQ(parse_bytes("2MiB", "size"), 2 << 20);
  EXPECT_EQ(parse_bytes("512b", "size"), 512);
}

TEST(ParseBytes, RejectsGarbageWithTheName) {
  for (const char* bad : {"", "x", "-1", "12Q", "9999999999T"}) {
    try {
      parse_bytes(bad, "--bytes");
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--bytes"), std::string::npos) << e.what();
    }
  }
}

TEST(FormatUs, IsExactToTheNanosecond) {
  EXPECT_EQ(format_us(0), "0.000");
  EXPECT_EQ(format_us(12500), "12.500");
  EXPECT_EQ(format_us(1), "0.001");
  EXPECT_EQ(format_us(-1500), "-1.500");
  EXPECT_EQ(format_us(123456789012), "123456789.012");
}

TEST(Time, RoundsMicrosecondsToNearestNanosecond) {
  EXPECT_EQ(Time::from_us(12.5).count_ns(), 12500);
  EXPECT_EQ(Time::from_us(0.0004).count_ns(), 0);
  EXPECT_EQ(Time::from_us(0.0006).count_ns(), 1);
  EXPECT_LT(Time::ns(1), Time::ns(2));
  EXPECT_EQ((Time::ns(5) + Time::ns(7)).count_ns(), 12);
}

}  // namespace
}  // namespace lagom
