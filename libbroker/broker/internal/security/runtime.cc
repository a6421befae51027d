#include "broker/internal/security/runtime.hh"

#include "broker/internal/security/rules_file.hh"

namespace broker::internal::security {

namespace {

constexpr std::string_view component = "security";

} // namespace

runtime::runtime(std::string rules_file, std::shared_ptr<const logger> log)
  : rules_file_(std::move(rules_file)),
    log_(std::move(log)),
    audit_(std::make_shared<audit_log>()),
    failures_([this](std::string_view line) {
      this->log().write(log_level::warning, component, line);
    }) {
}

const logger& runtime::log() const noexcept {
  return log_ ? *log_ : default_logger();
}

error runtime::load() {
  if (rules_file_.empty())
    return {};
  std::lock_guard<std::mutex> guard{load_mtx_};
  auto rules = load_rules_file(rules_file_, audit_);
  if (!rules) {
    // Fail closed: until a load succeeds, refuse everything rather than allow it.
    if (!loaded_)
      policy_.publish(rule_set::deny_all());
    return rules.error_value();
  }
  loaded_ = true;
  const auto& rs = **rules;
  for (const auto& note : rs.notes())
    log().write(log_level::warning, component, note);
  if (rs.enforcing())
    log().write(log_level::info, component,
                "rules from " + printable(rules_file_) + ": "
                  + std::to_string(rs.identity_count()) + " identities, "
                  + std::to_string(rs.configured_rules())
                  + " rules; everything else is denied");
  else
    log().write(log_level::warning, component,
                "rules file " + printable(rules_file_)
                  + " defines no identity: everybody may publish and subscribe everything");
  policy_.publish(std::move(*rules));
  notify_watchers();
  return {};
}

void runtime::notify_watchers() {
  std::vector<std::function<void()>> calls;
  {
    std::lock_guard<std::mutex> guard{watch_mtx_};
    calls.reserve(watchers_.size());
    for (auto& [token, f] : watchers_)
      calls.push_back(f);
  }
  for (auto& f : calls)
    f();
}

uint64_t runtime::watch(std::function<void()> f) {
  std::lock_guard<std::mutex> guard{watch_mtx_};
  auto token = next_watch_++;
  watchers_.emplace(token, std::move(f));
  return token;
}

void runtime::unwatch(uint64_t token) {
  std::lock_guard<std::mutex> guard{watch_mtx_};
  watchers_.erase(token);
}

error runtime::reload() {
  if (rules_file_.empty()) {
    log().write(log_level::info, component,
                "reload: no broker.security.rules-file configured, nothing to reload");
    return {};
  }
  auto err = load();
  if (err)
    log().write(log_level::error, component,
                "reload failed, the previous rules stay in force: " + err.message());
  return err;
}

namespace {

/// Why authenticate() said `why`, for the client and the log.
std::string failure_reason(const credential& cred, auth_status why) {
  switch (why) {
    case auth_status::ok:
      return "no failure";
    case auth_status::unknown:
      switch (cred.kind) {
        case mechanism::token:
          return "the token belongs to no identity";
        case mechanism::certificate: {
          std::string names;
          for (const auto& name : cred.names)
            names += (names.empty() ? "" : ", ") + name;
          return "the certificate (" + (names.empty() ? std::string{"no usable names"} : names)
                 + ") belongs to no identity";
        }
        case mechanism::curve_key:
          return "the CURVE key " + (cred.names.empty() ? std::string{} : cred.names.front())
                 + " belongs to no identity";
        case mechanism::none:
          break;
      }
      return "the credential belongs to no identity";
    case auth_status::ambiguous:
      return "the certificate's names belong to more than one identity";
    case auth_status::unusable:
      return "the credential could not be processed";
  }
  return "?";
}

} // namespace

void runtime::authentication_failed(mechanism how, auth_status why, std::string_view address) {
  audit_->slot({}, std::string{to_string(how)})
    .authentication_failures.fetch_add(1, std::memory_order_relaxed);
  credential nobody;
  nobody.kind = how;
  failures_.failed(to_string(how), address, failure_reason(nobody, why));
}

admission runtime::admit(credential cred, const std::string& address, uint16_t port) {
  admission result;
  auto where = address.find(':') != std::string::npos
                 ? "[" + address + "]:" + std::to_string(port)
                 : address + ":" + std::to_string(port);
  auto how = cred.kind;
  if (how != mechanism::none) {
    if (auto wait = throttle_.wait_seconds(address); wait > 0) {
      audit_->slot({}, std::string{to_string(how)})
        .authentication_throttled.fetch_add(1, std::memory_order_relaxed);
      result.throttled = true;
      result.retry_after = wait;
      result.reason = "too many failed authentications from " + address
                      + "; try again in " + std::to_string(wait) + " s";
      failures_.failed(to_string(how), where, "refused unchecked: " + result.reason);
      return result;
    }
  }
  guard g{policy_, std::move(cred)};
  if (g.status() == auth_status::ok) {
    result.admitted.emplace(std::move(g));
    return result;
  }
  result.status = g.status();
  // The names of a certificate or key are no secret and help the operator; a token is
  // never shown (the credential keeps only its digest).
  result.reason = "authentication failed: " + failure_reason(g.presented(), g.status());
  audit_->slot({}, std::string{to_string(how)})
    .authentication_failures.fetch_add(1, std::memory_order_relaxed);
  failures_.failed(to_string(how), where, failure_reason(g.presented(), g.status()));
  throttle_.failed(address);
  return result;
}

std::string runtime::identity_of_curve_key(std::string_view z85) const {
  if (!is_curve_key(z85))
    return {};
  auto rules = policy_.current();
  if (!rules || !rules->enforcing())
    return {};
  auto res = rules->authenticate(credential::from_curve_key(std::string{z85}));
  if (res.status != auth_status::ok || res.id == no_identity)
    return {};
  return rules->name_of(res.id);
}

admission runtime::admit_curve_key(std::string_view z85, const std::string& address,
                                   uint16_t port) {
  if (is_curve_key(z85))
    return admit(credential::from_curve_key(std::string{z85}), address, port);
  admission result;
  result.status = auth_status::unusable;
  auto what = "not a CURVE public key (expected 40 characters of Z85, got "
              + std::to_string(z85.size()) + " bytes)";
  result.reason = "authentication failed: " + what;
  auto where = address.find(':') != std::string::npos
                 ? "[" + address + "]:" + std::to_string(port)
                 : address + ":" + std::to_string(port);
  audit_->slot({}, std::string{to_string(mechanism::curve_key)})
    .authentication_failures.fetch_add(1, std::memory_order_relaxed);
  failures_.failed(to_string(mechanism::curve_key), where, what);
  throttle_.failed(address);
  return result;
}

} // namespace broker::internal::security
