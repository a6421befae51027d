#include "broker/version.hh"

namespace broker {

const char* version() noexcept {
  return BROKER_VERSION_STRING;
}

} // namespace broker
