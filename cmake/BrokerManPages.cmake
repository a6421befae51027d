# Manual pages, generated at build time from each tool's options table:
#   broker_add_man_page(broker-node)
# runs `broker-node --man-page` after every build of the tool, writes
# <build dir>/man/broker-node.1 and installs it to share/man/man1 (tools/man_page.hh).
option(BROKER_BUILD_MAN_PAGES "Generate and install the tools' manual pages" ON)

function(broker_add_man_page target)
  if(NOT BROKER_BUILD_MAN_PAGES)
    return()
  endif()
  set(page "${PROJECT_BINARY_DIR}/man/${target}.1")
  add_custom_command(
    OUTPUT "${page}"
    COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:${target}> -DOUTPUT=${page}
            -P "${PROJECT_SOURCE_DIR}/cmake/write_man_page.cmake"
    DEPENDS ${target} "${PROJECT_SOURCE_DIR}/cmake/write_man_page.cmake"
    COMMENT "Generating man page ${target}.1"
    VERBATIM)
  add_custom_target(${target}-man-page ALL DEPENDS "${page}")
  install(FILES "${page}" DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endfunction()
