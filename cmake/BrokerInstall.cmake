# Install rules of libbroker: the shared library, the public headers (never internal/ or
# test helpers), and the CMake package Broker::broker.
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
install(EXPORT BrokerTargets NAMESPACE Broker::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Broker FILE BrokerTargets.cmake)
