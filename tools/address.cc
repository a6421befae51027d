#include "address.hh"

#include <limits>

namespace broker_tools {

using broker::ec;
using broker::error;

namespace {

constexpr std::string_view tcp_scheme = "tcp://";
constexpr std::string_view scheme_separator = "://";

/// No port has more digits; a longer run is rejected before it could overflow.
constexpr size_t max_port_digits = 5;

std::string_view unwrap_angle_brackets(std::string_view text) {
  if (text.size() >= 2 && text.front() == '<' && text.back() == '>')
    return text.substr(1, text.size() - 2);
  return text;
}

error bad_address(std::string_view text, const std::string& reason) {
  return error{ec::invalid_config, "expected host:port or tcp://host:port, got \""
                                     + std::string{text} + "\" (" + reason + ")"};
}

} // namespace

std::string format_address(std::string_view host, uint16_t port) {
  std::string result;
  if (host.empty())
    result = "*";
  else if (host.find(':') != std::string_view::npos)
    result.append("[").append(host).append("]");
  else
    result.append(host);
  return result + ":" + std::to_string(port);
}

std::optional<uint16_t> parse_port_number(std::string_view text) {
  if (text.empty() || text.size() > max_port_digits)
    return std::nullopt;
  uint32_t value = 0;
  for (auto c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value > std::numeric_limits<uint16_t>::max())
    return std::nullopt;
  return static_cast<uint16_t>(value);
}

broker::expected<peer_address> parse_address(std::string_view text,
                                             const address_rules& rules) {
  auto authority = unwrap_angle_brackets(text);
  if (authority.substr(0, tcp_scheme.size()) == tcp_scheme)
    authority.remove_prefix(tcp_scheme.size());
  else if (auto pos = authority.find(scheme_separator); pos != std::string_view::npos)
    return bad_address(text, "unsupported scheme \"" + std::string{authority.substr(0, pos)}
                               + "\", only tcp");
  peer_address result;
  std::optional<std::string_view> port_text;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos)
      return bad_address(text, "missing ']'");
    result.host = std::string{authority.substr(1, close - 1)};
    auto rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':')
        return bad_address(text, "expected ':' after ']'");
      port_text = rest.substr(1);
    }
    if (result.host.empty())
      return bad_address(text, "empty IPv6 address");
  } else if (auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    result.host = std::string{authority.substr(0, colon)};
    port_text = authority.substr(colon + 1);
    if (result.host.find(':') != std::string::npos)
      return bad_address(text, "an IPv6 address needs brackets, e.g. [::1]:9999");
  } else {
    result.host = std::string{authority};
  }
  if (result.host == "*")
    result.host.clear(); // As format_address() prints "all interfaces".
  if (result.host.empty() && !rules.allow_empty_host)
    return bad_address(text, "missing host");
  if (!port_text) {
    if (!rules.default_port)
      return bad_address(text, "missing port");
    result.port = *rules.default_port;
    return result;
  }
  auto port = parse_port_number(*port_text);
  if (!port)
    return bad_address(text, rules.allow_port_zero ? "the port must be a number 0-65535"
                                                   : "the port must be a number 1-65535");
  if (*port == 0 && !rules.allow_port_zero)
    return bad_address(text, "port 0 cannot be dialed");
  result.port = *port;
  return result;
}

} // namespace broker_tools
