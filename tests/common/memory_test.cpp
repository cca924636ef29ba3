// Host memory checks (common/memory.hpp): the machine's available memory is read, the check
// refuses what does not fit and lets the rest through, --max-memory's limit replaces the
// machine's and counts what the process already holds.
#include "lagom/common/memory.hpp"

#include <gtest/gtest.h>

#include <string>

#include "lagom/common/error.hpp"
#include "strings.hpp"

namespace lagom {
namespace {

// Restores "no limit" however the test ends.
struct LimitGuard {
  ~LimitGuard() { set_memory_limit(std::nullopt); }
};

TEST(HostMemory, TheMachinesAvailableMemoryAndOurOwnAreRead) {
  const auto avail = available_memory_bytes();
  ASSERT_TRUE(avail.has_value());  // Linux: /proc/meminfo
  EXPECT_GT(*avail, 0u);
  EXPECT_GT(resident_memory_bytes(), 0u);
}

TEST(HostMemory, WithoutALimitTheMachinesAvailableMemoryDecides) {
  LimitGuard guard;
  set_memory_limit(std::nullopt);
  EXPECT_NO_THROW(check_memory(1024.0, "a small thing", "1 KiB", "nothing"));
  try {
    check_memory(1e21, "an absurd thing", "1e21 bytes", "ask for less");
    FAIL() << "1e21 bytes fitted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_TRUE(test::contains(m,
                               "an absurd thing would need about 867 EiB of memory (1e21 "
                               "bytes), more than the "))
        << m;
    EXPECT_TRUE(test::contains(m,
                               "this machine has available; ask for less, or raise the limit "
                               "with --max-memory SIZE"))
        << m;
  }
}

TEST(HostMemory, MaxMemoryIsALimitOnTheWholeProcess) {
  LimitGuard guard;
  const std::uint64_t held = resident_memory_bytes();
  set_memory_limit(held + (64u << 20));
  ASSERT_EQ(memory_limit(), held + (64u << 20));
  EXPECT_NO_THROW(check_memory(32.0 * (1 << 20), "32 MiB", "", "none"));
  // More than the limit less what is held, though far less than the machine has.
  try {
    check_memory(128.0 * (1 << 20), "128 MiB", "how", "less");
    FAIL() << "128 MiB fitted under a 64 MiB margin";
  } catch (const Error& e) {
    EXPECT_TRUE(test::contains(e.what(), "that --max-memory allows")) << e.what();
    EXPECT_TRUE(test::contains(e.what(), "already in use")) << e.what();
  }
  set_memory_limit(std::nullopt);
  EXPECT_FALSE(memory_limit().has_value());
  EXPECT_NO_THROW(check_memory(128.0 * (1 << 20), "128 MiB", "how", "less"));
}

}  // namespace
}  // namespace lagom
