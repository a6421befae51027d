# cmake -DPROGRAM=<tool> -DOUTPUT=<file.1> -P write_man_page.cmake
# Writes the tool's `--man-page` output to OUTPUT; a failing tool fails the build.
execute_process(COMMAND "${PROGRAM}" --man-page
                OUTPUT_FILE "${OUTPUT}.tmp"
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  file(REMOVE "${OUTPUT}.tmp")
  message(FATAL_ERROR "${PROGRAM} --man-page failed: ${status}")
endif()
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
