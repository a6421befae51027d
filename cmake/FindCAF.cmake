# FindCAF.cmake: locate the C++ Actor Framework 0.17 as Debian's libcaf-dev ships it
# (headers and libraries only; no CMake package, no pkg-config file).
#
#   find_package(CAF 0.17 REQUIRED COMPONENTS core io openssl)
#
# Defines CAF_FOUND, CAF_VERSION, CAF_INCLUDE_DIR and the imported targets CAF::core,
# CAF::io and CAF::openssl, the names CAF >= 0.18 exports itself, so that moving to a newer
# CAF only deletes this file.

find_path(CAF_INCLUDE_DIR caf/config.hpp)

# caf/config.hpp carries "#define CAF_VERSION 1706" for 0.17.6.
if(CAF_INCLUDE_DIR)
  file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" caf_version_define
       REGEX "^#define CAF_VERSION [0-9]+")
  if(caf_version_define MATCHES "CAF_VERSION ([0-9]+)")
    set(caf_v "${CMAKE_MATCH_1}")
    math(EXPR caf_major "${caf_v} / 10000")
    math(EXPR caf_minor "(${caf_v} / 100) % 100")
    math(EXPR caf_patch "${caf_v} % 100")
    set(CAF_VERSION "${caf_major}.${caf_minor}.${caf_patch}")
  endif()
endif()

set(caf_components ${CAF_FIND_COMPONENTS})
if(NOT caf_components)
  set(caf_components core)
endif()
foreach(comp IN LISTS caf_components)
  find_library(CAF_${comp}_LIBRARY NAMES caf_${comp})
  mark_as_advanced(CAF_${comp}_LIBRARY)
  if(CAF_${comp}_LIBRARY)
    set(CAF_${comp}_FOUND TRUE)
  endif()
endforeach()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CAF
  REQUIRED_VARS CAF_INCLUDE_DIR CAF_core_LIBRARY
  VERSION_VAR CAF_VERSION
  HANDLE_COMPONENTS)
mark_as_advanced(CAF_INCLUDE_DIR)

if(NOT CAF_FOUND)
  return()
endif()

find_package(Threads REQUIRED)
if(CAF_core_LIBRARY AND NOT TARGET CAF::core)
  add_library(CAF::core UNKNOWN IMPORTED)
  set_target_properties(CAF::core PROPERTIES
    IMPORTED_LOCATION "${CAF_core_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()
if(CAF_io_LIBRARY AND NOT TARGET CAF::io)
  add_library(CAF::io UNKNOWN IMPORTED)
  set_target_properties(CAF::io PROPERTIES
    IMPORTED_LOCATION "${CAF_io_LIBRARY}"
    INTERFACE_LINK_LIBRARIES CAF::core)
endif()
if(CAF_openssl_LIBRARY AND NOT TARGET CAF::openssl)
  find_package(OpenSSL REQUIRED)
  add_library(CAF::openssl UNKNOWN IMPORTED)
  set_target_properties(CAF::openssl PROPERTIES
    IMPORTED_LOCATION "${CAF_openssl_LIBRARY}"
    INTERFACE_LINK_LIBRARIES "CAF::io;OpenSSL::SSL;OpenSSL::Crypto")
endif()
