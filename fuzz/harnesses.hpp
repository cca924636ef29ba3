// The libFuzzer harnesses (fuzz/*_fuzz.cpp), one per reader: each returns 0 for any input it
// survives and aborts on a finding (fuzz_util.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace lagom::fuzz {

int chakra(const std::uint8_t* data, std::size_t size);
int cluster(const std::uint8_t* data, std::size_t size);
int compute_spec(const std::uint8_t* data, std::size_t size);
int model(const std::uint8_t* data, std::size_t size);
int nccl_tests_log(const std::uint8_t* data, std::size_t size);
int parallel_spec(const std::uint8_t* data, std::size_t size);
int placement(const std::uint8_t* data, std::size_t size);
int plan(const std::uint8_t* data, std::size_t size);
int profile(const std::uint8_t* data, std::size_t size);
int published_runs(const std::uint8_t* data, std::size_t size);
int sweep(const std::uint8_t* data, std::size_t size);
int tuner_plan(const std::uint8_t* data, std::size_t size);
int workload_json(const std::uint8_t* data, std::size_t size);

}  // namespace lagom::fuzz
