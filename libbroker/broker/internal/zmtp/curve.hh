#pragma once

// CURVE (ZMTP-CURVE, RFC 25, over CurveZMQ, RFC 26): keys, the four handshake commands and
// the MESSAGE boxes after the handshake (doc/protocol/zeromq.md §5). All cryptography is
// libsodium's crypto_box / crypto_secretbox family; nothing here is hand-written crypto.
//
// Ownership: a `curve_client` or `curve_server` belongs to one connection's `session`, which
// calls it in protocol order; no threads. Long-term keys are copied in at construction;
// secret material (short-term secret, cookie key, precomputed key) is wiped on destruction.
//
// Handshake (C = client long-term key, C' its short-term key, S/S' the server's):
//   1. client -> HELLO     C', Box[64 zeros](C'->S)                     hello()
//   2. server -> WELCOME   Box[S' + cookie](S->C'), cookie = SecretBox[C' + s'](K)
//                          with K a cookie key made for this connection   on_hello(), welcome()
//   3. client -> INITIATE  cookie, Box[C + vouch + metadata](C'->S'),
//                          vouch = Box[C' + S](C->S')                on_welcome(), initiate()
//   4. server -> READY     Box[metadata](S'->C')            on_initiate(), ready(); on_ready()
// then every frame either way is MESSAGE: Box[flags + body](C'<->S') with a short nonce that
// strictly increases per direction (seal(), open()).

#include "broker/internal/zmtp/wire.hh"

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace broker::internal::zmtp {

/// A Curve25519 key (public or secret).
using key = std::array<uint8_t, 32>;

/// A long-term key pair.
struct keypair {
  key public_key{};
  key secret_key{};
};

/// A fresh key pair from libsodium's generator.
keypair generate_keypair();

/// The public key belonging to `secret`.
key public_key_of(const key& secret);

/// Overwrites a key with zeros in a way the compiler cannot drop.
void wipe(key& k) noexcept;

/// The 40-character Z85 text of a key.
std::string to_z85(const key& k);

/// A key from its 40-character Z85 text; nullopt for anything else.
std::optional<key> key_from_z85(std::string_view text);

/// Decides whether a client's long-term public key may connect (true: yes). Called once per
/// connection, during the handshake, on the connection's thread.
using authorize_fn = std::function<bool(const key& client_public_key)>;

/// Overhead of a MESSAGE frame body over its payload: name (8), nonce (8), MAC (16), flags (1).
inline constexpr size_t message_overhead = 33;

/// The MESSAGE boxes of an established connection (shared by client and server).
class curve_cipher {
public:
  curve_cipher(const char* send_prefix, const char* recv_prefix) noexcept;
  ~curve_cipher();
  curve_cipher(const curve_cipher&) = delete;
  curve_cipher& operator=(const curve_cipher&) = delete;

  /// Appends one MESSAGE frame (header included) carrying `payload`, with the outer frame
  /// flags mirroring `more` and `command` as libzmq does.
  void seal(bool more, bool command, std::string_view payload, std::string& out);

  /// Opens a MESSAGE frame body: sets `more`, `command` and `payload` (appended).
  error open(std::string_view body, bool& more, bool& command, std::string& payload);

protected:
  /// The next short nonce we send (1, 2, ...).
  uint64_t next_nonce() noexcept { return send_nonce_++; }

  /// Checks that a received short nonce increases, then records it.
  error check_nonce(uint64_t nonce, const char* what);

  std::array<uint8_t, 32> precomputed_{}; ///< crypto_box_beforenm(C', S') or (S', C').
  bool ready_ = false;

private:
  const char* send_prefix_;
  const char* recv_prefix_;
  uint64_t send_nonce_ = 1;
  uint64_t recv_nonce_ = 0;
};

/// The client half: we dialed and know the server's public key.
class curve_client : public curve_cipher {
public:
  curve_client(const keypair& client, const key& server_public);
  ~curve_client();

  /// HELLO (the frame body, 200 bytes); fails only for an unusable server key.
  error hello(std::string& out);

  /// Checks WELCOME (frame body) and remembers the cookie and S'.
  error on_welcome(std::string_view body);

  /// INITIATE (frame body) carrying `metadata` (encoded properties); fails only for an
  /// unusable short-term server key.
  error initiate(std::string_view metadata, std::string& out);

  /// Checks READY (frame body) and extracts its metadata bytes.
  error on_ready(std::string_view body, std::string& metadata);

private:
  keypair long_term_;
  key server_;
  keypair short_term_;
  key server_short_{};
  std::string cookie_;
};

/// The server half: we accepted and hold the server's long-term key pair.
class curve_server : public curve_cipher {
public:
  explicit curve_server(const keypair& server);
  ~curve_server();

  /// Checks HELLO (frame body): version 1.0, sizes, the box opens with our key.
  error on_hello(std::string_view body);

  /// WELCOME (frame body) with a cookie under a key made for this connection.
  error welcome(std::string& out);

  /// Checks INITIATE (frame body): cookie, box, vouch; returns the client's long-term key
  /// and the metadata bytes. The caller decides authorization.
  error on_initiate(std::string_view body, key& client_public, std::string& metadata);

  /// READY (frame body) carrying `metadata`; completes the handshake.
  std::string ready(std::string_view metadata);

private:
  keypair long_term_;
  keypair short_term_;
  key client_short_{};
  std::array<uint8_t, 32> cookie_key_{};
};

} // namespace broker::internal::zmtp
