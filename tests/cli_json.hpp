// The JSON document a successful `lagom` run printed (a failed run fails the test first).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

namespace lagom::test {

inline nlohmann::json json_of(const CliRun& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

}  // namespace lagom::test
