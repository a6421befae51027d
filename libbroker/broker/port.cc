#include "broker/port.hh"

#include <cstddef>
#include <iterator>

namespace broker {

namespace {

constexpr unsigned max_port = 65535;
constexpr unsigned decimal_base = 10;

struct protocol_name {
  port::protocol proto;
  std::string_view name;
};

// Indexed by wire code.
constexpr protocol_name protocol_names[] = {
  {port::protocol::unknown, "?"},
  {port::protocol::tcp, "tcp"},
  {port::protocol::udp, "udp"},
  {port::protocol::icmp, "icmp"},
};

} // namespace

std::optional<port> port::parse(std::string_view text) {
  auto slash = text.find('/');
  auto digits = text.substr(0, slash);
  if (digits.empty())
    return std::nullopt;
  unsigned number = 0;
  for (char c : digits) {
    if (c < '0' || c > '9')
      return std::nullopt;
    number = number * decimal_base + static_cast<unsigned>(c - '0');
    if (number > max_port)
      return std::nullopt; // also stops overflow on long digit strings
  }
  if (slash == std::string_view::npos)
    return port{static_cast<uint16_t>(number), protocol::tcp};
  auto name = text.substr(slash + 1);
  for (const auto& entry : protocol_names)
    if (entry.name == name)
      return port{static_cast<uint16_t>(number), entry.proto};
  return std::nullopt;
}

std::string to_string(port x) {
  auto result = std::to_string(unsigned{x.number()});
  result += '/';
  auto code = static_cast<size_t>(x.type());
  result += code < std::size(protocol_names) ? protocol_names[code].name : "?";
  return result;
}

} // namespace broker
