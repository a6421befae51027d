#pragma once

// channel: the skeleton network connections of the node are built on: a peering
// (peering/connection.hh), a WebSocket client (web/ws_session.hh) and a ZeroMQ connection
// (zeromq/zmq_link.hh). The protocol is the subclass's; the channel owns the socket and
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
//
// Write-through (enable_write_through(), plain TCP only): when a message reaches an idle
// connection that would not hold it (an exchange: the peer spoke since our last data
// write, or a burst), the thread that routed it (an application's publish, another
// connection's strand) writes it to the socket itself, without waking the strand: a round
// trip wakes two threads fewer. The strand arms this only when its write loop drained,
// nothing is in flight, no control frame waits, and the subclass agrees
// (may_write_through()); it disarms at the start of every write loop and when closing.
// A mutex makes the write path exclusive: the strand's write loop and closing
// (lock_writes()) take it, a routing thread only tries it (and posts to the strand as
// before when it cannot have it); it guards the gather buffer, the batch, the
// coalescing's last write and the send queue's consumer side. A routing thread asks the
// subclass once more (through_allowed(), e.g. the access rules' generation) and takes the
// queue with fill_through(). Connections without it take no lock.

#include "broker/internal/core/net_input.hh"
#include "broker/internal/core/send_queue.hh"
#include "broker/internal/io/gate.hh"
#include "broker/internal/io/gather.hh"
#include "broker/internal/io/stream.hh"
#include "broker/internal/net/carry_buffer.hh"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace broker::internal {

class channel : public std::enable_shared_from_this<channel> {
public:
  /// Size of each I/O thread's read buffer.
  static constexpr size_t thread_buffer_size = 64 * 1024;

  virtual ~channel();

  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;

  /// Drains the send queue on the strand (the send queue's ready callback), or writes it
  /// on the calling thread where write-through allows. Any thread.
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

  /// Writes a routing thread made itself (write-through); any thread.
  uint64_t writes_through() const noexcept {
    return through_ ? through_->count.load(std::memory_order_relaxed) : 0;
  }

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

  /// What fill_through() found in the send queue.
  enum class take_result : uint8_t { closed, idle, ready };

  /// Write-through (enable_write_through()): on the strand, under the write lock, when the
  /// write loop drained (plain TCP, nothing in flight, no control frame): may routing
  /// threads write from now on? The subclass may note what its answer depends on.
  virtual bool may_write_through() { return false; }

  /// On a routing thread, under the write lock, before it writes through: does what the
  /// strand's may_write_through() saw still hold? False disarms write-through.
  virtual bool through_allowed() const noexcept { return true; }

  /// On a routing thread, under the write lock: moves what the send queue holds into
  /// `out` (into batch_, as fill() does); closed if the queue closed (the strand ends the
  /// connection), idle once the queue is empty.
  virtual take_result fill_through(gather_buffer&) { return take_result::idle; }

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

  /// Enables write-through (see above; plain TCP only). Call before the send queue's ready
  /// callback can run.
  void enable_write_through();

  /// Takes the write lock (nothing to take without write-through) and disarms
  /// write-through: no routing thread writes until the lock is released and the strand's
  /// write loop drains again. For closing, and for writes outside the write loop.
  std::unique_lock<std::recursive_mutex> lock_writes();

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
      hold_->heard.store(true, std::memory_order_relaxed);
  }

  /// Call from fill() (or fill_through()) when the write carries data messages
  /// (coalescing).
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
  bool would_hold() const noexcept;
  bool write_through();
  void arm_through();

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
    /// A frame arrived since our last data write (set by the strand, read by routing
    /// threads that write through).
    std::atomic<bool> heard{true};
    std::chrono::steady_clock::time_point last_write; ///< Under the write lock.
  };
  std::unique_ptr<hold_state> hold_;

  /// Write-through (enable_write_through()); only connections that write through have one.
  struct through_state {
    /// The write path (see above). Recursive: the write loop may close the connection.
    std::recursive_mutex mtx;
    std::atomic<bool> armed{false};    ///< Set by the strand under mtx; cleared under mtx.
    std::atomic<uint64_t> count{0};    ///< Writes through; written under mtx.
  };
  std::unique_ptr<through_state> through_;
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
