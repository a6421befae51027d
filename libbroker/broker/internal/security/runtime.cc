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
  return {};
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

void runtime::authentication_failed(mechanism how, auth_status why, std::string_view address) {
  audit_->slot({}, std::string{to_string(how)})
    .authentication_failures.fetch_add(1, std::memory_order_relaxed);
  std::string reason;
  switch (why) {
    case auth_status::ok:
      reason = "no failure";
      break;
    case auth_status::unknown:
      reason = "the credential belongs to no identity";
      break;
    case auth_status::ambiguous:
      reason = "the certificate's names belong to more than one identity";
      break;
    case auth_status::unusable:
      reason = "the credential could not be processed";
      break;
  }
  failures_.failed(to_string(how), address, reason);
}

} // namespace broker::internal::security
