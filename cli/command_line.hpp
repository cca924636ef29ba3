// Parsing a subcommand's arguments, shared by every command.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace lagom::cli {

// Parses `args` against `desc` (and `positional`, when given) into `vm` and runs notify();
// with --help, prints `desc` and returns false (the command then exits with kExitOk).
// boost::program_options::error escapes for a bad command line, as main() expects.
bool parse_command_line(
    const std::vector<std::string>& args, const boost::program_options::options_description& desc,
    boost::program_options::variables_map& vm,
    const boost::program_options::positional_options_description* positional = nullptr);

// Numeric options, read by lagom::parse_integer / parse_real (common/numbers.hpp) like every
// number lagom reads: the whole string, within [min, max], an error naming the option, the range
// and its unit, and what was given ("--mbs: expected an integer from 1 to 16777216 (sequences),
// got '2x'"), as boost::program_options::error (exit 2). The value is stored in `target` when
// notify() runs, the default (a string, e.g. ->default_value("1")) included.
// Ranges shared by several commands: ranks of a communicator, NCCL channels (MAXCHANNELS) and
// threads per channel (above NCCL's 640 maximum; the legality check names the exact rule).
inline constexpr std::int64_t kMaxCommandRanks = 1 << 30;
inline constexpr std::int64_t kMaxCommandChannels = 64;
inline constexpr std::int64_t kMaxCommandThreads = 1024;

template <class Int>
boost::program_options::typed_value<std::string>* integer_option(Int* target, std::string name,
                                                                 std::int64_t min, std::int64_t max,
                                                                 std::string unit);
boost::program_options::typed_value<std::string>* real_option(double* target, std::string name,
                                                              double min, double max,
                                                              std::string unit);

extern template boost::program_options::typed_value<std::string>* integer_option<int>(
    int*, std::string, std::int64_t, std::int64_t, std::string);
extern template boost::program_options::typed_value<std::string>* integer_option<std::int64_t>(
    std::int64_t*, std::string, std::int64_t, std::int64_t, std::string);
extern template boost::program_options::typed_value<std::string>* integer_option<std::uint64_t>(
    std::uint64_t*, std::string, std::int64_t, std::int64_t, std::string);

}  // namespace lagom::cli
