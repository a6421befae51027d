#include "broker/internal/store/replication_channel.hh"

#include <algorithm>
#include <cassert>
#include <limits>
#include <sstream>
#include <type_traits>

namespace broker::internal::channel {

namespace {

/// Sequence numbers come from the network: never let arithmetic on them wrap.
sequence_number saturated_add(sequence_number x, uint64_t y) noexcept {
  constexpr auto max = std::numeric_limits<sequence_number>::max();
  return y > max - x ? max : x + y;
}

} // namespace

std::string to_string(const message& msg) {
  std::ostringstream out;
  auto visitor = [&out](const auto& x) {
    using type = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<type, event>) {
      out << "event(epoch=" << x.epoch << ", seq=" << x.seq << ", "
          << store_wire::kind_name(x.content) << ')';
    } else if constexpr (std::is_same_v<type, heartbeat>) {
      out << "heartbeat(epoch=" << x.epoch << ", seq=" << x.seq << ')';
    } else if constexpr (std::is_same_v<type, handshake>) {
      out << "handshake(epoch=" << x.epoch << ", attach_id=" << x.attach_id
          << ", offset=" << x.offset
          << ", heartbeat_interval=" << broker::to_string(x.heartbeat_interval) << ", state=";
      if (x.state)
        out << x.state->size() << " entries)";
      else
        out << "none)";
    } else if constexpr (std::is_same_v<type, retransmit_failed>) {
      out << "retransmit_failed(epoch=" << x.epoch << ", seq=" << x.seq << ')';
    } else if constexpr (std::is_same_v<type, attach>) {
      out << "attach(id=" << x.id << ')';
    } else if constexpr (std::is_same_v<type, cumulative_ack>) {
      out << "cumulative_ack(seq=" << x.seq << ')';
    } else {
      out << "nack(seqs=[";
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
  assert(cfg_.max_buffered_events >= 1);
  assert(cfg_.max_nack_seqs >= 1);
}

producer::outputs producer::produce(payload content) {
  outputs out;
  seq_ = saturated_add(seq_, 1);
  cached_.reset();
  // With no consumer, nobody needs the event (one that attaches later gets it in its
  // snapshot): the owner encodes and sends nothing. Heartbeats tell consumers of an
  // earlier incarnation about this one.
  if (paths_.empty())
    return out;
  buffer_.push_back(content);
  out.push_back({std::nullopt, event{epoch_, seq_, std::move(content)}});
  enforce_buffer_limit();
  trim_buffer();
  return out;
}

producer::outputs producer::add(const handle& peer, timestamp now) {
  outputs out;
  auto [i, added] = paths_.try_emplace(peer);
  if (!added)
    return out;
  auto& p = i->second;
  p.offset = p.acked = seq_;
  p.last_seen = now;
  if (snapshot_)
    p.state = take_snapshot();
  send_handshake(peer, p, now, out);
  return out;
}

producer::outputs producer::handle_message(const handle& from, const message& msg,
                                           timestamp now) {
  outputs out;
  if (std::holds_alternative<attach>(msg))
    on_attach(from, now, out);
  else if (auto* ack = std::get_if<cumulative_ack>(&msg))
    on_ack(from, ack->seq, now);
  else if (auto* request = std::get_if<nack>(&msg))
    on_nack(from, *request, now, out);
  return out;
}

producer::outputs producer::tick(timestamp now) {
  outputs out;
  if (cfg_.timeout_intervals > 0) {
    auto timeout = cfg_.heartbeat_interval * cfg_.timeout_intervals;
    std::vector<handle> silent;
    for (auto& [who, p] : paths_)
      if (now - p.last_seen >= timeout)
        silent.push_back(who);
    for (auto& who : silent)
      drop(who, drop_reason::silent);
  }
  trim_buffer();
  if ((!paths_.empty() || cfg_.heartbeat_always)
      && (!last_heartbeat_ || now - *last_heartbeat_ >= cfg_.heartbeat_interval)) {
    out.push_back({std::nullopt, heartbeat{epoch_, seq_}});
    last_heartbeat_ = now;
  }
  if (!snapshot_) {
    // Writer mode: the peer may have missed the handshake (Broker's clones repeat it with
    // every heartbeat in the same way).
    for (auto& [who, p] : paths_)
      if (!p.confirmed && (!p.last_handshake || now - *p.last_handshake >= cfg_.heartbeat_interval))
        send_handshake(who, p, now, out);
  }
  return out;
}

void producer::detach(const handle& who) {
  paths_.erase(who);
  trim_buffer();
}

std::vector<handle> producer::consumers() const {
  std::vector<handle> result;
  result.reserve(paths_.size());
  for (auto& entry : paths_)
    result.push_back(entry.first);
  return result;
}

bool producer::confirmed(const handle& who) const {
  auto i = paths_.find(who);
  return i != paths_.end() && i->second.confirmed;
}

std::optional<sequence_number> producer::acked(const handle& who) const {
  if (auto i = paths_.find(who); i != paths_.end())
    return i->second.acked;
  return std::nullopt;
}

state_ptr producer::take_snapshot() {
  // Clones tend to attach together (a cluster starting up): while nothing was produced in
  // between, they share one snapshot.
  if (!cached_ || cached_seq_ != seq_) {
    cached_ = snapshot_();
    cached_seq_ = seq_;
  }
  return cached_;
}

handshake producer::make_handshake(const path& p) const {
  return handshake{epoch_, 0, p.offset, cfg_.heartbeat_interval, p.state};
}

void producer::send_handshake(const handle& to, path& p, timestamp now, outputs& out) {
  p.last_handshake = now;
  out.push_back({to, make_handshake(p)});
}

void producer::on_attach(const handle& from, timestamp now, outputs& out) {
  auto i = paths_.find(from);
  if (i == paths_.end()) {
    if (snapshot_) {
      auto added = add(from, now);
      out.insert(out.end(), added.begin(), added.end());
    }
    return;
  }
  auto& p = i->second;
  p.last_seen = now;
  if (snapshot_ && p.confirmed) {
    // The consumer started over (Broker's clones do after losing an event): a fresh state
    // at the current position. Its acknowledgement stays, so the buffer keeps what an
    // older attachment of it may still nack.
    p.offset = seq_;
    p.state = take_snapshot();
    p.confirmed = false;
    send_handshake(from, p, now, out);
    return;
  }
  if (!snapshot_) {
    // Our peer lost its side of the channel: resume right after what it acknowledged.
    p.offset = p.acked;
    p.confirmed = false;
  }
  // Repeated requests for a pending handshake (Broker's clones ask every 200 ms) get the
  // same answer, at most twice per heartbeat interval.
  if (!p.last_handshake || now - *p.last_handshake >= cfg_.heartbeat_interval / 2)
    send_handshake(from, p, now, out);
}

void producer::on_ack(const handle& from, sequence_number seq, timestamp now) {
  auto i = paths_.find(from);
  if (i == paths_.end())
    return; // Dropped earlier, or attached to someone else: it learns from its nacks.
  auto& p = i->second;
  p.last_seen = now;
  if (seq > seq_)
    return; // Acknowledges what we never sent.
  if (!p.confirmed && seq >= p.offset) {
    p.confirmed = true;
    p.state.reset();
  }
  if (seq > p.acked) {
    p.acked = seq;
    trim_buffer();
  }
}

void producer::on_nack(const handle& from, const nack& msg, timestamp now, outputs& out) {
  if (msg.seqs.empty())
    return;
  if (paths_.count(from) == 0) {
    out.push_back({from, retransmit_failed{epoch_, msg.seqs.front()}});
    return;
  }
  // As in Broker, a nack acknowledges what lies below its first sequence number.
  auto lowest = *std::min_element(msg.seqs.begin(), msg.seqs.end());
  if (lowest > 0)
    on_ack(from, lowest - 1, now);
  else
    paths_[from].last_seen = now;
  auto first = seq_ + 1 - buffer_.size();
  auto n = std::min(msg.seqs.size(), cfg_.max_nack_seqs);
  for (size_t k = 0; k < n; ++k) {
    auto seq = msg.seqs[k];
    if (seq == 0 || seq > seq_)
      continue;
    if (seq >= first)
      out.push_back({from, event{epoch_, seq, buffer_[seq - first]}});
    else
      out.push_back({from, retransmit_failed{epoch_, seq}});
  }
}

void producer::drop(const handle& who, drop_reason why) {
  // No notice: the consumer learns it from its next nack, and a Broker clone would take a
  // retransmit_failed as a lost event and stop working.
  paths_.erase(who);
  if (on_drop_)
    on_drop_(who, why);
}

void producer::enforce_buffer_limit() {
  while (buffer_.size() > cfg_.max_buffered_events) {
    auto front = seq_ + 1 - buffer_.size();
    std::vector<handle> lagging;
    for (auto& [who, p] : paths_)
      if (p.acked < front)
        lagging.push_back(who);
    for (auto& who : lagging)
      drop(who, drop_reason::lagging);
    buffer_.pop_front();
  }
}

void producer::trim_buffer() {
  if (paths_.empty()) {
    // Nobody could nack: a consumer that attaches later starts from a handshake.
    buffer_.clear();
    return;
  }
  auto lowest = paths_.begin()->second.acked;
  for (auto& entry : paths_)
    lowest = std::min(lowest, entry.second.acked);
  while (!buffer_.empty() && seq_ + 1 - buffer_.size() <= lowest)
    buffer_.pop_front();
}

// -- consumer -------------------------------------------------------------------------------

consumer::consumer(consumer_config cfg, snapshot_fn on_snapshot, deliver_fn on_deliver,
                   lost_fn on_lost)
  : cfg_(cfg),
    on_snapshot_(std::move(on_snapshot)),
    on_deliver_(std::move(on_deliver)),
    on_lost_(std::move(on_lost)) {
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

consumer::outputs consumer::accept(const handshake& msg, timestamp now) {
  outputs out;
  if (state_ == state::idle) {
    passive_ = true;
    begin(msg, now, out);
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
  if (!passive_) {
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
        early_.emplace(std::make_pair(ev->epoch, ev->seq), ev->content);
      return out;
    }
  }
  last_heard_ = now;
  if (auto* ev = std::get_if<event>(&msg))
    on_event(*ev, now, out);
  else if (auto* hb = std::get_if<heartbeat>(&msg))
    learn_last_seq(hb->seq, out);
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
  if (!passive_) {
    auto timeout = interval_ * cfg_.timeout_intervals;
    if (now - last_heard_ >= timeout) {
      reattach(std::nullopt, now, out); // Producer gone, or the path to it.
      return out;
    }
    if (highest_seen_ >= next_ && now - last_progress_ >= timeout) {
      reattach(std::nullopt, now, out); // It ignores our nacks: it forgot us.
      return out;
    }
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
  // A passive consumer ignores repeated handshakes, as Broker's master does. Otherwise only
  // an answer to the current attach counts: any other is late, a duplicate, or answers an
  // attach older than the state we hold. Such an answer comes from a live producer, so it
  // counts even if that producer's epoch was retired.
  if (passive_ || state_ != state::attaching || msg.attach_id != attach_id_)
    return;
  if (snapshots_ > 0 && epoch_ != msg.epoch)
    retire(epoch_); // Superseded by a new incarnation.
  if (seen_epoch_ && *seen_epoch_ != msg.epoch)
    retire(*seen_epoch_); // Was late news of an incarnation that is not answering.
  seen_epoch_.reset();
  retired_.erase(std::remove(retired_.begin(), retired_.end(), msg.epoch), retired_.end());
  begin(msg, now, out);
}

void consumer::begin(const handshake& msg, timestamp now, outputs& out) {
  state_ = state::attached;
  epoch_ = msg.epoch;
  next_ = saturated_add(msg.offset, 1);
  highest_seen_ = next_ - 1;
  interval_ = msg.heartbeat_interval > timespan::zero() ? msg.heartbeat_interval
                                                         : cfg_.attach_interval;
  last_heard_ = last_retry_ = last_progress_ = now;
  buffer_.clear();
  unacked_ = 0;
  ++snapshots_;
  if (!passive_)
    on_snapshot_(msg.state);
  for (auto& [key, content] : early_) {
    auto [epoch, seq] = key;
    if (epoch == epoch_ && seq >= next_ && seq < window_end()) {
      highest_seen_ = std::max(highest_seen_, seq);
      buffer_.emplace(seq, std::move(content));
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
  if (msg.seq < next_)
    return; // Duplicate.
  if (auto i = buffer_.find(msg.seq); i != buffer_.end()) {
    if (!i->second)
      i->second = msg.content; // Reported lost, then found after all.
    return;
  }
  if (msg.seq == next_) {
    on_deliver_(msg.content);
    next_ = saturated_add(next_, 1);
    ++unacked_;
    last_progress_ = now;
    if (deliver_ready())
      last_progress_ = now;
    highest_seen_ = std::max(highest_seen_, next_ - 1);
    if (unacked_ >= cfg_.ack_every)
      send_ack(now, out);
    return;
  }
  learn_last_seq(msg.seq - 1, out);
  highest_seen_ = std::max(highest_seen_, msg.seq);
  if (msg.seq < window_end())
    buffer_.emplace(msg.seq, msg.content);
  // Beyond the window it is dropped: a nack fetches it once the window gets there.
}

void consumer::on_retransmit_failed(const retransmit_failed& msg, timestamp now,
                                    outputs& out) {
  if (msg.seq < next_)
    return; // Delivered already: the answer to a late nack, no loss.
  if (!passive_) {
    reattach(std::nullopt, now, out);
    return;
  }
  // A writer channel cannot start over: the write is gone, the ones after it still count.
  highest_seen_ = std::max(highest_seen_, msg.seq);
  if (msg.seq < window_end())
    buffer_.try_emplace(msg.seq, std::nullopt);
  if (deliver_ready())
    last_progress_ = now;
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

bool consumer::deliver_ready() {
  bool any = false;
  for (auto i = buffer_.begin(); i != buffer_.end() && i->first == next_;) {
    if (i->second)
      on_deliver_(*i->second);
    else if (on_lost_)
      on_lost_(next_);
    next_ = saturated_add(next_, 1);
    ++unacked_;
    any = true;
    i = buffer_.erase(i);
  }
  return any;
}

void consumer::learn_last_seq(sequence_number seq, outputs& out) {
  // Nack when a message reveals something new; tick() retries what stays missing. A nack
  // always lists every gap from next_ on: Broker's producer takes its first sequence number
  // as an ack of everything below it.
  if (seq <= highest_seen_)
    return;
  highest_seen_ = seq;
  send_nack(next_, seq, out);
}

void consumer::send_ack(timestamp now, outputs& out) {
  out.emplace_back(cumulative_ack{next_ - 1});
  last_ack_ = now;
  unacked_ = 0;
}

void consumer::send_nack(sequence_number from, sequence_number to, outputs& out) {
  nack msg;
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
