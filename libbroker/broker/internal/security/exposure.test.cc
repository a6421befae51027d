#include "broker/internal/security/exposure.hh"

#include <catch2/catch.hpp>

using namespace broker::internal::security;

TEST_CASE("reach_of classifies bind addresses", "[security][exposure]") {
  CHECK(reach_of("") == reach::all_interfaces);
  CHECK(reach_of("0.0.0.0") == reach::all_interfaces);
  CHECK(reach_of("::") == reach::all_interfaces);
  CHECK(reach_of("[::]") == reach::all_interfaces);
  CHECK(reach_of("127.0.0.1") == reach::loopback);
  CHECK(reach_of("127.1.2.3") == reach::loopback);
  CHECK(reach_of("::1") == reach::loopback);
  CHECK(reach_of("[::1]") == reach::loopback);
  CHECK(reach_of("localhost") == reach::loopback);
  CHECK(reach_of("10.0.0.1") == reach::one_interface);
  CHECK(reach_of("fe80::1") == reach::one_interface);
  // Not fooled by look-alikes.
  CHECK(reach_of("1127.0.0.1") == reach::one_interface);
  CHECK(reach_of("[") == reach::one_interface);
}

TEST_CASE("exposure_line says where, which TLS and who is authenticated",
          "[security][exposure]") {
  CHECK(exposure_line(service::peering, "", 9999, transport::anonymous_tls)
        == "peering on 0.0.0.0:9999 (all IPv4 interfaces), TLS: anonymous (encrypts, "
           "authenticates no one)");
  CHECK(exposure_line(service::peering, "::", 9999, transport::plain)
        == "peering on [::]:9999 (all interfaces), TLS: off");
  CHECK(exposure_line(service::web_socket, "127.0.0.1", 9997, transport::plain)
        == "web-socket on 127.0.0.1:9997 (loopback only), TLS: off, clients: not "
           "authenticated");
  auto mutual = exposure_line(service::web_socket, "10.0.0.5", 9997, transport::mutual_tls);
  CHECK(mutual.find("web-socket on 10.0.0.5:9997 (this address only), TLS: mutual") == 0);
  CHECK(mutual.find("not authenticated") == std::string::npos);
  // The metrics server never speaks TLS, whatever the peerings do.
  CHECK(exposure_line(service::metrics, "0.0.0.0", 9998, transport::mutual_tls)
        == "metrics on 0.0.0.0:9998 (all IPv4 interfaces), TLS: off, not authenticated "
           "(/metrics, /v1/status, the web view)");
}

TEST_CASE("is_exposed: reachable from elsewhere and nobody authenticated",
          "[security][exposure]") {
  CHECK(is_exposed("", transport::anonymous_tls));
  CHECK(is_exposed("0.0.0.0", transport::plain));
  CHECK(is_exposed("10.0.0.1", transport::plain));
  CHECK_FALSE(is_exposed("10.0.0.1", transport::mutual_tls));
  CHECK_FALSE(is_exposed("127.0.0.1", transport::plain));
  CHECK_FALSE(is_exposed("::1", transport::anonymous_tls));
}

TEST_CASE("access rules show in the lines and end the warning", "[security][exposure]") {
  CHECK(exposure_line(service::web_socket, "0.0.0.0", 9997, transport::plain, true)
        == "web-socket on 0.0.0.0:9997 (all IPv4 interfaces), TLS: off, clients: bearer "
           "token, else anonymous; access rules enforced");
  CHECK(exposure_line(service::peering, "10.0.0.1", 9999, transport::mutual_tls, true)
        .find("; access rules enforced per certificate") != std::string::npos);
  CHECK(exposure_line(service::metrics, "0.0.0.0", 9998, transport::plain, true)
        .find("access rules") == std::string::npos);
  CHECK(is_exposed("0.0.0.0", transport::plain));
  CHECK_FALSE(is_exposed("0.0.0.0", transport::plain, true));
}
