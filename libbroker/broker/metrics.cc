#include "broker/metrics.hh"

namespace broker {

std::string_view to_string(handler_kind x) noexcept {
  switch (x) {
    case handler_kind::subscriber:
      return "subscriber";
    case handler_kind::hub:
      return "hub";
    case handler_kind::peer:
      return "peer";
    case handler_kind::web_socket:
      return "web_socket";
    case handler_kind::store_master:
      return "store_master";
    case handler_kind::store_clone:
      return "store_clone";
    case handler_kind::zeromq:
      return "zeromq";
  }
  return "unknown";
}

} // namespace broker
