#pragma once

// Status and error events.
//
// The endpoint publishes them as ordinary data messages on topic::statuses and
// topic::errors, shaped as in Broker, so that every kind of subscriber (local, WebSocket
// with prefix "" or "<$>") sees the same thing:
//   status: ["status", enum <code>, <context>, "<message>"]
//   error:  ["error", enum <code>, [<context>, "<message>"]]
// where <context> is none or the endpoint info ["<node uuid>", "<address>", port, retry
// count] (address and port none when unknown).

#include "broker/data.hh"
#include "broker/endpoint_id.hh"
#include "broker/error.hh"
#include "broker/export.hh"

#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace broker {

/// Status codes (Broker's numbering).
enum class sc : uint8_t {
  unspecified = 0,
  peer_added = 1,
  peer_removed = 2,
  peer_lost = 3,
  endpoint_discovered = 4,
  endpoint_unreachable = 5,
};

/// "peer_added", ...
BROKER_API std::string_view to_string(sc code) noexcept;
BROKER_API bool from_string(std::string_view name, sc& code) noexcept;

/// Where a remote endpoint can be reached.
struct BROKER_API network_info {
  std::string address;
  uint16_t port = 0;
  /// Retry count (or interval in seconds) as Broker reports it.
  uint64_t retry = 0;
};

/// Which endpoint an event is about.
struct BROKER_API endpoint_info {
  endpoint_id node;
  std::optional<network_info> network;
};

/// A status event.
class BROKER_API status {
public:
  status() = default;
  status(sc code, endpoint_info context, std::string message)
    : code_(code), context_(std::move(context)), message_(std::move(message)) {}

  sc code() const noexcept { return code_; }
  const endpoint_info& context() const noexcept { return context_; }
  const std::string& message() const noexcept { return message_; }

private:
  sc code_ = sc::unspecified;
  endpoint_info context_;
  std::string message_;
};

/// "peer_added: <message>".
BROKER_API std::string to_string(const status& x);

/// Event encodings (see the file comment).
BROKER_API data to_data(const status& x);
BROKER_API data to_data(const error& x, const endpoint_info* context = nullptr);

/// Decodes an event published on topic::statuses / topic::errors; nullopt if `x` is not
/// shaped like one.
BROKER_API std::optional<status> to_status(const data& x);
BROKER_API std::optional<error> to_error(const data& x);

/// What a status subscriber hands out.
using status_variant = std::variant<none, error, status>;

} // namespace broker
