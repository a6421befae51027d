#include "broker/internal/security/rules_file.hh"

#include "broker/internal/config/config_file.hh"
#include "broker/internal/config/read_file.hh"
#include "broker/topic.hh"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

namespace broker::internal::security {

namespace {

constexpr size_t max_identity_name = 64;
constexpr std::string_view identity_section = "identity.";
constexpr std::string_view anonymous_key = "anonymous-identity";

enum class field : uint8_t {
  certificates,
  tokens,
  curve_keys,
  publish,
  deny_publish,
  subscribe,
  deny_subscribe,
};

constexpr std::pair<std::string_view, field> fields[] = {
  {"certificates", field::certificates},   {"tokens", field::tokens},
  {"curve-keys", field::curve_keys},       {"publish", field::publish},
  {"deny-publish", field::deny_publish},   {"subscribe", field::subscribe},
  {"deny-subscribe", field::deny_subscribe},
};

/// Levenshtein distance, for "did you mean" (inputs are short keys).
size_t distance(std::string_view x, std::string_view y) {
  std::vector<size_t> row(y.size() + 1);
  for (size_t j = 0; j <= y.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= x.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= y.size(); ++j) {
      auto up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (x[i - 1] == y[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[y.size()];
}

std::string quoted(std::string_view text) {
  return "\"" + printable(text) + "\"";
}

class loader {
public:
  loader(std::string_view origin, std::shared_ptr<audit_log> audit)
    : origin_(origin), builder_(std::move(audit)) {}

  expected<std::shared_ptr<const rule_set>> run(std::string_view text) {
    auto entries = parse_config_text(text, origin_);
    if (!entries)
      return entries.error_value();
    for (auto& entry : *entries)
      if (auto err = apply(entry))
        return err;
    return builder_.build();
  }

private:
  std::string where(const config_entry& entry) const {
    return origin_ + ":" + std::to_string(entry.line) + ":" + std::to_string(entry.column);
  }

  error fail(const config_entry& entry, const std::string& what) const {
    return error{ec::invalid_config, where(entry) + ": " + what};
  }

  error apply(const config_entry& entry) {
    if (entry.key == anonymous_key)
      return apply_anonymous(entry);
    if (entry.key.compare(0, identity_section.size(), identity_section) != 0)
      return fail(entry, "unknown key " + quoted(entry.key) + " (expected "
                           + std::string{anonymous_key} + " or identity.<name>.<field>)");
    auto rest = std::string_view{entry.key}.substr(identity_section.size());
    auto dot = rest.find('.');
    if (dot == std::string_view::npos)
      return fail(entry, "key " + quoted(entry.key) + " names no field: write "
                           "identity.<name>.<field>, e.g. identity." + std::string{rest}
                           + ".publish");
    auto name = rest.substr(0, dot);
    auto field_name = rest.substr(dot + 1);
    if (!is_identity_name(name))
      return fail(entry, "invalid identity name " + quoted(name)
                           + " (words of A-Z a-z 0-9 _ -, at most 64 bytes)");
    const field* which = nullptr;
    for (const auto& [text, f] : fields)
      if (text == field_name)
        which = &f;
    if (which == nullptr) {
      std::string guess;
      for (const auto& [text, f] : fields)
        if (distance(field_name, text) <= 2)
          guess = " (did you mean \"" + std::string{text} + "\"?)";
      return fail(entry, "identity " + quoted(name) + ": unknown field " + quoted(field_name)
                           + guess + "; fields: certificates, tokens, curve-keys, publish, "
                                     "deny-publish, subscribe, deny-subscribe");
    }
    auto full = std::string{name} + "." + std::string{field_name};
    if (auto [pos, added] = seen_.emplace(full, where(entry)); !added)
      return fail(entry, "identity " + quoted(name) + ": " + std::string{field_name}
                           + " is set twice (first at " + pos->second + ")");
    if (!builder_has(name)) {
      if (++identities_ > max_identities)
        return fail(entry, "more than " + std::to_string(max_identities) + " identities");
    }
    auto id = builder_.add_identity(std::string{name}, where(entry));
    known_.emplace(std::string{name});
    std::vector<std::string> values;
    if (auto* scalar = std::get_if<std::string>(&entry.value))
      values.push_back(*scalar);
    else
      values = std::get<std::vector<std::string>>(entry.value);
    elements_ += values.size();
    if (elements_ > max_rule_elements)
      return fail(entry, "more than " + std::to_string(max_rule_elements)
                           + " prefixes and credentials in one file");
    for (size_t i = 0; i < values.size(); ++i)
      if (auto err = apply_value(entry, name, field_name, *which, i, values[i], id))
        return err;
    return {};
  }

  bool builder_has(std::string_view name) const {
    return known_.count(std::string{name}) > 0;
  }

  error apply_anonymous(const config_entry& entry) {
    auto* name = std::get_if<std::string>(&entry.value);
    if (name == nullptr)
      return fail(entry, std::string{anonymous_key} + ": expected an identity name, got a "
                                                      "list");
    if (!is_identity_name(*name))
      return fail(entry, std::string{anonymous_key} + ": invalid identity name "
                           + quoted(*name) + " (words of A-Z a-z 0-9 _ -, at most 64 bytes)");
    if (!anonymous_where_.empty())
      return fail(entry, std::string{anonymous_key} + " is set twice (first at "
                           + anonymous_where_ + ")");
    anonymous_where_ = where(entry);
    builder_.anonymous_identity(*name, anonymous_where_);
    return {};
  }

  error apply_value(const config_entry& entry, std::string_view name,
                    std::string_view field_name, field which, size_t index,
                    const std::string& value, identity_handle id) {
    auto subject = "identity " + quoted(name) + ": " + std::string{field_name} + "["
                   + std::to_string(index) + "]";
    auto source = where(entry);
    switch (which) {
      case field::tokens: {
        auto hash = parse_token_hash(value);
        if (!hash)
          // Never quote it: it may be the token itself.
          return fail(entry, subject + ": expected \"sha256:\" followed by 64 hex digits "
                                       "(broker-node --hash-token makes one from a token), "
                                       "got something else of "
                               + std::to_string(value.size())
                               + " bytes (not shown: it may be a token in clear text)");
        if (auto err = builder_.add_token(id, *hash, source))
          return err;
        return {};
      }
      case field::certificates: {
        if (auto what = check_certificate_name(value); !what.empty())
          return fail(entry, subject + ": " + what + ", got " + quoted(value));
        return builder_.add_certificate_name(id, value, source);
      }
      case field::curve_keys: {
        if (!is_curve_key(value))
          return fail(entry, subject + ": expected a CURVE public key, 40 characters of Z85, "
                                       "got " + quoted(value));
        return builder_.add_curve_key(id, value, source);
      }
      case field::publish:
      case field::deny_publish:
      case field::subscribe:
      case field::deny_subscribe: {
        if (value.size() > max_rule_prefix)
          return fail(entry, subject + ": a prefix longer than "
                               + std::to_string(max_rule_prefix) + " bytes");
        bool publishes = which == field::publish || which == field::deny_publish;
        if (publishes && is_reserved_topic(value))
          return fail(entry, subject + ": reserved prefix " + quoted(value)
                               + ": nobody may publish on \"<$>\" topics, so no rule can "
                                 "name them");
        auto eff = which == field::publish || which == field::subscribe ? effect::allow
                                                                        : effect::deny;
        builder_.add_rule(id, publishes ? action::publish : action::subscribe, eff, value,
                          source);
        return {};
      }
    }
    return {};
  }

  std::string origin_;
  rule_set_builder builder_;
  std::map<std::string, std::string> seen_; ///< "name.field" -> where.
  std::set<std::string> known_;
  std::string anonymous_where_;
  size_t identities_ = 0;
  size_t elements_ = 0;
};

} // namespace

bool is_identity_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > max_identity_name)
    return false;
  for (auto c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '_' || c == '-'))
      return false;
  return true;
}

expected<std::shared_ptr<const rule_set>>
load_rules(std::string_view text, std::string_view origin, std::shared_ptr<audit_log> audit) {
  return loader{origin, std::move(audit)}.run(text);
}

expected<std::shared_ptr<const rule_set>> load_rules_file(const std::string& path,
                                                          std::shared_ptr<audit_log> audit) {
  auto fail = [&path](const char* what) {
    return error{ec::cannot_open_file, std::string{"broker.security.rules-file: "} + what
                                         + " \"" + printable(path)
                                         + "\": " + std::strerror(errno)};
  };
  std::string text;
  switch (read_file_bounded(path, max_rules_file_size, text)) {
    case file_read::cannot_open:
      return fail("cannot open");
    case file_read::cannot_read:
      return fail("cannot read");
    case file_read::too_large:
      return error{ec::invalid_config, "broker.security.rules-file \"" + printable(path)
                                         + "\" is larger than "
                                         + std::to_string(max_rules_file_size) + " bytes"};
    case file_read::ok:
      break;
  }
  return load_rules(text, path, std::move(audit));
}

} // namespace broker::internal::security
