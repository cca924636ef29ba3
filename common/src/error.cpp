// Anchors lagom::Error's vtable in one translation unit.
#include "lagom/common/error.hpp"
