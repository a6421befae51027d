#include "broker/internal/security/connection_access.hh"

#include <algorithm>
#include <iterator>
#include <utility>

namespace broker::internal::security {

namespace {

std::string quoted(std::string_view text) {
  return "\"" + printable(text) + "\"";
}

} // namespace

connection_access::connection_access(std::shared_ptr<runtime> rt, guard g)
  : rt_(std::move(rt)), guard_(std::move(g)) {
  subscribed_generation_ = guard_.generation();
  told_generation_ = guard_.generation();
}

connection_access::~connection_access() {
  if (watch_token_ != 0)
    rt_->unwatch(watch_token_);
}

std::string connection_access::describe_identity() const {
  const auto& name = guard_.identity();
  if (name.empty())
    return "no identity (revoked)";
  if (guard_.how() == mechanism::none)
    return "anonymous identity " + quoted(name);
  return "identity " + quoted(name);
}

void connection_access::watch_reloads(std::function<void()> f) {
  if (watch_token_ != 0)
    rt_->unwatch(watch_token_);
  watch_token_ = rt_->watch(std::move(f));
}

std::string connection_access::record(const subscribe_verdict& v) {
  auto& entry = grants_[v.requested];
  entry = grant{};
  for (const auto& g : v.granted) {
    entry.prefixes.push_back(g.prefix);
    entry.filtered = entry.filtered || g.filtered;
  }
  if (v.outcome == subscribe_outcome::allowed || v.by == nullptr)
    return {};
  std::string line = "subscription " + quoted(v.requested);
  if (v.outcome == subscribe_outcome::narrowed) {
    line += " narrowed to";
    for (size_t i = 0; i < v.granted.size(); ++i)
      line += (i == 0 ? " " : ", ") + quoted(v.granted[i].prefix);
  } else {
    line += " refused";
  }
  line += ": " + describe(*v.by);
  return line;
}

void connection_access::finish(subscription& result) {
  result.granted.clear();
  bool filtered = false;
  for (const auto& [requested, entry] : grants_) {
    result.granted.insert(result.granted.end(), entry.prefixes.begin(), entry.prefixes.end());
    filtered = filtered || entry.filtered;
  }
  std::sort(result.granted.begin(), result.granted.end());
  result.granted.erase(std::unique(result.granted.begin(), result.granted.end()),
                       result.granted.end());
  result.changed = result.granted != granted_ || !subscribed_;
  subscribed_ = true;
  granted_ = result.granted;
  filtered_ = filtered;
  subscribed_generation_ = guard_.generation();
}

connection_access::subscription
connection_access::subscribe(std::vector<std::string> requested) {
  subscription result;
  requested_ = std::move(requested);
  grants_.clear();
  auto verdicts = guard_.check_subscribe(requested_);
  for (const auto& v : verdicts)
    if (auto line = record(v); !line.empty())
      result.notices.push_back(std::move(line));
  // Tell each narrowing or refusal once, not again with every routing update that
  // repeats it.
  std::sort(result.notices.begin(), result.notices.end());
  std::vector<std::string> fresh;
  std::set_difference(result.notices.begin(), result.notices.end(), told_subscriptions_.begin(),
                      told_subscriptions_.end(), std::back_inserter(fresh));
  told_subscriptions_ = std::exchange(result.notices, std::move(fresh));
  finish(result);
  return result;
}

connection_access::subscription connection_access::update(const std::string& prefix,
                                                          bool add) {
  auto i = std::find(requested_.begin(), requested_.end(), prefix);
  bool known = i != requested_.end();
  if (add && !known)
    requested_.push_back(prefix);
  else if (!add && known)
    requested_.erase(i);
  if (guard_.reload_pending() || guard_.generation() != subscribed_generation_)
    return subscribe(requested_); // Everything under the new rules.
  subscription result;
  if (add && !known) {
    auto verdicts = guard_.check_subscribe({prefix});
    if (guard_.generation() != subscribed_generation_)
      return subscribe(requested_); // A reload came in between.
    for (const auto& v : verdicts) {
      auto line = record(v);
      auto pos = std::lower_bound(told_subscriptions_.begin(), told_subscriptions_.end(), line);
      if (line.empty() || (pos != told_subscriptions_.end() && *pos == line))
        continue;
      told_subscriptions_.insert(pos, line);
      result.notices.push_back(std::move(line));
    }
  } else if (!add) {
    grants_.erase(prefix);
  }
  finish(result);
  return result;
}

bool connection_access::may_publish(std::string_view topic, size_t n) {
  auto v = guard_.check_publish(topic, n);
  if (v.allowed)
    return true;
  if (told_generation_ != guard_.generation()) {
    told_.clear(); // New rules: their refusals are news.
    told_generation_ = guard_.generation();
  }
  if (v.by == nullptr || told_.size() >= max_told
      || std::find(told_.begin(), told_.end(), v.by) != told_.end())
    return false;
  told_.push_back(v.by);
  notices_.push_back("publishing on " + quoted(topic) + " refused: " + describe(*v.by)
                     + "; further messages refused by this rule are counted, not reported");
  return false;
}

std::vector<std::string> connection_access::take_notices() {
  return std::exchange(notices_, {});
}

bool connection_access::check_receive(std::string_view topic) {
  // Deliveries come in runs of one topic (a fan-out batch, a sender's stream): the last
  // verdict answers while the rules stay the same.
  if (receive_cached_ && receive_generation_ == guard_.generation()
      && !guard_.reload_pending() && topic == receive_topic_) {
    if (!receive_allowed_)
      guard_.count_refused_delivery(*receive_by_);
    return receive_allowed_;
  }
  auto v = guard_.check_receive(topic);
  // A refusal without a rule (never happens: only allowing verdicts lack one) is not
  // cached, so that a repeat is always counted against its rule.
  receive_cached_ = v.allowed || v.by != nullptr;
  receive_topic_.assign(topic.data(), topic.size());
  receive_generation_ = guard_.generation();
  receive_allowed_ = v.allowed;
  receive_by_ = v.by;
  return v.allowed;
}

connection_access::reload_outcome connection_access::poll_reload() {
  reload_outcome result;
  if (!guard_.poll_reload())
    return result;
  result.reloaded = true;
  result.revoked = guard_.revoked();
  if (result.revoked) {
    granted_.clear();
    return result;
  }
  result.sub = subscribe(requested_);
  return result;
}

} // namespace broker::internal::security
