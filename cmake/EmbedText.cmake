# stratasim_embed_text(OUT_SOURCE FUNCTION FILE): generates a .cpp defining
#   std::string_view stratasim::FUNCTION()
# that returns FILE's text, so data the tool needs is inside the binary (it stands alone).
function(stratasim_embed_text out_source function file)
  set(_delimiter ssembed)
  file(READ ${file} _text)
  string(FIND "${_text}" ")${_delimiter}\"" _clash)
  if(NOT _clash EQUAL -1)
    message(FATAL_ERROR "${file} contains the raw-string delimiter")
  endif()
  set(_generated ${CMAKE_CURRENT_BINARY_DIR}/generated/${function}.cpp)
  file(WRITE ${_generated}.tmp
    "// Generated from ${file}. Do not edit.\n#include <string_view>\n\nnamespace stratasim {\n"
    "std::string_view ${function}() {\n  static constexpr char kText[] = R\"${_delimiter}(${_text})${_delimiter}\";\n"
    "  return {kText, sizeof(kText) - 1};\n}\n}  // namespace stratasim\n")
  configure_file(${_generated}.tmp ${_generated} COPYONLY)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
  set(${out_source} ${_generated} PARENT_SCOPE)
endfunction()
