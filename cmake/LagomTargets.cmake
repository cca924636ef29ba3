# Per-target build settings: warnings, -Werror, sanitizers. Nothing here touches global flags.

# Applies Lagom's warning set and optional sanitizers to one target.
function(lagom_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion -Wnon-virtual-dtor)
  if(LAGOM_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(LAGOM_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
                                             -fno-sanitize-recover=undefined)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  if(LAGOM_FUZZ)  # coverage feedback for libFuzzer in every library a harness links
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()

# Declares a Lagom library `lagom_<name>` with alias `lagom::<name>` and public headers in
# <folder>/include.
function(lagom_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  add_library(lagom_${name} STATIC ${ARG_SOURCES})
  add_library(lagom::${name} ALIAS lagom_${name})
  target_include_directories(lagom_${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
  lagom_target_defaults(lagom_${name})
endfunction()

# Marks a library that the tuner plugin (a shared object) links: position-independent, with
# hidden symbols, so that the plugin's exported surface stays the NCCL ABI alone.
function(lagom_plugin_linkable target)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON
                        CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
endfunction()
