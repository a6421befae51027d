#pragma once

// bearer: the bearer token of a WebSocket upgrade request (doc/security.md, "Identities"),
// for the HTTP server to turn into a credential (credentials.hh) before it accepts the
// upgrade.
//
// A client sends its token either in the `Authorization: Bearer <token>` header
// (RFC 6750 §2.1; preferred: headers stay out of access logs) or as the `token` query
// parameter (`/v1/messages/json?token=<percent-encoded token>`, RFC 6750 §2.3, for clients
// such as browsers that cannot set headers on a WebSocket). Errors never quote the token or
// the header, which may hold it.
//
// Pure functions on strings.

#include <cstdint>
#include <string>
#include <string_view>

namespace broker::internal::security {

/// The longest token accepted.
inline constexpr size_t max_bearer_token = 4096;

/// Where a token came from.
enum class token_source : uint8_t { none, header, query };

/// The outcome of find_bearer_token().
struct bearer_result {
  token_source source = token_source::none;
  /// The token, decoded; empty when source is none or on error.
  std::string token;
  /// Non-empty if the request is malformed: refuse the upgrade (HTTP 400) with this text.
  std::string error;
};

/// Finds the token in `authorization` (the header's value; empty if the header is absent)
/// and in the query of `target` (the request target, e.g. "/v1/messages/json?token=abc").
/// Both at once, a parameter given twice, another scheme than Bearer, bad percent-encoding
/// or an empty or too long token are errors.
bearer_result find_bearer_token(std::string_view authorization, std::string_view target);

/// `target` with the value of every `token` parameter replaced by "<hidden>", for logs.
std::string redact_target(std::string_view target);

} // namespace broker::internal::security
