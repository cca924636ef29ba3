// The version and git revision this binary was built from (for report context blocks).
#pragma once

#include <string_view>

namespace lagom {

std::string_view version();
std::string_view git_sha();  // 12 hex digits, "-dirty" if built from modified files, or "unknown"

}  // namespace lagom
