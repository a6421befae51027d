#include "broker/internal/store/replication_channel.hh"

#include <algorithm>
#include <cassert>
#include <limits>
#include <sstream>
#include <type_traits>

namespace broker::internal::channel {

namespace {

// -- helpers --------------------------------------------------------------------------------

/// Sequence numbers come from the network: never let arithmetic on them wrap.
sequence_number saturated_add(sequence_number x, uint64_t y) noexcept {
  constexpr auto max = std::numeric_limits<sequence_number>::max();
  return y > max - x ? max : x + y;
}

/// The kind tags of encode(), in variant order.
enum class kind : count {
  event = 0,
  heartbeat = 1,
  handshake = 2,
  retransmit_failed = 3,
  attach = 4,
  cumulative_ack = 5,
  nack = 6,
};

/// Longest snapshot text to_string() shows.
constexpr size_t max_snapshot_text = 64;

data tag(kind k) {
  return data{static_cast<count>(k)};
}

error invalid(std::string text) {
  return error{ec::invalid_message, "channel message: " + std::move(text)};
}

/// Reads element `i` of `xs` as a count not below `min`; sets `err` on failure.
std::optional<count> read_count(const vector& xs, size_t i, const char* field, count min,
                                std::optional<error>& err) {
  auto* x = get_if<count>(xs[i]);
  if (x == nullptr)
    err = invalid(std::string{field} + " is not a count");
  else if (*x < min)
    err = invalid(std::string{field} + " must be at least " + std::to_string(min));
  else
    return *x;
  return std::nullopt;
}

const char* kind_name(kind k) {
  switch (k) {
    case kind::event:
      return "event";
    case kind::heartbeat:
      return "heartbeat";
    case kind::handshake:
      return "handshake";
    case kind::retransmit_failed:
      return "retransmit_failed";
    case kind::attach:
      return "attach";
    case kind::cumulative_ack:
      return "cumulative_ack";
    case kind::nack:
      return "nack";
  }
  return "?";
}

/// The number of elements encode() writes for each kind.
size_t expected_size(kind k) {
  switch (k) {
    case kind::event:
      return 4;
    case kind::handshake:
      return 6;
    case kind::attach:
      return 2;
    case kind::heartbeat:
    case kind::retransmit_failed:
    case kind::cumulative_ack:
    case kind::nack:
      return 3;
  }
  return 0;
}

} // namespace

// -- messages -------------------------------------------------------------------------------

bool operator==(const event& x, const event& y) {
  return x.epoch == y.epoch && x.seq == y.seq && x.payload == y.payload;
}

bool operator==(const heartbeat& x, const heartbeat& y) {
  return x.epoch == y.epoch && x.last_seq == y.last_seq;
}

bool operator==(const handshake& x, const handshake& y) {
  return x.epoch == y.epoch && x.attach_id == y.attach_id && x.first_seq == y.first_seq
         && x.snapshot == y.snapshot
         && x.heartbeat_interval == y.heartbeat_interval;
}

bool operator==(const retransmit_failed& x, const retransmit_failed& y) {
  return x.epoch == y.epoch && x.seq == y.seq;
}

bool operator==(const attach& x, const attach& y) {
  return x.id == y.id;
}

bool operator==(const cumulative_ack& x, const cumulative_ack& y) {
  return x.epoch == y.epoch && x.seq == y.seq;
}

bool operator==(const nack& x, const nack& y) {
  return x.epoch == y.epoch && x.seqs == y.seqs;
}

data encode(const message& msg) {
  auto visitor = [](const auto& x) -> data {
    using type = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<type, event>) {
      return vector{tag(kind::event), x.epoch, x.seq, x.payload};
    } else if constexpr (std::is_same_v<type, heartbeat>) {
      return vector{tag(kind::heartbeat), x.epoch, x.last_seq};
    } else if constexpr (std::is_same_v<type, handshake>) {
      return vector{tag(kind::handshake), x.epoch,    x.attach_id,
                    x.first_seq,          x.snapshot, x.heartbeat_interval};
    } else if constexpr (std::is_same_v<type, retransmit_failed>) {
      return vector{tag(kind::retransmit_failed), x.epoch, x.seq};
    } else if constexpr (std::is_same_v<type, attach>) {
      return vector{tag(kind::attach), x.id};
    } else if constexpr (std::is_same_v<type, cumulative_ack>) {
      return vector{tag(kind::cumulative_ack), x.epoch, x.seq};
    } else {
      static_assert(std::is_same_v<type, nack>);
      vector seqs;
      seqs.reserve(x.seqs.size());
      for (auto seq : x.seqs)
        seqs.emplace_back(seq);
      return vector{tag(kind::nack), x.epoch, std::move(seqs)};
    }
  };
  return std::visit(visitor, msg);
}

expected<message> decode(const data& x) {
  auto* xs = get_if<vector>(x);
  if (xs == nullptr)
    return invalid("not a vector");
  if (xs->empty())
    return invalid("empty vector");
  auto* tag_value = get_if<count>(xs->front());
  if (tag_value == nullptr)
    return invalid("kind tag is not a count");
  if (*tag_value > static_cast<count>(kind::nack))
    return invalid("unknown kind tag " + std::to_string(*tag_value));
  auto k = static_cast<kind>(*tag_value);
  if (xs->size() != expected_size(k))
    return invalid(std::string{kind_name(k)} + " needs " + std::to_string(expected_size(k))
                   + " elements, got " + std::to_string(xs->size()));
  std::optional<error> err;
  if (k == kind::attach) {
    auto id = read_count(*xs, 1, "attach id", 0, err);
    if (!id)
      return std::move(*err);
    return message{attach{*id}};
  }
  auto epoch = read_count(*xs, 1, "epoch", 0, err);
  if (!epoch)
    return std::move(*err);
  switch (k) {
    case kind::event: {
      auto seq = read_count(*xs, 2, "event seq", 1, err);
      if (!seq)
        return std::move(*err);
      return message{event{*epoch, *seq, (*xs)[3]}};
    }
    case kind::heartbeat: {
      auto seq = read_count(*xs, 2, "heartbeat last_seq", 0, err);
      if (!seq)
        return std::move(*err);
      return message{heartbeat{*epoch, *seq}};
    }
    case kind::handshake: {
      auto id = read_count(*xs, 2, "handshake attach_id", 0, err);
      if (!id)
        return std::move(*err);
      auto seq = read_count(*xs, 3, "handshake first_seq", 1, err);
      if (!seq)
        return std::move(*err);
      auto* interval = get_if<timespan>((*xs)[5]);
      if (interval == nullptr)
        return invalid("handshake heartbeat_interval is not a timespan");
      if (*interval <= timespan::zero())
        return invalid("handshake heartbeat_interval must be positive");
      return message{handshake{*epoch, *id, *seq, (*xs)[4], *interval}};
    }
    case kind::retransmit_failed: {
      auto seq = read_count(*xs, 2, "retransmit_failed seq", 0, err);
      if (!seq)
        return std::move(*err);
      return message{retransmit_failed{*epoch, *seq}};
    }
    case kind::cumulative_ack: {
      auto seq = read_count(*xs, 2, "cumulative_ack seq", 0, err);
      if (!seq)
        return std::move(*err);
      return message{cumulative_ack{*epoch, *seq}};
    }
    case kind::nack: {
      auto* items = get_if<vector>((*xs)[2]);
      if (items == nullptr)
        return invalid("nack seqs is not a vector");
      if (items->empty())
        return invalid("nack seqs is empty");
      nack result{*epoch, {}};
      result.seqs.reserve(items->size());
      for (size_t i = 0; i < items->size(); ++i) {
        auto seq = read_count(*items, i, "nack seq", 1, err);
        if (!seq)
          return std::move(*err);
        result.seqs.push_back(*seq);
      }
      return message{std::move(result)};
    }
    case kind::attach:
      break;
  }
  return invalid("unreachable kind");
}

std::string to_string(const message& msg) {
  std::ostringstream out;
  auto visitor = [&out](const auto& x) {
    using type = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<type, event>) {
      out << "event(epoch=" << x.epoch << ", seq=" << x.seq << ", payload=" << x.payload
          << ')';
    } else if constexpr (std::is_same_v<type, heartbeat>) {
      out << "heartbeat(epoch=" << x.epoch << ", last_seq=" << x.last_seq << ')';
    } else if constexpr (std::is_same_v<type, handshake>) {
      auto text = broker::to_string(x.snapshot);
      if (text.size() > max_snapshot_text)
        text = text.substr(0, max_snapshot_text) + "...";
      out << "handshake(epoch=" << x.epoch << ", attach_id=" << x.attach_id
          << ", first_seq=" << x.first_seq
          << ", snapshot=" << text << ", heartbeat_interval="
          << broker::to_string(x.heartbeat_interval) << ')';
    } else if constexpr (std::is_same_v<type, retransmit_failed>) {
      out << "retransmit_failed(epoch=" << x.epoch << ", seq=" << x.seq << ')';
    } else if constexpr (std::is_same_v<type, attach>) {
      out << "attach(id=" << x.id << ')';
    } else if constexpr (std::is_same_v<type, cumulative_ack>) {
      out << "cumulative_ack(epoch=" << x.epoch << ", seq=" << x.seq << ')';
    } else {
      out << "nack(epoch=" << x.epoch << ", seqs=[";
      for (size_t i = 0; i < x.seqs.size(); ++i)
        out << (i > 0 ? ", " : "") << x.seqs[i];
      out << "])";
    }
  };
  std::visit(visitor, msg);
  return out.str();
}

// -- producer -------------------------------------------------------------------------------

producer::producer(epoch_id epoch, producer_config cfg, snapshot_fn snapshot, drop_fn on_drop)
  : epoch_(epoch), cfg_(cfg), snapshot_(std::move(snapshot)), on_drop_(std::move(on_drop)) {
  assert(cfg_.heartbeat_interval > timespan::zero());
  assert(cfg_.timeout_intervals >= 1);
  assert(cfg_.max_buffered_events >= 1);
  assert(cfg_.max_nack_seqs >= 1);
  assert(snapshot_);
}

producer::outputs producer::produce(data payload) {
  outputs out;
  auto seq = next_seq_++;
  if (!peers_.empty())
    buffer_.push_back(payload); // Nobody could nack it otherwise.
  out.push_back({std::nullopt, event{epoch_, seq, std::move(payload)}});
  enforce_buffer_limit(out);
  trim_buffer();
  return out;
}

producer::outputs producer::handle(consumer_handle from, const message& msg, timestamp now) {
  outputs out;
  if (auto* request = std::get_if<attach>(&msg))
    on_attach(from, *request, now, out);
  else if (auto* ack = std::get_if<cumulative_ack>(&msg))
    on_ack(from, *ack, now, out);
  else if (auto* request = std::get_if<nack>(&msg))
    on_nack(from, *request, now, out);
  return out;
}

producer::outputs producer::tick(timestamp now) {
  outputs out;
  auto timeout = cfg_.heartbeat_interval * cfg_.timeout_intervals;
  std::vector<std::pair<consumer_handle, sequence_number>> silent;
  for (auto& [who, peer] : peers_)
    if (now - peer.last_seen >= timeout)
      silent.emplace_back(who, saturated_add(peer.acked, 1));
  for (auto& [who, failed] : silent)
    drop(who, drop_reason::silent, failed, out);
  trim_buffer();
  if (!peers_.empty()
      && (!last_heartbeat_ || now - *last_heartbeat_ >= cfg_.heartbeat_interval)) {
    out.push_back({std::nullopt, heartbeat{epoch_, last_seq()}});
    last_heartbeat_ = now;
  }
  return out;
}

void producer::detach(consumer_handle who) {
  peers_.erase(who);
  trim_buffer();
}

std::vector<consumer_handle> producer::consumers() const {
  std::vector<consumer_handle> result;
  result.reserve(peers_.size());
  for (auto& entry : peers_)
    result.push_back(entry.first);
  return result;
}

std::optional<sequence_number> producer::acked(consumer_handle who) const {
  if (auto i = peers_.find(who); i != peers_.end())
    return i->second.acked;
  return std::nullopt;
}

void producer::on_attach(consumer_handle from, const attach& msg, timestamp now,
                         outputs& out) {
  // A consumer we know keeps its acknowledgement: if this attach is a stale duplicate and
  // the consumer stays on its current attachment, we still hold what it may nack.
  auto [i, added] = peers_.try_emplace(from);
  if (added)
    i->second.acked = last_seq();
  i->second.last_seen = now;
  out.push_back(
    {from, handshake{epoch_, msg.id, next_seq_, snapshot_(), cfg_.heartbeat_interval}});
}

void producer::on_ack(consumer_handle from, const cumulative_ack& ack, timestamp now,
                      outputs& out) {
  auto i = peers_.find(from);
  if (i == peers_.end()) {
    // Dropped earlier, or attached to an earlier incarnation: it must re-attach.
    out.push_back({from, retransmit_failed{epoch_, saturated_add(ack.seq, 1)}});
    return;
  }
  if (ack.epoch != epoch_)
    return; // Late message from before it attached to us.
  i->second.last_seen = now;
  if (ack.seq <= last_seq() && ack.seq > i->second.acked) {
    i->second.acked = ack.seq;
    trim_buffer();
  }
}

void producer::on_nack(consumer_handle from, const nack& msg, timestamp now, outputs& out) {
  auto i = peers_.find(from);
  if (i == peers_.end()) {
    auto failed = msg.seqs.empty() ? sequence_number{1} : msg.seqs.front();
    out.push_back({from, retransmit_failed{epoch_, failed}});
    return;
  }
  if (msg.epoch != epoch_)
    return;
  i->second.last_seen = now;
  auto first = next_seq_ - buffer_.size();
  auto n = std::min(msg.seqs.size(), cfg_.max_nack_seqs);
  sequence_number lost = 0;
  for (size_t k = 0; k < n; ++k) {
    auto seq = msg.seqs[k];
    if (seq >= first && seq < next_seq_)
      out.push_back({from, event{epoch_, seq, buffer_[seq - first]}});
    else if (seq < first)
      lost = std::max(lost, seq);
  }
  // Usually a late nack for events the consumer has since acknowledged; but a consumer that
  // applied an older handshake than the one we registered really misses them. Naming the
  // highest one lets the consumer tell: it re-attaches only if it lacks that event.
  if (lost > 0)
    out.push_back({from, retransmit_failed{epoch_, lost}});
}

void producer::drop(consumer_handle who, drop_reason why, sequence_number failed,
                    outputs& out) {
  peers_.erase(who);
  out.push_back({who, retransmit_failed{epoch_, failed}});
  if (on_drop_)
    on_drop_(who, why);
}

void producer::enforce_buffer_limit(outputs& out) {
  while (buffer_.size() > cfg_.max_buffered_events) {
    auto front = next_seq_ - buffer_.size();
    std::vector<consumer_handle> lagging;
    for (auto& [who, peer] : peers_)
      if (peer.acked < front)
        lagging.push_back(who);
    for (auto who : lagging)
      drop(who, drop_reason::lagging, front, out);
    buffer_.pop_front();
  }
}

void producer::trim_buffer() {
  if (peers_.empty()) {
    // Nobody could nack: a consumer that attaches later starts from a snapshot.
    buffer_.clear();
    return;
  }
  auto lowest = peers_.begin()->second.acked;
  for (auto& entry : peers_)
    lowest = std::min(lowest, entry.second.acked);
  while (!buffer_.empty() && next_seq_ - buffer_.size() <= lowest)
    buffer_.pop_front();
}

// -- consumer -------------------------------------------------------------------------------

consumer::consumer(consumer_config cfg, snapshot_fn on_snapshot, deliver_fn on_deliver)
  : cfg_(cfg), on_snapshot_(std::move(on_snapshot)), on_deliver_(std::move(on_deliver)) {
  assert(cfg_.attach_interval > timespan::zero());
  assert(cfg_.timeout_intervals >= 1);
  assert(cfg_.max_out_of_order >= 1);
  assert(cfg_.ack_every >= 1);
  assert(cfg_.max_nack_seqs >= 1);
  assert(on_snapshot_ && on_deliver_);
}

consumer::outputs consumer::start(timestamp now) {
  outputs out;
  if (state_ == state::idle) {
    state_ = state::attaching;
    last_attach_ = now;
    out.emplace_back(attach{++attach_id_});
  }
  return out;
}

consumer::outputs consumer::handle(const message& msg, timestamp now) {
  outputs out;
  if (state_ == state::idle)
    return out;
  if (auto* hs = std::get_if<handshake>(&msg)) {
    on_handshake(*hs, now, out);
    return out;
  }
  epoch_id sender;
  if (auto* ev = std::get_if<event>(&msg))
    sender = ev->epoch;
  else if (auto* hb = std::get_if<heartbeat>(&msg))
    sender = hb->epoch;
  else if (auto* rf = std::get_if<retransmit_failed>(&msg))
    sender = rf->epoch;
  else
    return out; // A consumer-to-producer kind.
  if (is_retired(sender))
    return out;
  if (state_ == state::attached && sender != epoch_) {
    // Most likely the master restarted (or a late message of an incarnation we never
    // attached to: the handshake then tells, see on_handshake). Its events may beat its
    // handshake, so they go to early_ below.
    reattach(sender, now, out);
  }
  if (state_ == state::attaching) {
    auto* ev = std::get_if<event>(&msg);
    if (ev != nullptr && ev->seq >= 1 && early_.size() < cfg_.max_out_of_order)
      early_.emplace(std::make_pair(ev->epoch, ev->seq), ev->payload);
    return out;
  }
  last_heard_ = now;
  if (auto* ev = std::get_if<event>(&msg))
    on_event(*ev, now, out);
  else if (auto* hb = std::get_if<heartbeat>(&msg))
    on_heartbeat(*hb, now, out);
  else
    on_retransmit_failed(std::get<retransmit_failed>(msg), now, out);
  return out;
}

consumer::outputs consumer::tick(timestamp now) {
  outputs out;
  if (state_ == state::attaching) {
    if (now - last_attach_ >= cfg_.attach_interval) {
      last_attach_ = now;
      out.emplace_back(attach{attach_id_});
    }
    return out;
  }
  if (state_ != state::attached)
    return out;
  if (now - last_heard_ >= interval_ * cfg_.timeout_intervals) {
    reattach(std::nullopt, now, out); // Producer gone, or the path to it.
    return out;
  }
  if (now - last_retry_ >= interval_) {
    if (retry_horizon_ >= next_)
      send_nack(next_, retry_horizon_, out);
    retry_horizon_ = highest_seen_;
    last_retry_ = now;
  }
  if (now - last_ack_ >= interval_)
    send_ack(now, out);
  return out;
}

void consumer::on_handshake(const handshake& msg, timestamp now, outputs& out) {
  // Only an answer to the current attach counts: any other is late, a duplicate, or answers
  // an attach older than the state we hold. Such an answer comes from a live producer, so it
  // counts even if that producer's epoch was retired.
  if (state_ != state::attaching || msg.attach_id != attach_id_ || msg.first_seq == 0
      || msg.heartbeat_interval <= timespan::zero())
    return;
  if (snapshots_ > 0 && epoch_ != msg.epoch)
    retire(epoch_); // Superseded by a new incarnation.
  if (seen_epoch_ && *seen_epoch_ != msg.epoch)
    retire(*seen_epoch_); // Was late news of an incarnation that is not answering.
  seen_epoch_.reset();
  retired_.erase(std::remove(retired_.begin(), retired_.end(), msg.epoch), retired_.end());
  state_ = state::attached;
  epoch_ = msg.epoch;
  next_ = msg.first_seq;
  highest_seen_ = next_ - 1;
  interval_ = msg.heartbeat_interval;
  last_heard_ = last_retry_ = now;
  buffer_.clear();
  unacked_ = 0;
  ++snapshots_;
  on_snapshot_(msg.snapshot);
  for (auto& [key, payload] : early_) {
    auto [epoch, seq] = key;
    if (epoch == epoch_ && seq >= next_ && seq < window_end()) {
      highest_seen_ = std::max(highest_seen_, seq);
      buffer_.emplace(seq, std::move(payload));
    }
  }
  early_.clear();
  deliver_ready();
  retry_horizon_ = highest_seen_;
  if (highest_seen_ >= next_)
    send_nack(next_, highest_seen_, out);
  send_ack(now, out); // Tells the producer where we start, and that we are alive.
}

void consumer::on_event(const event& msg, timestamp now, outputs& out) {
  if (msg.seq < next_ || buffer_.count(msg.seq) > 0)
    return; // Duplicate.
  if (msg.seq == next_) {
    on_deliver_(msg.payload);
    ++next_;
    ++unacked_;
    deliver_ready();
    highest_seen_ = std::max(highest_seen_, next_ - 1);
    if (unacked_ >= cfg_.ack_every)
      send_ack(now, out);
    return;
  }
  learn_last_seq(msg.seq - 1, out);
  highest_seen_ = std::max(highest_seen_, msg.seq);
  if (msg.seq < window_end())
    buffer_.emplace(msg.seq, msg.payload);
  // Beyond the window it is dropped: a nack fetches it once the window gets there.
}

void consumer::on_heartbeat(const heartbeat& msg, timestamp now, outputs& out) {
  learn_last_seq(msg.last_seq, out);
}

void consumer::on_retransmit_failed(const retransmit_failed& msg, timestamp now,
                                    outputs& out) {
  // An event we already delivered is no loss: the answer to a late nack, or a drop notice
  // that our progress overtook. Staying unregistered at the producer is harmless: the next
  // gap we nack fails and brings us here with a seq we lack.
  if (msg.seq >= next_)
    reattach(std::nullopt, now, out);
}

void consumer::reattach(std::optional<epoch_id> seen, timestamp now, outputs& out) {
  seen_epoch_ = seen;
  state_ = state::attaching;
  buffer_.clear();
  early_.clear();
  unacked_ = 0;
  last_attach_ = now;
  out.emplace_back(attach{++attach_id_});
}

void consumer::retire(epoch_id x) {
  if (is_retired(x))
    return;
  retired_.push_back(x);
  if (retired_.size() > retired_epochs_kept)
    retired_.pop_front();
}

void consumer::deliver_ready() {
  for (auto i = buffer_.begin(); i != buffer_.end() && i->first == next_;) {
    on_deliver_(i->second);
    ++next_;
    ++unacked_;
    i = buffer_.erase(i);
  }
}

void consumer::learn_last_seq(sequence_number seq, outputs& out) {
  // Nack only what this message revealed; tick() retries what stays missing.
  if (seq <= highest_seen_)
    return;
  auto from = std::max(next_, highest_seen_ + 1);
  highest_seen_ = seq;
  if (from <= seq)
    send_nack(from, seq, out);
}

void consumer::send_ack(timestamp now, outputs& out) {
  out.emplace_back(cumulative_ack{epoch_, next_ - 1});
  last_ack_ = now;
  unacked_ = 0;
}

void consumer::send_nack(sequence_number from, sequence_number to, outputs& out) {
  nack msg{epoch_, {}};
  auto end = window_end(); // Exclusive; `to` is inclusive.
  for (auto seq = from; seq <= to && seq < end && msg.seqs.size() < cfg_.max_nack_seqs;
       ++seq)
    if (buffer_.count(seq) == 0)
      msg.seqs.push_back(seq);
  if (!msg.seqs.empty())
    out.emplace_back(std::move(msg));
}

bool consumer::is_retired(epoch_id x) const {
  return std::find(retired_.begin(), retired_.end(), x) != retired_.end();
}

sequence_number consumer::window_end() const noexcept {
  return saturated_add(next_, cfg_.max_out_of_order);
}

} // namespace broker::internal::channel
