#pragma once

// channel: the skeleton network connections of the node are built on: a WebSocket client
// (web/ws_session.hh) and a ZeroMQ connection (zeromq/zmq_link.hh); a peering
// (peering/connection.hh) keeps its own loops for now (it writes through, see there). The protocol is the subclass's; the channel owns the socket and
// does what all of them do alike.
//
// Owner and threads: runs on its socket's strand. Pending operations, the owner's tables
// and the send queue's ready callback keep it alive (shared_ptr). Other threads reach it
// only through schedule_write(), resume_input() and core_caught_up(), which post to the
// strand (through the owner's gate, if it has one: nothing reaches a strand once the
// owner stopped).
//
// Reading, plain TCP (reactor style): the channel waits until the socket is readable, then
// reads without blocking into its I/O thread's buffer (64 KiB, one per thread, shared by
// every connection on the thread), behind the bytes it carried over from the last read.
// The subclass's decode() takes every complete frame from there and says how many bytes
// it used; only the rest (a partial frame, or frames behind a barrier) is copied into the
// connection's own carry buffer (carry_buffer.hh), which grows on demand and shrinks once
// empty. So an idle connection holds no read buffer at all. A partial frame too large for
// the thread's buffer is read on in the carry buffer. TLS reads into the carry buffer
// (OpenSSL decrypts into it), 4 KiB at a time, 16 KiB while reads fill it.
//
// Input, run to completion (core/net_input.hh): decode() adds messages to the channel's
// net_input; after each read the channel routes them on the strand. If a `block` sink lacks
// room the input parks: reading stops (TCP carries the back-pressure) until the sink's
// waker resumes it. A barrier (an attach, a peering's routing update) holds the frames
// behind it in the carry buffer until the core caught up with it: core_caught_up() decodes
// them then. After end_input(), once everything decoded is routed, detach() tells the core
// of the end (a parked connection finishes routing first).
//
// Writing: write_more() asks the subclass to fill() a gather buffer (control frames and
// headers copied, shared payloads referenced) and sends it with one non-blocking sendmsg;
// only a full socket waits for writability. TLS encrypts a linear copy. Write coalescing
// (hold_writes()): a connection that streams messages without hearing back writes at most
// once per delay, and what arrives meanwhile goes out with it; hearing from the peer, or a
// burst of hold_limit messages in the queue (send_queue::wake_at), lets it go at once.
// Once the write loop finds nothing more to send, the connection's write buffers shrink
// back (gather pieces, the batch, the TLS copy, the control frames).

#include "broker/internal/core/net_input.hh"
#include "broker/internal/core/send_queue.hh"
#include "broker/internal/io/gate.hh"
#include "broker/internal/io/gather.hh"
#include "broker/internal/io/stream.hh"
#include "broker/internal/net/carry_buffer.hh"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace broker::internal {

class channel : public std::enable_shared_from_this<channel> {
public:
  /// Size of each I/O thread's read buffer.
  static constexpr size_t thread_buffer_size = 64 * 1024;

  virtual ~channel();

  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;

  /// Drains the send queue on the strand (the send queue's ready callback). Any thread.
  void schedule_write();

  /// Continues routing once the sink the input waited for has room (its waker). Any thread.
  void resume_input();

  /// The core applied what the barrier waited for (an attach, a routing update); the input
  /// behind it is decoded and routed now. Any thread.
  void core_caught_up();

  /// What this connection routed (for the core's status page); null before attach().
  std::shared_ptr<source_stats> input_stats() const { return in_ ? in_->stats() : nullptr; }

  /// The handler and source id of this connection (0 before attach()).
  uint64_t id() const noexcept { return id_; }

  /// Bytes of memory the connection holds in its own buffers right now (carry buffer,
  /// write buffers, control frames); for tests of the memory bound and the status page.
  size_t buffer_bytes() const noexcept;

protected:
  /// `conn` is connected (TLS not yet handshaken); `g` (may be null) gates posts from
  /// other threads and must outlive the channel.
  channel(std::unique_ptr<stream> conn, gate* g = nullptr);

  // -- what the subclass implements -------------------------------------------------------

  /// Decodes complete frames from [data, data + size) (it may change the bytes, e.g.
  /// unmask them) and returns how many bytes it used. Views into `data` are valid only
  /// during the call. Stop early at a barrier or once closed: the rest is offered again.
  virtual size_t decode(char* data, size_t size) = 0;

  /// The socket failed, or the peer closed it (boost::asio::error::eof).
  virtual void on_read_error(const boost::system::error_code& ec) = 0;

  /// Appends the next write to `out` (take ctrl_ first); false if there is nothing.
  virtual bool fill(gather_buffer& out) = 0;

  /// A write failed.
  virtual void on_write_error(const boost::system::error_code& ec) = 0;

  /// Everything decoded is routed after end_input(): tell the core of the end.
  virtual void detach() = 0;

  /// A write completed; false stops the write loop (e.g. a close frame went out).
  virtual bool after_write() { return true; }

  /// The write loop found nothing to send. Default: read on (reading may have waited).
  virtual void on_drained() { read_more(); }

  /// Everything decoded is routed (and no end is pending): e.g. post a routing update.
  virtual void on_routed() {}

  /// The barrier fell (core_caught_up()), before the input behind it is decoded.
  virtual void on_caught_up() {}

  /// More reasons not to read now (a paused handshake, unread control frames).
  virtual bool hold_input() const noexcept { return false; }

  /// Whether the write coalescing may hold the next write (the subclass's conditions: no
  /// control frame waits, not closing, ...). Only asked when holding is enabled.
  virtual bool may_hold() const noexcept { return true; }

  // -- what the subclass uses -------------------------------------------------------------

  /// Connects the channel to the core: its handler and source id and its input. The
  /// output queue is the subclass's (queued_channel below); it should wake a held write
  /// once hold_limit() messages wait (see enable_hold()).
  void attach(uint64_t id, std::unique_ptr<net_input> in);

  /// Messages in the output queue (the coalescing's burst test); SIZE_MAX without one.
  virtual size_t queued() const noexcept { return SIZE_MAX; }

  /// The messages of the write that just completed may go.
  virtual void release_batch() noexcept {}

  /// The write loop drained: give the batch's memory back if it grew large.
  virtual void shrink_batch() {}

  /// Bytes the subclass's write state holds (for buffer_bytes()).
  virtual size_t batch_bytes() const noexcept { return 0; }

  /// See enable_hold(); 1 when not holding.
  size_t hold_limit() const noexcept { return hold_ ? hold_->limit : 1; }

  /// Enables write coalescing: at most one data write per `delay` while the peer is silent,
  /// unless `limit` messages wait. Call before attach().
  void enable_hold(std::chrono::microseconds delay, size_t limit);

  /// Starts (or keeps) reading unless closed, already reading or the input is blocked.
  void read_more();

  /// Writes until everything is out or the socket is full.
  void write_more();

  /// Routes the decoded input; parks on a full `block` sink; detaches after end_input().
  void flush_input();

  /// Decodes what the carry buffer holds (e.g. bytes that came with an HTTP upgrade).
  void decode_carried();

  /// Holds the input behind the current frame until core_caught_up().
  void raise_barrier() noexcept { barrier_ = true; }

  /// The input ends: once what was decoded is routed, detach() runs (once).
  void end_input();

  /// A frame arrived from the peer: the next write goes at once (coalescing).
  void heard() noexcept {
    if (hold_)
      hold_->heard = true;
  }

  /// Call from fill() when the write carries data messages (coalescing).
  void wrote_data();

  /// Marks the channel closed: no more reads, writes or decodes; stops the hold timer.
  void mark_closed() noexcept;

  /// Whether reading waits for something (parked input, a barrier, the subclass's hold).
  bool input_blocked() const noexcept { return read_paused_ || barrier_ || hold_input(); }

  /// Posts `f` to the strand (through the gate, if any).
  template <class F>
  void post(F&& f) {
    if (gate_ == nullptr) {
      boost::asio::post(conn_->get_executor(), std::forward<F>(f));
      return;
    }
    gate_->pass([&] { boost::asio::post(conn_->get_executor(), std::forward<F>(f)); });
  }

  /// Gives the write buffers' memory back (after the write loop drained).
  void shrink_buffers();

  std::unique_ptr<stream> conn_;
  carry_buffer rx_;           ///< Bytes carried from one read to the next (see above).
  std::string ctrl_;          ///< Control frames waiting, in order.
  gather_buffer gather_;      ///< The write in flight.
  std::string tls_buf_;       ///< The write's linear copy (TLS only).
  std::unique_ptr<net_input> in_;
  bool closed_ = false;
  bool writing_ = false;
  bool barrier_ = false;      ///< The core applies something; the input behind it waits.
  bool read_paused_ = false;  ///< The input waits for room in a sink.

private:
  void on_readable(const boost::system::error_code& ec);
  void on_tls_read(const boost::system::error_code& ec, size_t n);
  void after_read();
  void lift_barrier();
  bool should_hold();

  gate* gate_;
  uint64_t id_ = 0;
  bool reading_ = false;
  bool decoding_ = false; ///< Inside decode(): read_more() waits (its caller reads on).
  bool ending_ = false;   ///< end_input() ran; detach() once the input is routed.
  bool tls_big_read_ = false; ///< The last TLS read filled its buffer: read more next time.

  /// Write coalescing (enable_hold()); only connections that hold have one.
  struct hold_state {
    std::chrono::microseconds delay{0};
    size_t limit = 1;
    std::unique_ptr<boost::asio::steady_timer> timer; ///< Created on first use.
    bool holding = false; ///< A held write waits for the timer.
    bool heard = true;    ///< A frame arrived since our last data write.
    std::chrono::steady_clock::time_point last_write;
  };
  std::unique_ptr<hold_state> hold_;
};

/// A channel with an output queue of `Item`s (send_item for peers, data_message for
/// WebSocket clients): the queue and the batch of the write in flight.
template <class Item>
class queued_channel : public channel {
protected:
  using channel::channel;

  /// Sets the queue (before or at attach()); it wakes held writes at hold_limit().
  void set_queue(std::shared_ptr<basic_send_queue<Item>> q) {
    out_ = std::move(q);
    out_->wake_at(hold_limit());
  }

  size_t queued() const noexcept override { return out_ ? out_->size() : SIZE_MAX; }

  void release_batch() noexcept override { batch_.clear(); }

  void shrink_batch() override {
    if (batch_.capacity() > max_idle_batch)
      std::vector<Item>{}.swap(batch_);
  }

  size_t batch_bytes() const noexcept override { return batch_.capacity() * sizeof(Item); }

  static constexpr size_t max_idle_batch = 64;

  std::shared_ptr<basic_send_queue<Item>> out_;
  std::vector<Item> batch_; ///< Messages of the write in flight.
};

} // namespace broker::internal
