#pragma once

// address_text: the one way log lines and error messages write an address and port
// (doc/operations.md, "Logs"). The tools write them the same way (tools/address.hh, which
// also parses them back).
//
//   address_text("", 9999)          "*:9999"      (all interfaces)
//   address_text("::1", 9999)       "[::1]:9999"
//   address_text("10.0.0.1", 9999)  "10.0.0.1:9999"

#include <cstdint>
#include <string>
#include <string_view>

namespace broker::internal {

inline std::string address_text(std::string_view host, uint16_t port) {
  std::string result;
  if (host.empty())
    result = "*";
  else if (host.find(':') != std::string_view::npos)
    result.append("[").append(host).append("]");
  else
    result.append(host);
  return result + ":" + std::to_string(port);
}

} // namespace broker::internal
