# Install rules of libbroker: the shared library (with SONAME), the public headers (never
# internal/ or test helpers), the CMake package Broker::broker with its version file, and
# a pkg-config file. Paths follow GNUInstallDirs (multiarch lib directories on Debian).
include(CMakePackageConfigHelpers)

set(BROKER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Broker)

install(TARGETS broker EXPORT BrokerTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/libbroker/broker
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hh"
        PATTERN "internal" EXCLUDE
        PATTERN "*.test.hh" EXCLUDE)
install(FILES ${PROJECT_BINARY_DIR}/libbroker/include/broker/version.hh
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/broker)

install(EXPORT BrokerTargets NAMESPACE Broker:: DESTINATION ${BROKER_CMAKE_DIR}
        FILE BrokerTargets.cmake)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/BrokerConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/BrokerConfig.cmake
                              INSTALL_DESTINATION ${BROKER_CMAKE_DIR})
# 0.x releases break compatibility with every minor version, like the SOVERSION.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/BrokerConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/BrokerConfig.cmake
              ${PROJECT_BINARY_DIR}/BrokerConfigVersion.cmake
        DESTINATION ${BROKER_CMAKE_DIR})

# pkg-config: a system install (/usr, e.g. the Debian packages) names its prefix; any other
# prefix is found relative to the .pc file, so that an installed tree can move.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" OR IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(BROKER_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH pc_to_prefix "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" pc_to_prefix "${pc_to_prefix}")
  set(BROKER_PC_PREFIX "\${pcfiledir}/${pc_to_prefix}")
endif()
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(BROKER_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(BROKER_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/broker.pc.in ${PROJECT_BINARY_DIR}/broker.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/broker.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
