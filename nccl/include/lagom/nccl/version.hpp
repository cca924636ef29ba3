// Which NCCL release the emulation follows. Every module that depends on NCCL's version (tuning,
// limits, the topology search's constants) reads it from here.
#pragma once

#include <cstdint>
#include <string_view>

namespace lagom::nccl {

// The NCCL release whose tuning the emulation follows (`--nccl-version`). 2.28 (2.28.9) is the
// default; 2.18 (2.18.3) is what the Lagom paper measured against. docs/models.md §2 lists
// where they differ.
enum class Version : std::uint8_t { k2_18, k2_28 };
inline constexpr Version kDefaultVersion = Version::k2_28;

// "2.18", "2.28".
std::string_view to_string(Version v);
// "2.18", "2.18.3", "2.28", "2.28.9"; anything else is lagom::Error listing the versions.
Version version_named(std::string_view text);

// MAXCHANNELS of that release: 32 in 2.18, 64 in 2.28.
int max_channels(Version v);

}  // namespace lagom::nccl
