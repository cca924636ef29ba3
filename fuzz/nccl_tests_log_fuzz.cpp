// Fuzzes the nccl-tests log reader (docs/formats/nccl-tests.md): headers, metadata lines, rows.
#include "fuzz_util.hpp"
#include "harnesses.hpp"
#include "lagom/calibrate/nccl_tests_log.hpp"

int lagom::fuzz::nccl_tests_log(const std::uint8_t* data, std::size_t size) {
  return lagom::fuzz::guarded([&] {
    (void)lagom::calibrate::parse_nccl_tests_log(lagom::fuzz::text_of(data, size), "fuzz");
  });
}

LAGOM_FUZZ_ENTRY(lagom::fuzz::nccl_tests_log)
