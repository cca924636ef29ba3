// Byte-size parsing and exact microsecond printing.
#include "lagom/common/units.hpp"

#include <gtest/gtest.h>

#include <limits>

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

TEST(ParseBytes, TakesDecimalsThatComeToWholeBytes) {
  EXPECT_EQ(parse_bytes("1.5G", "size"), 3LL << 29);
  EXPECT_EQ(parse_bytes("0.25M", "size"), 1 << 18);
  EXPECT_EQ(parse_bytes("0.5K", "size"), 512);
  EXPECT_EQ(parse_bytes("2.0", "size"), 2);
  EXPECT_EQ(parse_bytes("1.953125K", "size"), 2000);  // 1024 + 61/64 x 1024
}

TEST(ParseBytes, RejectsGarbageWithTheName) {
  for (const char* bad : {"", "x", "-1", "12Q", "9999999999T", "0.3K", "1.5", "1.G", "-0.5G",
                          "1.1234567891G", "8388608T", "1.999999999T"}) {
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

TEST(FormatDuration, PicksTheLargestUnitThatKeepsItAboveOne) {
  EXPECT_EQ(format_duration(0), "0");
  EXPECT_EQ(format_duration(12), "12 ns");
  EXPECT_EQ(format_duration(933.5e3), "933.5 us");
  EXPECT_EQ(format_duration(307.4e6), "307.4 ms");
  EXPECT_EQ(format_duration(13.66e9), "13.66 s");
  EXPECT_EQ(format_duration(41.5 * 60e9), "41.5 min");
  EXPECT_EQ(format_duration(6.2 * 3600e9), "6.2 h");
  EXPECT_EQ(format_duration(217.4 * 86400e9), "217.4 days");
  EXPECT_EQ(format_duration(-2.5e6), "-2.5 ms");
}

TEST(FormatDuration, RoundingNeverShowsAFullUnitInTheSmallerOne) {
  EXPECT_EQ(format_duration(999.96), "1 us");
  EXPECT_EQ(format_duration(999.96e3), "1 ms");
  EXPECT_EQ(format_duration(999.96e6), "1 s");
  EXPECT_EQ(format_duration(59.9996e9), "1.0 min");
  EXPECT_EQ(format_duration(59.99 * 60e9), "1.0 h");
  EXPECT_EQ(format_duration(23.99 * 3600e9), "1.0 days");
  EXPECT_EQ(format_duration(999.94), "999.9 ns");  // stays when it rounds down
}

TEST(FormatDuration, NonFiniteValuesAreNamed) {
  EXPECT_EQ(format_duration(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(format_duration(-std::numeric_limits<double>::infinity()), "-inf");
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
