#pragma once

// credentials: how a peer or client proves who it is, and the text forms a rules file
// writes them in (doc/security.md, "Identities").
//
//   certificate  a verified TLS client certificate (peering, wss://), named by what it
//                says about its subject: "cn:<common name>", "dns:<SAN DNS name>",
//                "uri:<SAN URI>", "email:<SAN e-mail address>" (x509_names.hh extracts them)
//   token        a bearer token (WebSocket: `Authorization: Bearer <token>` or `?token=`),
//                stored only as "sha256:<64 hex digits>" of its bytes (hash_token())
//   curve key    a ZeroMQ CURVE public key, 40 characters of Z85
//
// Pure functions: no state, no sockets. Tokens are compared in constant time.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace broker::internal::security {

/// The ways to authenticate.
enum class mechanism : uint8_t {
  none,        ///< Unauthenticated: the anonymous identity.
  certificate, ///< A verified TLS client certificate.
  token,       ///< A bearer token.
  curve_key,   ///< A ZeroMQ CURVE public key.
};

/// "none", "certificate", "token" or "curve-key".
std::string_view to_string(mechanism x) noexcept;

/// A SHA-256 digest.
using digest = std::array<uint8_t, 32>;

/// The prefix of a stored token hash.
inline constexpr std::string_view token_hash_prefix = "sha256:";

/// SHA-256 of `token` (OpenSSL's EVP); nullopt only if OpenSSL cannot compute it.
std::optional<digest> sha256(std::string_view token);

/// "sha256:" and the lower-case hex digest of `token`: what a rules file stores. Empty
/// only if OpenSSL cannot compute it.
std::string hash_token(std::string_view token);

/// Parses "sha256:<64 hex digits>" (either case); nullopt otherwise.
std::optional<digest> parse_token_hash(std::string_view text) noexcept;

/// Compares two digests in constant time.
bool same_digest(const digest& x, const digest& y) noexcept;

/// The prefixes of certificate names.
inline constexpr std::string_view certificate_name_kinds[] = {"cn:", "dns:", "uri:", "email:"};

/// Checks a certificate name as a rules file writes it: a kind prefix and 1-1024 bytes
/// without control characters. Returns what is wrong, or an empty string.
std::string check_certificate_name(std::string_view text);

/// Length of a CURVE public key in Z85.
inline constexpr size_t curve_key_length = 40;

/// True if `text` is a 40-character Z85 text that decodes to 32 bytes.
bool is_curve_key(std::string_view text) noexcept;

/// What a connection presented, kept so that a reload can authenticate it again.
struct credential {
  mechanism kind = mechanism::none;
  /// certificate: the names (x509_names.hh); curve_key: the key; otherwise empty.
  std::vector<std::string> names;
  /// token: its digest (the token itself is never kept).
  digest token_digest{};
  /// False if the token could not be hashed: such a credential matches no identity.
  bool usable = true;

  /// Nobody: the anonymous identity.
  static credential anonymous() { return {}; }

  /// Hashes `token` at once; the clear text is not kept.
  static credential from_token(std::string_view token);

  static credential from_certificate(std::vector<std::string> names) {
    credential result;
    result.kind = mechanism::certificate;
    result.names = std::move(names);
    return result;
  }

  static credential from_curve_key(std::string key) {
    credential result;
    result.kind = mechanism::curve_key;
    result.names.push_back(std::move(key));
    return result;
  }
};

} // namespace broker::internal::security
