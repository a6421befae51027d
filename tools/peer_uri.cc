#include "peer_uri.hh"

#include <limits>

namespace broker_tools {

using broker::ec;
using broker::error;

namespace {

constexpr std::string_view tcp_scheme = "tcp://";

std::string quoted(std::string_view text) {
  return "\"" + std::string{text} + "\"";
}

/// Parses the decimal port of a peer URI: 1-65535, digits only.
bool parse_port(std::string_view text, uint16_t& result) {
  constexpr uint32_t max_port = std::numeric_limits<uint16_t>::max();
  if (text.empty() || text.size() > 5)
    return false;
  uint32_t value = 0;
  for (auto c : text) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value == 0 || value > max_port)
    return false;
  result = static_cast<uint16_t>(value);
  return true;
}

std::string_view unwrap_angle_brackets(std::string_view text) {
  if (text.size() >= 2 && text.front() == '<' && text.back() == '>')
    return text.substr(1, text.size() - 2);
  return text;
}

} // namespace

broker::expected<peer_address> parse_peer_uri(std::string_view text) {
  auto fail = [text] {
    return error{ec::invalid_config, "expected tcp://host:port, got " + quoted(text)};
  };
  auto uri = unwrap_angle_brackets(text);
  if (uri.substr(0, tcp_scheme.size()) != tcp_scheme)
    return fail();
  auto authority = uri.substr(tcp_scheme.size());
  peer_address result;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos || close + 1 >= authority.size()
        || authority[close + 1] != ':')
      return fail();
    result.host = std::string{authority.substr(1, close - 1)};
    port_text = authority.substr(close + 2);
  } else {
    auto colon = authority.rfind(':');
    if (colon == std::string_view::npos)
      return fail();
    result.host = std::string{authority.substr(0, colon)};
    port_text = authority.substr(colon + 1);
    if (result.host.find(':') != std::string::npos)
      return fail(); // An IPv6 address needs brackets.
  }
  if (result.host.empty() || !parse_port(port_text, result.port))
    return fail();
  return result;
}

} // namespace broker_tools
