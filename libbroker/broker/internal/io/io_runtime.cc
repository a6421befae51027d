#include "broker/internal/io/io_runtime.hh"

#include "broker/configuration.hh"
#include "broker/internal/config/logger.hh"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl.hpp>

#include <mutex>
#include <thread>
#include <vector>

namespace asio = boost::asio;

namespace broker::internal {

namespace {

constexpr std::string_view component = "tls";

/// Broker's anonymous cipher and its curve (doc/peering.md, "TLS").
constexpr const char* anonymous_cipher = "AECDH-AES256-SHA@SECLEVEL=0";
constexpr const char* anonymous_groups = "P-384";

/// Ciphers of the certificate mode (as Broker).
constexpr const char* verified_ciphers = "HIGH:!aNULL:!MD5";

error ssl_error(std::string what) {
  std::string detail;
  while (auto code = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    detail += detail.empty() ? "" : "; ";
    detail += buf;
  }
  if (!detail.empty())
    what += ": " + detail;
  return error{ec::invalid_config, "TLS setup failed: " + what};
}

} // namespace

std::string_view to_string(tls_mode x) noexcept {
  switch (x) {
    case tls_mode::plain:
      return "plain";
    case tls_mode::anonymous:
      return "anonymous";
    case tls_mode::verified:
      return "verified";
  }
  return "?";
}

struct io_runtime::impl {
  impl(const configuration& cfg, std::shared_ptr<const logger> log)
    : work(asio::make_work_guard(ioc)), lg(std::move(log)) {
    setup_tls(cfg);
    auto n = cfg.io_threads() == 0 ? 1 : cfg.io_threads();
    for (size_t i = 0; i < n; ++i)
      threads.emplace_back([this] { ioc.run(); });
  }

  void setup_tls(const configuration& cfg);
  error setup_verified(const configuration& cfg);
  error setup_anonymous();

  // The io_context is declared first so that it is destroyed last.
  asio::io_context ioc;
  asio::executor_work_guard<asio::io_context::executor_type> work;
  std::shared_ptr<const logger> lg; // Before setup_tls(), which may log.
  std::vector<std::thread> threads;
  tls_mode mode = tls_mode::plain;
  std::unique_ptr<asio::ssl::context> tls;
  error tls_error;
  std::once_flag warned;
  std::mutex stop_mtx;
};

void io_runtime::impl::setup_tls(const configuration& cfg) {
  if (cfg.disable_ssl())
    return;
  bool configured = !cfg.ssl_certificate().empty() || !cfg.ssl_key().empty()
                    || !cfg.ssl_passphrase().empty() || !cfg.ssl_cafile().empty()
                    || !cfg.ssl_capath().empty();
  mode = configured ? tls_mode::verified : tls_mode::anonymous;
  tls = std::make_unique<asio::ssl::context>(asio::ssl::context::tls);
  ERR_clear_error();
  if (auto err = configured ? setup_verified(cfg) : setup_anonymous()) {
    tls_error = std::move(err);
    tls.reset();
    (lg ? *lg : default_logger()).write(log_level::error, component, tls_error.message());
  }
}

error io_runtime::impl::setup_anonymous() {
  auto* ctx = tls->native_handle();
  // Anonymous ciphers exist only up to TLS 1.2; Broker's peers negotiate exactly that.
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1
      || SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION) != 1)
    return ssl_error("protocol versions");
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  if (SSL_CTX_set1_groups_list(ctx, anonymous_groups) != 1)
    return ssl_error("ECDH curve P-384");
  if (SSL_CTX_set_cipher_list(ctx, anonymous_cipher) != 1)
    return ssl_error("anonymous cipher AECDH-AES256-SHA");
  return {};
}

error io_runtime::impl::setup_verified(const configuration& cfg) {
  boost::system::error_code ec;
  auto fail = [](std::string what, const boost::system::error_code& ec) {
    return error{ec::invalid_config, "TLS setup failed: " + what + ": " + ec.message()};
  };
  auto* ctx = tls->native_handle();
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
    return ssl_error("protocol versions");
  if (SSL_CTX_set_cipher_list(ctx, verified_ciphers) != 1)
    return ssl_error("cipher list");
  if (!cfg.ssl_passphrase().empty()) {
    auto pass = cfg.ssl_passphrase();
    tls->set_password_callback(
      [pass](size_t, asio::ssl::context::password_purpose) { return pass; }, ec);
  }
  if (!cfg.ssl_certificate().empty())
    tls->use_certificate_chain_file(cfg.ssl_certificate(), ec);
  if (ec)
    return fail("broker.ssl.certificate \"" + cfg.ssl_certificate() + "\"", ec);
  if (!cfg.ssl_key().empty())
    tls->use_private_key_file(cfg.ssl_key(), asio::ssl::context::pem, ec);
  if (ec)
    return fail("broker.ssl.key \"" + cfg.ssl_key() + "\"", ec);
  if (!cfg.ssl_cafile().empty())
    tls->load_verify_file(cfg.ssl_cafile(), ec);
  if (ec)
    return fail("broker.ssl.cafile \"" + cfg.ssl_cafile() + "\"", ec);
  if (!cfg.ssl_capath().empty())
    tls->add_verify_path(cfg.ssl_capath(), ec);
  if (ec)
    return fail("broker.ssl.capath \"" + cfg.ssl_capath() + "\"", ec);
  tls->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert, ec);
  if (ec)
    return fail("verify mode", ec);
  return {};
}

io_runtime::io_runtime(const configuration& cfg, std::shared_ptr<const logger> log)
  : impl_(std::make_unique<impl>(cfg, std::move(log))) {
}

const logger& io_runtime::get_logger() const noexcept {
  return impl_->lg ? *impl_->lg : default_logger();
}

io_runtime::~io_runtime() {
  stop();
}

asio::io_context& io_runtime::context() noexcept {
  return impl_->ioc;
}

tls_mode io_runtime::mode() const noexcept {
  return impl_->mode;
}

expected<asio::ssl::context*> io_runtime::tls() {
  if (impl_->tls_error)
    return impl_->tls_error;
  std::call_once(impl_->warned, [this] {
    switch (impl_->mode) {
      case tls_mode::plain:
        break; // The user asked for it (broker.disable-ssl).
      case tls_mode::anonymous:
        get_logger().write(log_level::warning, component,
            "connections use TLS with anonymous ECDH, as Zeek Broker does by default: "
            "encrypted, but NOBODY IS AUTHENTICATED; configure broker.ssl.certificate, "
            "broker.ssl.key and broker.ssl.cafile for mutually authenticated TLS, or set "
            "broker.disable-ssl=true for plain TCP");
        break;
      case tls_mode::verified:
        get_logger().write(log_level::info, component,
                           "connections use mutually authenticated TLS");
        break;
    }
  });
  return impl_->tls.get();
}

bool io_runtime::on_io_thread() const noexcept {
  auto self = std::this_thread::get_id();
  for (auto& t : impl_->threads)
    if (t.get_id() == self)
      return true;
  return false;
}

void io_runtime::stop() {
  std::lock_guard<std::mutex> guard{impl_->stop_mtx};
  if (impl_->threads.empty())
    return;
  impl_->work.reset();
  impl_->ioc.stop();
  for (auto& t : impl_->threads)
    if (t.joinable())
      t.join();
  impl_->threads.clear();
}

} // namespace broker::internal
