# Embeds data files (presets, examples) into a library so `lagom` runs from any directory.
#
#   lagom_embed(TARGET lagom_x NAMESPACE lagom::x::data FILES a.json b.json)
#
# generates a source that defines
#   std::span<const lagom::EmbeddedFile> <NAMESPACE>::files();
# where each EmbeddedFile's name is the file name without its directory.

set(LAGOM_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed_files.cmake)

function(lagom_embed)
  cmake_parse_arguments(ARG "" "TARGET;NAMESPACE;NAME" "FILES" ${ARGN})
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${ARG_NAME}_embedded.cpp)
  set(abs_files "")
  foreach(f ${ARG_FILES})
    get_filename_component(abs ${f} ABSOLUTE)
    list(APPEND abs_files ${abs})
  endforeach()
  string(REPLACE ";" "|" files_arg "${abs_files}")
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DNAMESPACE=${ARG_NAMESPACE} "-DFILES=${files_arg}"
            -P ${LAGOM_EMBED_SCRIPT}
    DEPENDS ${abs_files} ${LAGOM_EMBED_SCRIPT}
    COMMENT "Embedding ${ARG_NAME} data files"
    VERBATIM)
  target_sources(${ARG_TARGET} PRIVATE ${out})
endfunction()
