#include "broker/internal/security/exposure.hh"

namespace broker::internal::security {

namespace {

std::string_view name_of(service x) noexcept {
  switch (x) {
    case service::peering:
      return "peering";
    case service::web_socket:
      return "web-socket";
    case service::metrics:
      return "metrics";
  }
  return "listener";
}

std::string_view reach_text(std::string_view address) noexcept {
  switch (reach_of(address)) {
    case reach::loopback:
      return "loopback only";
    case reach::all_interfaces:
      return address.find(':') != std::string_view::npos ? "all interfaces"
                                                          : "all IPv4 interfaces";
    case reach::one_interface:
      break;
  }
  return "this address only";
}

std::string_view tls_text(transport how) noexcept {
  switch (how) {
    case transport::plain:
      return "TLS: off";
    case transport::anonymous_tls:
      return "TLS: anonymous (encrypts, authenticates no one)";
    case transport::mutual_tls:
      return "TLS: mutual (the other side needs a certificate signed by broker.ssl.cafile or "
             "broker.ssl.capath)";
  }
  return "TLS: ?";
}

} // namespace

reach reach_of(std::string_view address) noexcept {
  // IPv6 literals may come in brackets.
  if (address.size() >= 2 && address.front() == '[' && address.back() == ']')
    address = address.substr(1, address.size() - 2);
  if (address.empty() || address == "0.0.0.0" || address == "::" || address == "0::0")
    return reach::all_interfaces;
  if (address.substr(0, 4) == "127." || address == "::1" || address == "localhost"
      || address == "::ffff:127.0.0.1")
    return reach::loopback;
  return reach::one_interface;
}

std::string exposure_line(service what, std::string_view address, uint16_t port,
                          transport how, bool rules) {
  auto shown = address.empty() ? std::string_view{"0.0.0.0"} : address;
  std::string result{name_of(what)};
  result += " on ";
  if (shown.find(':') != std::string_view::npos && shown.front() != '[') {
    result += '[';
    result += shown;
    result += ']';
  } else {
    result += shown;
  }
  result += ':';
  result += std::to_string(port);
  result += " (";
  result += reach_text(shown);
  result += "), ";
  result += tls_text(what == service::metrics ? transport::plain : how);
  switch (what) {
    case service::peering:
      if (rules)
        result += how == transport::mutual_tls
                    ? "; access rules enforced per certificate"
                    : "; access rules enforced (peers are the anonymous identity)";
      break;
    case service::web_socket:
      if (rules)
        result += how == transport::mutual_tls
                    ? ", clients: bearer token, else certificate; access rules enforced"
                    : ", clients: bearer token, else anonymous; access rules enforced";
      else if (how != transport::mutual_tls)
        result += ", clients: not authenticated";
      break;
    case service::metrics:
      result += ", not authenticated (/metrics, /v1/status, the web view)";
      break;
  }
  return result;
}

bool is_exposed(std::string_view address, transport how, bool rules) noexcept {
  return reach_of(address) != reach::loopback && how != transport::mutual_tls && !rules;
}

} // namespace broker::internal::security
