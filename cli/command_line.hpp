// Parsing a subcommand's arguments, shared by every command.
#pragma once

#include <boost/program_options.hpp>
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

}  // namespace lagom::cli
