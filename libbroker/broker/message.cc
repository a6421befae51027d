#include "broker/message.hh"

#include "broker/internal/codec/bin.hh"
#include "broker/internal/codec/json.hh"
#include "broker/internal/web/ws_frame.hh"

#include <cstring>
#include <thread>

namespace broker {

namespace {

/// Room reserved in front of the JSON text for the longest WebSocket frame header.
constexpr size_t frame_room = 10;

enum cache_state : uint8_t { empty, filling, ready };

/// Runs `fill` once over all threads; a thread that comes while another fills waits.
template <class F>
void fill_once(std::atomic<uint8_t>& state, F&& fill) {
  if (state.load(std::memory_order_acquire) == ready)
    return;
  uint8_t expected = empty;
  if (state.compare_exchange_strong(expected, filling, std::memory_order_acq_rel)) {
    fill();
    state.store(ready, std::memory_order_release);
    return;
  }
  while (state.load(std::memory_order_acquire) != ready)
    std::this_thread::yield();
}

} // namespace

message_impl::message_impl(std::string topic, data value, std::string binary,
                           route_info route, message_kind kind)
  : topic_(std::move(topic)), value_(std::move(value)), kind_(kind), route_(route) {
  // Nobody else can see the object yet.
  binary_ = std::move(binary);
  binary_state_.store(ready, std::memory_order_release);
}

message_impl::message_impl(std::string topic, std::string binary, route_info route,
                           message_kind kind)
  : topic_(std::move(topic)), kind_(kind), route_(route) {
  binary_ = std::move(binary);
  binary_state_.store(ready, std::memory_order_release);
  value_state_.store(empty, std::memory_order_release);
}

void message_impl::decode_value() const noexcept {
  static_assert(value_ready == ready);
  fill_once(value_state_, [this] {
    // The receiver validated data messages against broker.max-nesting-depth (at most
    // 4096); store commands are decoded by the stores from their bytes, and one whose
    // value is unreadable reads as none here, as before.
    constexpr size_t deepest_allowed = 4096;
    if (auto x = internal::bin::decode(binary_, deepest_allowed))
      value_ = std::move(*x);
  });
}

const std::string& message_impl::binary() const {
  fill_once(binary_state_, [this] {
    if (auto err = internal::bin::encode(value_, binary_))
      binary_.clear(); // Unencodable values (e.g. > 4 GiB strings) never reach a peer.
  });
  return binary_;
}

std::string_view message_impl::json() const {
  auto frame = ws_frame(); // Fills the cache.
  return frame.substr(header_size_);
}

std::string_view message_impl::encode_ws_frame() const {
  static_assert(cache_ready == ready);
  fill_once(json_state_, [this] {
    json_.assign(frame_room, '\0');
    internal::json::encode_data_message(topic_, value(), json_);
    std::string header;
    internal::ws::append_header(header, internal::ws::opcode::text, json_.size() - frame_room);
    auto offset = frame_room - header.size();
    std::memcpy(json_.data() + offset, header.data(), header.size());
    frame_ = json_.data() + offset;
    frame_size_ = json_.size() - offset;
    header_size_ = static_cast<uint8_t>(header.size());
  });
  return std::string_view{frame_, frame_size_};
}

struct message_impl::frame_block {
  std::atomic<size_t> rc{0}; // One per message whose frame it holds.
  std::string bytes;         // The frames, back to back.
};

message_impl::~message_impl() {
  if (block_ && block_->rc.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete block_;
}

void message_impl::encode_ws_frames(const data_message* msgs, size_t n) {
  // A block closes at this size, so that a message that lives on (a slow receiver's
  // queue) keeps little more than its own frame alive; 4 KiB were as fast as 16 in
  // bench/fanout_cost.py.
  constexpr size_t block_bytes = 4 * 1024;
  constexpr size_t max_claimed = 64;
  static_assert(cache_ready == ready);
  const message_impl* claimed[max_claimed];
  size_t offsets[max_claimed];
  size_t i = 0;
  while (i < n) {
    // Claim and encode messages until the block is full; skip those encoded, or being
    // encoded, by somebody else (their writers find them non-adjacent: one piece more).
    // Every client after the first finds everything encoded: no block then.
    frame_block* block = nullptr;
    size_t k = 0;
    for (; i < n && k < max_claimed && (!block || block->bytes.size() < block_bytes); ++i) {
      auto& m = msgs[i].impl();
      uint8_t expected = empty;
      if (m.json_state_.load(std::memory_order_relaxed) != empty
          || !m.json_state_.compare_exchange_strong(expected, filling,
                                                    std::memory_order_acq_rel))
        continue;
      if (!block)
        block = new frame_block;
      auto& b = block->bytes;
      // The JSON text goes behind room for a 4-byte header (payloads of 126 to 65535
      // bytes); it moves if the header is shorter or longer.
      auto pos = b.size();
      b.append(4, '\0');
      internal::json::encode_data_message(m.topic_, m.value(), b);
      auto text = b.size() - pos - 4;
      std::string h; // Short: no allocation.
      internal::ws::append_header(h, internal::ws::opcode::text, text);
      if (h.size() < 4) {
        std::memmove(b.data() + pos + h.size(), b.data() + pos + 4, text);
        b.resize(b.size() - (4 - h.size()));
      } else if (h.size() > 4) {
        b.insert(pos + 4, h.size() - 4, '\0');
      }
      std::memcpy(b.data() + pos, h.data(), h.size());
      m.header_size_ = static_cast<uint8_t>(h.size());
      m.frame_size_ = h.size() + text;
      offsets[k] = pos;
      claimed[k++] = &m;
    }
    if (!block)
      return; // Nothing left to claim (the loop ran to the end).
    // The bytes stay where they are from now on: publish every frame.
    block->rc.store(k, std::memory_order_relaxed);
    for (size_t j = 0; j < k; ++j) {
      auto m = claimed[j];
      m->frame_ = block->bytes.data() + offsets[j];
      m->block_ = block;
      m->json_state_.store(ready, std::memory_order_release);
    }
  }
}

std::string to_string(const data_message& x) {
  if (!x)
    return "<null message>";
  std::string result = x.topic();
  result += ": ";
  result += to_string(x.value());
  return result;
}

} // namespace broker
