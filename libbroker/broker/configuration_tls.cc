// configuration::check_tls(): the TLS files of broker.ssl.*, loaded as an endpoint loads
// them (doc/peering.md, "TLS"), so that --check-config finds what would fail at start-up.

#include "broker/configuration.hh"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <cstring>
#include <filesystem>
#include <memory>

namespace broker {

namespace {

struct ctx_deleter {
  void operator()(SSL_CTX* ctx) const noexcept { SSL_CTX_free(ctx); }
};

/// OpenSSL's reasons queued by the last calls, most recent last, e.g. "no start line".
std::string openssl_reasons() {
  std::string result;
  while (auto code = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(code);
    result += result.empty() ? "" : "; ";
    result += reason != nullptr ? reason : "error " + std::to_string(ERR_GET_REASON(code));
  }
  return result;
}

error bad_file(const char* key, const std::string& path, const std::string& what) {
  auto reasons = openssl_reasons();
  return error{ec::invalid_config, std::string{key} + " \"" + path + "\": " + what
                                     + (reasons.empty() ? "" : " (OpenSSL: " + reasons + ")")};
}

/// Hands the passphrase to OpenSSL, and never lets it ask on the terminal.
struct passphrase_source {
  const std::string* passphrase;
  bool asked = false;
};

int passphrase_callback(char* buf, int size, int, void* user) {
  auto* src = static_cast<passphrase_source*>(user);
  src->asked = true;
  auto n = static_cast<int>(src->passphrase->size());
  if (n == 0 || n > size)
    return 0;
  std::memcpy(buf, src->passphrase->data(), static_cast<size_t>(n));
  return n;
}

} // namespace

error configuration::check_tls() const {
  const auto& cert = ssl_certificate();
  const auto& key = ssl_key();
  const auto& pass = ssl_passphrase();
  const auto& cafile = ssl_cafile();
  const auto& capath = ssl_capath();
  if (disable_ssl()
      || (cert.empty() && key.empty() && pass.empty() && cafile.empty() && capath.empty()))
    return {};
  auto invalid = [](std::string text) { return error{ec::invalid_config, std::move(text)}; };
  // Any broker.ssl.* setting means mutually authenticated TLS: both sides show a
  // certificate signed by a CA the other trusts.
  if (cert.empty())
    return invalid(key.empty() ? "broker.ssl.* is set, so peers must authenticate, but "
                                 "broker.ssl.certificate and broker.ssl.key are not: set "
                                 "this node's certificate and key too"
                               : "broker.ssl.key is set without broker.ssl.certificate");
  if (key.empty())
    return invalid("broker.ssl.certificate is set without broker.ssl.key (the "
                   "certificate's private key)");
  if (cafile.empty() && capath.empty())
    return invalid("broker.ssl.certificate is set, but neither broker.ssl.cafile nor "
                   "broker.ssl.capath: this node could verify no peer");
  if (!capath.empty() && !std::filesystem::is_directory(capath))
    return invalid("broker.ssl.capath \"" + capath + "\": not a directory");
  ERR_clear_error();
  std::unique_ptr<SSL_CTX, ctx_deleter> ctx{SSL_CTX_new(TLS_method())};
  if (!ctx)
    return invalid("cannot check the TLS settings: " + openssl_reasons());
  passphrase_source source{&pass};
  SSL_CTX_set_default_passwd_cb(ctx.get(), passphrase_callback);
  SSL_CTX_set_default_passwd_cb_userdata(ctx.get(), &source);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), cert.c_str()) != 1)
    return bad_file("broker.ssl.certificate", cert, "not a readable PEM certificate");
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), key.c_str(), SSL_FILETYPE_PEM) != 1) {
    auto reasons = openssl_reasons();
    auto mismatch = reasons.find("key values mismatch") != std::string::npos;
    std::string what;
    if (mismatch)
      what = "does not belong to broker.ssl.certificate \"" + cert + "\"";
    else if (source.asked && pass.empty())
      what = "is encrypted, and broker.ssl.passphrase is not set";
    else if (source.asked)
      what = "does not decrypt with broker.ssl.passphrase";
    else
      what = "not a readable PEM private key";
    return error{ec::invalid_config, "broker.ssl.key \"" + key + "\": " + what
                                       + (reasons.empty() ? "" : " (OpenSSL: " + reasons + ")")};
  }
  if (SSL_CTX_check_private_key(ctx.get()) != 1)
    return bad_file("broker.ssl.key", key,
                    "does not belong to broker.ssl.certificate \"" + cert + "\"");
  if (!cafile.empty() && SSL_CTX_load_verify_locations(ctx.get(), cafile.c_str(), nullptr) != 1)
    return bad_file("broker.ssl.cafile", cafile, "holds no readable PEM certificate");
  return {};
}

} // namespace broker
