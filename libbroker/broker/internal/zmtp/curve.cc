#include "broker/internal/zmtp/curve.hh"

#include "broker/internal/zmtp/z85.hh"

#include <sodium.h>

#include <cstring>
#include <mutex>

// Byte layouts follow doc/protocol/zeromq.md §5 (RFC 26 and 25); sizes are checked as
// strictly as libzmq 4.3 checks them, plus the contents RFC 26 says a server must verify
// (HELLO's 64 zeros, the vouch's server key).

namespace broker::internal::zmtp {

namespace {

using nonce24 = std::array<uint8_t, crypto_box_NONCEBYTES>;

static_assert(crypto_box_PUBLICKEYBYTES == 32 && crypto_box_SECRETKEYBYTES == 32);
static_assert(crypto_box_MACBYTES == 16 && crypto_box_NONCEBYTES == 24);
static_assert(crypto_box_BEFORENMBYTES == 32 && crypto_secretbox_KEYBYTES == 32);

void init_sodium() {
  static std::once_flag flag;
  std::call_once(flag, [] {
    // sodium_init() only fails without a randomness source; nothing can work then.
    if (sodium_init() < 0)
      std::abort();
  });
}

const uint8_t* u8(std::string_view s) noexcept {
  return reinterpret_cast<const uint8_t*>(s.data());
}

uint8_t* u8(std::string& s, size_t offset = 0) noexcept {
  return reinterpret_cast<uint8_t*>(s.data()) + offset;
}

void put_u64(uint8_t* p, uint64_t x) noexcept {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<uint8_t>(x >> (56 - 8 * i));
}

uint64_t get_u64(const char* p) noexcept {
  uint64_t x = 0;
  for (int i = 0; i < 8; ++i)
    x = (x << 8) | static_cast<uint8_t>(p[i]);
  return x;
}

// A 24-byte nonce: a 16-byte prefix and a 64-bit counter.
nonce24 short_nonce(const char* prefix16, uint64_t counter) noexcept {
  nonce24 n;
  std::memcpy(n.data(), prefix16, 16);
  put_u64(n.data() + 16, counter);
  return n;
}

// A 24-byte nonce: an 8-byte prefix and 16 bytes (random or received).
nonce24 long_nonce(const char* prefix8, const void* tail16) noexcept {
  nonce24 n;
  std::memcpy(n.data(), prefix8, 8);
  std::memcpy(n.data() + 8, tail16, 16);
  return n;
}

error fail(errc code, std::string reason) {
  return error{code, std::move(reason)};
}

bool has_name(std::string_view body, std::string_view name) {
  return body.size() >= 1 + name.size() && static_cast<uint8_t>(body[0]) == name.size()
         && body.substr(1, name.size()) == name;
}

void wipe(void* p, size_t n) noexcept {
  sodium_memzero(p, n);
}

constexpr std::string_view message_name = "\x07MESSAGE";

} // namespace

// -- keys -------------------------------------------------------------------------------------

keypair generate_keypair() {
  init_sodium();
  keypair result;
  crypto_box_keypair(result.public_key.data(), result.secret_key.data());
  return result;
}

key public_key_of(const key& secret) {
  init_sodium();
  key result;
  crypto_scalarmult_base(result.data(), secret.data());
  return result;
}

void wipe(key& k) noexcept {
  sodium_memzero(k.data(), k.size());
}

std::string to_z85(const key& k) {
  return *z85_encode({reinterpret_cast<const char*>(k.data()), k.size()});
}

std::optional<key> key_from_z85(std::string_view text) {
  if (text.size() != 40)
    return std::nullopt;
  auto bytes = z85_decode(text);
  if (!bytes)
    return std::nullopt;
  key result;
  std::memcpy(result.data(), bytes->data(), result.size());
  return result;
}

// -- MESSAGE ----------------------------------------------------------------------------------

curve_cipher::curve_cipher(const char* send_prefix, const char* recv_prefix) noexcept
  : send_prefix_(send_prefix), recv_prefix_(recv_prefix) {
  init_sodium();
}

curve_cipher::~curve_cipher() {
  wipe(precomputed_.data(), precomputed_.size());
}

error curve_cipher::check_nonce(uint64_t nonce, const char* what) {
  if (nonce <= recv_nonce_)
    return fail(errc::bad_nonce, std::string{what} + ": short nonce " + std::to_string(nonce)
                                   + " does not exceed the previous "
                                   + std::to_string(recv_nonce_) + " (replayed or reordered)");
  recv_nonce_ = nonce;
  return {};
}

void curve_cipher::seal(bool more, bool command, std::string_view payload, std::string& out) {
  auto body_size = message_overhead + payload.size();
  append_frame_header(out, more, command, body_size);
  auto start = out.size();
  out.resize(start + body_size);
  auto* p = u8(out, start);
  std::memcpy(p, message_name.data(), message_name.size());
  auto counter = next_nonce();
  put_u64(p + 8, counter);
  // Box layout: MAC (16) then ciphertext of flags + payload, encrypted in place.
  auto* plain = p + 32;
  plain[0] = static_cast<uint8_t>((more ? 0x01 : 0) | (command ? 0x02 : 0));
  if (!payload.empty())
    std::memcpy(plain + 1, payload.data(), payload.size());
  auto nonce = short_nonce(send_prefix_, counter);
  crypto_box_detached_afternm(plain, p + 16, plain, payload.size() + 1, nonce.data(),
                              precomputed_.data());
}

error curve_cipher::open(std::string_view body, bool& more, bool& command,
                         std::string& payload) {
  if (!has_name(body, "MESSAGE"))
    return fail(errc::unexpected_command,
                "CURVE: expected a MESSAGE command after the handshake");
  if (body.size() < message_overhead)
    return fail(errc::malformed_command, "CURVE MESSAGE of " + std::to_string(body.size())
                                           + " bytes, at least 33 needed");
  auto counter = get_u64(body.data() + 8);
  if (auto err = check_nonce(counter, "CURVE MESSAGE"))
    return err;
  auto nonce = short_nonce(recv_prefix_, counter);
  auto clen = body.size() - 32;
  auto start = payload.size();
  payload.resize(start + clen);
  auto* dst = u8(payload, start);
  if (crypto_box_open_detached_afternm(dst, u8(body) + 32, u8(body) + 16, clen, nonce.data(),
                                       precomputed_.data())
      != 0) {
    payload.resize(start);
    return fail(errc::crypto_failure, "CURVE MESSAGE box does not open (forged or corrupted)");
  }
  auto flags = dst[0];
  if (flags & ~0x03u) {
    payload.resize(start);
    return fail(errc::malformed_frame, "CURVE MESSAGE flags set reserved bits");
  }
  more = flags & 0x01;
  command = flags & 0x02;
  payload.erase(start, 1);
  return {};
}

// -- client -----------------------------------------------------------------------------------

curve_client::curve_client(const keypair& client, const key& server_public)
  : curve_cipher("CurveZMQMESSAGEC", "CurveZMQMESSAGES"),
    long_term_(client),
    server_(server_public),
    short_term_(generate_keypair()) {
}

curve_client::~curve_client() {
  wipe(long_term_.secret_key.data(), 32);
  wipe(short_term_.secret_key.data(), 32);
}

error curve_client::hello(std::string& out) {
  out.assign(200, '\0');
  std::memcpy(out.data(), "\x05HELLO\x01\x00", 8); // name, version 1.0, 72 bytes padding
  std::memcpy(u8(out, 80), short_term_.public_key.data(), 32);
  auto counter = next_nonce();
  put_u64(u8(out, 112), counter);
  auto nonce = short_nonce("CurveZMQHELLO---", counter);
  uint8_t zeros[64] = {};
  // libsodium refuses keys whose shared secret is zero (low-order points).
  if (crypto_box_easy(u8(out, 120), zeros, sizeof(zeros), nonce.data(), server_.data(),
                      short_term_.secret_key.data())
      != 0)
    return fail(errc::crypto_failure, "CURVE: the server public key is not a usable key");
  return {};
}

error curve_client::on_welcome(std::string_view body) {
  if (!has_name(body, "WELCOME"))
    return fail(errc::unexpected_command, "CURVE: expected WELCOME from the server");
  if (body.size() != 168)
    return fail(errc::malformed_command,
                "CURVE WELCOME of " + std::to_string(body.size()) + " bytes, not 168");
  auto nonce = long_nonce("WELCOME-", body.data() + 8);
  uint8_t plain[128];
  if (crypto_box_open_easy(plain, u8(body) + 24, 144, nonce.data(), server_.data(),
                           short_term_.secret_key.data())
      != 0)
    return fail(errc::crypto_failure,
                "CURVE WELCOME box does not open: the server has another key than the "
                "server public key we were given");
  std::memcpy(server_short_.data(), plain, 32);
  cookie_.assign(reinterpret_cast<const char*>(plain) + 32, 96);
  wipe(plain, sizeof(plain));
  if (crypto_box_beforenm(precomputed_.data(), server_short_.data(),
                          short_term_.secret_key.data())
      != 0)
    return fail(errc::crypto_failure, "CURVE WELCOME: the server's short-term key is unusable");
  return {};
}

error curve_client::initiate(std::string_view metadata, std::string& out) {
  // Vouch: Box[C' + S](C->S') under "VOUCH---" and 16 random bytes.
  uint8_t vouch_plain[64];
  std::memcpy(vouch_plain, short_term_.public_key.data(), 32);
  std::memcpy(vouch_plain + 32, server_.data(), 32);
  uint8_t vouch_random[16];
  randombytes_buf(vouch_random, sizeof(vouch_random));
  auto vouch_nonce = long_nonce("VOUCH---", vouch_random);
  uint8_t vouch_box[80];
  if (crypto_box_easy(vouch_box, vouch_plain, 64, vouch_nonce.data(), server_short_.data(),
                      long_term_.secret_key.data())
      != 0)
    return fail(errc::crypto_failure, "CURVE WELCOME: the server's short-term key is unusable");
  // Box[C + vouch nonce + vouch + metadata](C'->S').
  std::string plain(128 + metadata.size(), '\0');
  std::memcpy(u8(plain), long_term_.public_key.data(), 32);
  std::memcpy(u8(plain, 32), vouch_random, 16);
  std::memcpy(u8(plain, 48), vouch_box, 80);
  if (!metadata.empty())
    std::memcpy(u8(plain, 128), metadata.data(), metadata.size());
  out.assign(113 + 16 + plain.size(), '\0');
  std::memcpy(out.data(), "\x08INITIATE", 9);
  std::memcpy(out.data() + 9, cookie_.data(), 96);
  auto counter = next_nonce();
  put_u64(u8(out, 105), counter);
  auto nonce = short_nonce("CurveZMQINITIATE", counter);
  crypto_box_easy_afternm(u8(out, 113), u8(plain), plain.size(), nonce.data(),
                          precomputed_.data());
  wipe(u8(plain), plain.size());
  return {};
}

error curve_client::on_ready(std::string_view body, std::string& metadata) {
  if (!has_name(body, "READY"))
    return fail(errc::unexpected_command, "CURVE: expected READY from the server");
  if (body.size() < 30)
    return fail(errc::malformed_command,
                "CURVE READY of " + std::to_string(body.size()) + " bytes, at least 30 needed");
  auto counter = get_u64(body.data() + 6);
  if (auto err = check_nonce(counter, "CURVE READY"))
    return err;
  auto nonce = short_nonce("CurveZMQREADY---", counter);
  metadata.resize(body.size() - 30);
  if (crypto_box_open_easy_afternm(u8(metadata), u8(body) + 14, body.size() - 14, nonce.data(),
                                   precomputed_.data())
      != 0)
    return fail(errc::crypto_failure, "CURVE READY box does not open");
  ready_ = true;
  return {};
}

// -- server -----------------------------------------------------------------------------------

curve_server::curve_server(const keypair& server)
  : curve_cipher("CurveZMQMESSAGES", "CurveZMQMESSAGEC"), long_term_(server) {
}

curve_server::~curve_server() {
  wipe(long_term_.secret_key.data(), 32);
  wipe(short_term_.secret_key.data(), 32);
  wipe(cookie_key_.data(), cookie_key_.size());
}

error curve_server::on_hello(std::string_view body) {
  if (!has_name(body, "HELLO"))
    return fail(errc::unexpected_command, "CURVE: expected HELLO from the client");
  if (body.size() != 200)
    return fail(errc::malformed_command,
                "CURVE HELLO of " + std::to_string(body.size()) + " bytes, not 200");
  if (body[6] != 1 || body[7] != 0)
    return fail(errc::malformed_command, "CURVE HELLO version " + std::to_string(body[6]) + "."
                                           + std::to_string(body[7]) + ", not 1.0");
  std::memcpy(client_short_.data(), body.data() + 80, 32);
  auto counter = get_u64(body.data() + 112);
  if (auto err = check_nonce(counter, "CURVE HELLO"))
    return err;
  auto nonce = short_nonce("CurveZMQHELLO---", counter);
  uint8_t plain[64];
  if (crypto_box_open_easy(plain, u8(body) + 120, 80, nonce.data(), client_short_.data(),
                           long_term_.secret_key.data())
      != 0)
    return fail(errc::crypto_failure,
                "CURVE HELLO box does not open: the client uses another server public key");
  if (!sodium_is_zero(plain, sizeof(plain)))
    return fail(errc::malformed_command, "CURVE HELLO signature box does not hold 64 zeros");
  return {};
}

error curve_server::welcome(std::string& out) {
  short_term_ = generate_keypair();
  randombytes_buf(cookie_key_.data(), cookie_key_.size());
  // Cookie: "COOKIE--" nonce, SecretBox[C' + s'](K).
  uint8_t cookie_plain[64];
  std::memcpy(cookie_plain, client_short_.data(), 32);
  std::memcpy(cookie_plain + 32, short_term_.secret_key.data(), 32);
  uint8_t cookie_random[16];
  randombytes_buf(cookie_random, sizeof(cookie_random));
  auto cookie_nonce = long_nonce("COOKIE--", cookie_random);
  // WELCOME box plaintext: S' (32), cookie nonce (16), cookie box (80).
  uint8_t plain[128];
  std::memcpy(plain, short_term_.public_key.data(), 32);
  std::memcpy(plain + 32, cookie_random, 16);
  crypto_secretbox_easy(plain + 48, cookie_plain, 64, cookie_nonce.data(), cookie_key_.data());
  wipe(cookie_plain, sizeof(cookie_plain));
  out.assign(168, '\0');
  std::memcpy(out.data(), "\x07WELCOME", 8);
  uint8_t welcome_random[16];
  randombytes_buf(welcome_random, sizeof(welcome_random));
  std::memcpy(u8(out, 8), welcome_random, 16);
  auto nonce = long_nonce("WELCOME-", welcome_random);
  // HELLO's box opened with C', so these succeed; a failure still ends the handshake.
  auto rc = crypto_box_easy(u8(out, 24), plain, sizeof(plain), nonce.data(),
                            client_short_.data(), long_term_.secret_key.data());
  wipe(plain, sizeof(plain));
  if (rc != 0
      || crypto_box_beforenm(precomputed_.data(), client_short_.data(),
                             short_term_.secret_key.data())
           != 0)
    return fail(errc::crypto_failure, "CURVE HELLO: the client's short-term key is unusable");
  return {};
}

error curve_server::on_initiate(std::string_view body, key& client_public,
                                std::string& metadata) {
  if (!has_name(body, "INITIATE"))
    return fail(errc::unexpected_command, "CURVE: expected INITIATE from the client");
  if (body.size() < 257)
    return fail(errc::malformed_command, "CURVE INITIATE of " + std::to_string(body.size())
                                           + " bytes, at least 257 needed");
  // The cookie must be ours and name this connection's C' and s'.
  auto cookie_nonce = long_nonce("COOKIE--", body.data() + 9);
  uint8_t cookie_plain[64];
  if (crypto_secretbox_open_easy(cookie_plain, u8(body) + 25, 80, cookie_nonce.data(),
                                 cookie_key_.data())
      != 0)
    return fail(errc::crypto_failure, "CURVE INITIATE cookie does not open");
  bool cookie_ok = sodium_memcmp(cookie_plain, client_short_.data(), 32) == 0
                   && sodium_memcmp(cookie_plain + 32, short_term_.secret_key.data(), 32) == 0;
  wipe(cookie_plain, sizeof(cookie_plain));
  if (!cookie_ok)
    return fail(errc::crypto_failure, "CURVE INITIATE cookie is not this connection's");
  auto counter = get_u64(body.data() + 105);
  if (auto err = check_nonce(counter, "CURVE INITIATE"))
    return err;
  auto nonce = short_nonce("CurveZMQINITIATE", counter);
  std::string plain(body.size() - 113 - 16, '\0');
  if (crypto_box_open_easy_afternm(u8(plain), u8(body) + 113, body.size() - 113, nonce.data(),
                                   precomputed_.data())
      != 0)
    return fail(errc::crypto_failure, "CURVE INITIATE box does not open");
  std::memcpy(client_public.data(), plain.data(), 32);
  auto vouch_nonce = long_nonce("VOUCH---", plain.data() + 32);
  uint8_t vouch[64];
  if (crypto_box_open_easy(vouch, u8(plain, 48), 80, vouch_nonce.data(), client_public.data(),
                           short_term_.secret_key.data())
      != 0)
    return fail(errc::crypto_failure,
                "CURVE INITIATE vouch does not open with the client's long-term key");
  if (sodium_memcmp(vouch, client_short_.data(), 32) != 0
      || sodium_memcmp(vouch + 32, long_term_.public_key.data(), 32) != 0)
    return fail(errc::crypto_failure,
                "CURVE INITIATE vouch names another short-term key or server");
  metadata.assign(plain, 128);
  return {};
}

std::string curve_server::ready(std::string_view metadata) {
  std::string out(14 + 16 + metadata.size(), '\0');
  std::memcpy(out.data(), "\x05READY", 6);
  auto counter = next_nonce();
  put_u64(u8(out, 6), counter);
  auto nonce = short_nonce("CurveZMQREADY---", counter);
  crypto_box_easy_afternm(u8(out, 14), u8(metadata), metadata.size(), nonce.data(),
                          precomputed_.data());
  ready_ = true;
  return out;
}

} // namespace broker::internal::zmtp
