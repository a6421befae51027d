#include "broker/version.hh"

#include <catch2/catch.hpp>

#include <string>

TEST_CASE("version() is the version the headers name") {
  CHECK(std::string{broker::version()} == BROKER_VERSION_STRING);
  CHECK(std::string{BROKER_VERSION_STRING}
        == std::to_string(BROKER_VERSION_MAJOR) + "." + std::to_string(BROKER_VERSION_MINOR)
             + "." + std::to_string(BROKER_VERSION_PATCH));
  CHECK(BROKER_VERSION_NUMBER
        == BROKER_VERSION_MAJOR * 10000 + BROKER_VERSION_MINOR * 100 + BROKER_VERSION_PATCH);
}
