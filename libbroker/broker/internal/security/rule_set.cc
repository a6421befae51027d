#include "broker/internal/security/rule_set.hh"

#include "broker/topic.hh"

#include <algorithm>
#include <map>

namespace broker::internal::security {

namespace {

constexpr int slot_of(action x) noexcept {
  return x == action::publish ? 0 : 1;
}

std::string quoted(std::string_view text) {
  return "\"" + printable(text) + "\"";
}

} // namespace

// -- names ----------------------------------------------------------------------------------

std::string_view to_string(action x) noexcept {
  return x == action::publish ? "publish" : "subscribe";
}

std::string_view to_string(subscribe_outcome x) noexcept {
  switch (x) {
    case subscribe_outcome::allowed:
      return "allowed";
    case subscribe_outcome::narrowed:
      return "narrowed";
    case subscribe_outcome::refused:
      return "refused";
  }
  return "?";
}

std::string_view to_string(auth_status x) noexcept {
  switch (x) {
    case auth_status::ok:
      return "ok";
    case auth_status::unknown:
      return "unknown";
    case auth_status::ambiguous:
      return "ambiguous";
    case auth_status::unusable:
      return "unusable";
  }
  return "?";
}

std::string rule_key(const rule& x) {
  auto act = std::string{to_string(x.act)};
  switch (x.kind) {
    case rule::origin::configured:
      return (x.eff == effect::allow ? "allow " : "deny ") + act + " " + quoted(x.prefix);
    case rule::origin::default_deny:
      return "default " + act;
    case rule::origin::reserved:
      return "reserved " + act;
    case rule::origin::unknown_identity:
      return "unknown identity " + act;
  }
  return act;
}

std::string describe(const rule& x) {
  auto act = std::string{to_string(x.act)};
  switch (x.kind) {
    case rule::origin::configured:
      return (x.eff == effect::allow ? "allow " : "deny ") + act + " " + quoted(x.prefix)
             + " for identity " + quoted(x.identity) + " (" + x.source + ")";
    case rule::origin::default_deny:
      return "no " + act + " rule of identity " + quoted(x.identity)
             + " matches: denied by default (identity defined at " + x.source + ")";
    case rule::origin::reserved:
      return "publishing on reserved \"<$>\" topics is never allowed (built-in rule)";
    case rule::origin::unknown_identity:
      return "the identity is unknown to the rules: " + act + " denied (built-in rule)";
  }
  return act;
}

// -- rule_set -------------------------------------------------------------------------------

std::shared_ptr<const rule_set> rule_set::allow_all() {
  static const auto instance = *rule_set_builder{}.build();
  return instance;
}

std::shared_ptr<const rule_set> rule_set::deny_all() {
  static const auto instance = [] {
    auto rs = *rule_set_builder{}.build();
    auto copy = std::shared_ptr<rule_set>{new rule_set{*rs}};
    copy->enforcing_ = true;
    return std::shared_ptr<const rule_set>{std::move(copy)};
  }();
  return instance;
}

identity_handle rule_set::find(std::string_view name) const noexcept {
  auto i = by_name_.find(std::string{name});
  return i == by_name_.end() ? no_identity : i->second;
}

const std::string& rule_set::name_of(identity_handle id) const noexcept {
  static const std::string nobody;
  return id < identities_.size() ? identities_[id].name : nobody;
}

auth_result rule_set::authenticate(const credential& cred) const {
  if (!enforcing())
    return {auth_status::ok, anonymous_};
  switch (cred.kind) {
    case mechanism::none:
      return {auth_status::ok, anonymous_};
    case mechanism::token: {
      if (!cred.usable)
        return {auth_status::unusable, no_identity};
      // Compare with every stored hash, without stopping early.
      auto found = no_identity;
      for (const auto& [hash, id] : tokens_)
        if (same_digest(hash, cred.token_digest))
          found = id;
      return {found == no_identity ? auth_status::unknown : auth_status::ok, found};
    }
    case mechanism::certificate: {
      auto found = no_identity;
      for (const auto& name : cred.names) {
        auto i = certificate_names_.find(name);
        if (i == certificate_names_.end())
          continue;
        if (found != no_identity && found != i->second)
          return {auth_status::ambiguous, no_identity};
        found = i->second;
      }
      return {found == no_identity ? auth_status::unknown : auth_status::ok, found};
    }
    case mechanism::curve_key: {
      auto i = cred.names.empty() ? curve_keys_.end() : curve_keys_.find(cred.names.front());
      if (i == curve_keys_.end())
        return {auth_status::unknown, no_identity};
      return {auth_status::ok, i->second};
    }
  }
  return {auth_status::unknown, no_identity};
}

const rule& rule_set::decide(const identity_entry& x, action act, std::string_view topic) const
  noexcept {
  auto slot = slot_of(act);
  auto index = x.trie.longest(slot, topic);
  return rules_[static_cast<size_t>(index == prefix_trie::none ? x.default_rule[slot] : index)];
}

verdict rule_set::check_publish(identity_handle id, std::string_view topic) const noexcept {
  if (is_reserved_topic(topic))
    return {false, &rules_[static_cast<size_t>(reserved_rule_)]};
  if (!enforcing())
    return {true, nullptr};
  if (id >= identities_.size())
    return {false, &rules_[static_cast<size_t>(unknown_rule_[slot_of(action::publish)])]};
  const auto& r = decide(identities_[id], action::publish, topic);
  return {r.eff == effect::allow, &r};
}

verdict rule_set::check_receive(identity_handle id, std::string_view topic) const noexcept {
  if (!enforcing())
    return {true, nullptr};
  if (id >= identities_.size())
    return {false, &rules_[static_cast<size_t>(unknown_rule_[slot_of(action::subscribe)])]};
  const auto& r = decide(identities_[id], action::subscribe, topic);
  return {r.eff == effect::allow, &r};
}

subscribe_verdict rule_set::check_subscribe(identity_handle id, std::string_view prefix) const {
  subscribe_verdict result;
  result.requested = std::string{prefix};
  if (!enforcing()) {
    result.granted.push_back({result.requested, false});
    return result;
  }
  if (id >= identities_.size()) {
    result.outcome = subscribe_outcome::refused;
    result.by = &rules_[static_cast<size_t>(unknown_rule_[slot_of(action::subscribe)])];
    return result;
  }
  const auto& entry = identities_[id];
  const auto& decision = decide(entry, action::subscribe, prefix);
  auto below = entry.trie.below(slot_of(action::subscribe), prefix);
  auto eff_of = [this, &below](size_t i) {
    return rules_[static_cast<size_t>(below[i].value)].eff;
  };
  if (decision.eff == effect::allow) {
    // Allowed as a whole; a deny anywhere below leaves holes that only a check per
    // delivery can keep closed.
    bool holes = false;
    for (size_t i = 0; i < below.size() && !holes; ++i)
      holes = eff_of(i) == effect::deny;
    result.granted.push_back({result.requested, holes});
    return result;
  }
  // Denied as a whole: grant the topmost allowed prefixes below it. `grant[i]` is the
  // granted entry that entry i lies in, or -1.
  std::vector<int32_t> grant(below.size(), -1);
  for (size_t i = 0; i < below.size(); ++i) {
    auto parent = below[i].parent;
    auto inside = parent >= 0 ? grant[static_cast<size_t>(parent)] : -1;
    auto eff = eff_of(i);
    if (eff == effect::allow && inside < 0) {
      result.granted.push_back({rules_[static_cast<size_t>(below[i].value)].prefix, false});
      inside = static_cast<int32_t>(result.granted.size() - 1);
    } else if (eff == effect::deny && inside >= 0) {
      result.granted[static_cast<size_t>(inside)].filtered = true;
    }
    grant[i] = inside;
  }
  result.outcome = result.granted.empty() ? subscribe_outcome::refused
                                          : subscribe_outcome::narrowed;
  result.by = &decision;
  return result;
}

std::vector<subscribe_verdict>
rule_set::check_subscribe(identity_handle id, const std::vector<std::string>& filter) const {
  std::vector<subscribe_verdict> result;
  result.reserve(filter.size());
  for (const auto& prefix : filter)
    result.push_back(check_subscribe(id, prefix));
  return result;
}

audit_counters& rule_set::identity_counters(identity_handle id) const noexcept {
  return id < identities_.size() ? *identities_[id].counters : *unknown_counters_;
}

// -- rule_set_builder -----------------------------------------------------------------------

rule_set_builder::rule_set_builder(std::shared_ptr<audit_log> audit)
  : audit_(audit ? std::move(audit) : std::make_shared<audit_log>()) {
}

void rule_set_builder::anonymous_identity(std::string name, std::string source) {
  anonymous_name_ = std::move(name);
  anonymous_source_ = std::move(source);
}

identity_handle rule_set_builder::add_identity(const std::string& name,
                                               const std::string& source) {
  if (auto i = by_name_.find(name); i != by_name_.end())
    return i->second;
  auto id = static_cast<identity_handle>(identities_.size());
  identities_.push_back(pending_identity{name, source, {}, {}});
  by_name_.emplace(name, id);
  return id;
}

void rule_set_builder::add_rule(identity_handle id, action act, effect eff,
                                std::string prefix, std::string source) {
  identities_[id].rules.push_back(pending_rule{act, eff, std::move(prefix), std::move(source)});
}

error rule_set_builder::claim(
  std::unordered_map<std::string, std::pair<identity_handle, std::string>>& owners,
  const std::string& key, identity_handle id, const std::string& what,
  const std::string& source) {
  auto [pos, added] = owners.emplace(key, std::pair{id, source});
  if (!added) {
    const auto& [owner, where] = pos->second;
    auto again = owner == id ? "it is listed twice for identity \"" + identities_[id].name + "\""
                             : "it already belongs to identity \""
                                 + identities_[owner].name + "\"";
    return error{ec::invalid_config, source + ": " + what + ": " + again + " (" + where + ")"};
  }
  if (identities_[id].first_credential.empty())
    identities_[id].first_credential = source;
  return {};
}

error rule_set_builder::add_token(identity_handle id, const digest& hash,
                                  const std::string& source) {
  for (size_t i = 0; i < tokens_.size(); ++i)
    if (same_digest(tokens_[i].first, hash)) {
      auto owner = tokens_[i].second;
      auto again = owner == id ? "it is listed twice for identity \"" + identities_[id].name
                                   + "\""
                               : "it already belongs to identity \""
                                   + identities_[owner].name + "\"";
      return error{ec::invalid_config, source + ": token hash: " + again + " ("
                                         + token_sources_[i] + ")"};
    }
  tokens_.emplace_back(hash, id);
  token_sources_.push_back(source);
  if (identities_[id].first_credential.empty())
    identities_[id].first_credential = source;
  return {};
}

error rule_set_builder::add_certificate_name(identity_handle id, const std::string& name,
                                             const std::string& source) {
  return claim(certificate_names_, name, id, "certificate name \"" + printable(name) + "\"",
               source);
}

error rule_set_builder::add_curve_key(identity_handle id, const std::string& key,
                                      const std::string& source) {
  return claim(curve_keys_, key, id, "CURVE key \"" + key + "\"", source);
}

expected<std::shared_ptr<const rule_set>> rule_set_builder::build() {
  // The constructor is private: make_shared cannot reach it.
  std::shared_ptr<rule_set> result{new rule_set};
  auto& rs = *result;
  rs.audit_ = audit_;
  if (!identities_.empty()) {
    auto anon = add_identity(anonymous_name_, anonymous_source_.empty()
                                                ? std::string{"implicit anonymous identity"}
                                                : anonymous_source_);
    if (!identities_[anon].first_credential.empty())
      return error{ec::invalid_config,
                   identities_[anon].first_credential + ": identity \"" + anonymous_name_
                     + "\" is the identity of unauthenticated connections "
                       "(anonymous-identity): it cannot have credentials"};
  }
  // Configured rules first: per identity and action, one rule per (prefix, effect).
  // Per identity: (slot, rule index) of each prefix's deciding rule. The tries are built
  // once rules_ is complete, since they view the rules' prefixes.
  std::vector<std::vector<std::pair<int, int32_t>>> deciding(identities_.size());
  for (identity_handle id = 0; id < identities_.size(); ++id) {
    auto& pi = identities_[id];
    // (action, prefix) -> rule index per effect.
    std::map<std::pair<action, std::string>, std::pair<int32_t, int32_t>> seen;
    for (auto& pr : pi.rules) {
      auto& [allow_index, deny_index] = seen.try_emplace({pr.act, pr.prefix}, -1, -1)
                                          .first->second;
      auto& index = pr.eff == effect::allow ? allow_index : deny_index;
      auto subject = "identity \"" + printable(pi.name) + "\": " + std::string{to_string(pr.act)}
                     + " prefix " + quoted(pr.prefix);
      if (index >= 0) {
        rs.notes_.push_back(pr.source + ": " + subject + " is listed twice (also at "
                            + rs.rules_[static_cast<size_t>(index)].source + ")");
        continue;
      }
      rule r;
      r.kind = rule::origin::configured;
      r.act = pr.act;
      r.eff = pr.eff;
      r.identity = pi.name;
      r.prefix = pr.prefix;
      r.source = pr.source;
      index = static_cast<int32_t>(rs.rules_.size());
      rs.rules_.push_back(std::move(r));
      if (allow_index >= 0 && deny_index >= 0)
        rs.notes_.push_back(pr.source + ": " + subject + " is both allowed ("
                            + rs.rules_[static_cast<size_t>(allow_index)].source
                            + ") and denied ("
                            + rs.rules_[static_cast<size_t>(deny_index)].source
                            + "): deny wins");
    }
    // Deny wins a tie.
    for (auto& [key, indexes] : seen)
      deciding[id].emplace_back(slot_of(key.first),
                                indexes.second >= 0 ? indexes.second : indexes.first);
  }
  rs.configured_ = rs.rules_.size();
  auto add_builtin = [&rs](rule::origin kind, action act, std::string identity,
                           std::string source) {
    rule r;
    r.kind = kind;
    r.act = act;
    r.eff = effect::deny;
    r.identity = std::move(identity);
    r.source = std::move(source);
    rs.rules_.push_back(std::move(r));
    return static_cast<int32_t>(rs.rules_.size() - 1);
  };
  std::vector<std::array<int32_t, 2>> defaults(identities_.size());
  for (identity_handle id = 0; id < identities_.size(); ++id)
    for (auto act : {action::publish, action::subscribe})
      defaults[id][static_cast<size_t>(slot_of(act))] =
        add_builtin(rule::origin::default_deny, act, identities_[id].name,
                    identities_[id].source);
  rs.reserved_rule_ = add_builtin(rule::origin::reserved, action::publish, {}, {});
  for (auto act : {action::publish, action::subscribe})
    rs.unknown_rule_[slot_of(act)] = add_builtin(rule::origin::unknown_identity, act, {}, {});
  // The rules vector is complete: addresses are stable from here on.
  for (auto& r : rs.rules_)
    r.counters = &audit_->slot(r.identity, rule_key(r));
  rs.unknown_counters_ = &audit_->slot({}, "unknown identity");
  rs.identities_.reserve(identities_.size());
  for (identity_handle id = 0; id < identities_.size(); ++id) {
    rule_set::identity_entry entry;
    entry.name = identities_[id].name;
    entry.source = identities_[id].source;
    std::vector<prefix_trie::item> items;
    items.reserve(deciding[id].size());
    for (auto [slot, index] : deciding[id])
      items.push_back({rs.rules_[static_cast<size_t>(index)].prefix, slot, index});
    entry.trie = prefix_trie{items};
    entry.default_rule[0] = defaults[id][0];
    entry.default_rule[1] = defaults[id][1];
    entry.counters = &audit_->slot(entry.name, {});
    rs.by_name_.emplace(entry.name, id);
    rs.identities_.push_back(std::move(entry));
  }
  rs.enforcing_ = !rs.identities_.empty();
  if (rs.enforcing())
    rs.anonymous_ = rs.find(anonymous_name_);
  rs.tokens_ = tokens_;
  for (auto& [name, owner] : certificate_names_)
    rs.certificate_names_.emplace(name, owner.first);
  for (auto& [key, owner] : curve_keys_)
    rs.curve_keys_.emplace(key, owner.first);
  return std::shared_ptr<const rule_set>{std::move(result)};
}

} // namespace broker::internal::security
