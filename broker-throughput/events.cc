#include "events.hh"

#include <cassert>
#include <charconv>
#include <random>
#include <string>
#include <utility>

namespace broker_throughput {

using broker::count;
using broker::data;
using broker::enum_value;
using broker::integer;
using broker::port;
using broker::timestamp;

namespace {

// Zeek's Broker message framing: [format version, message type, content].
constexpr count zeek_format = 1;
constexpr count zeek_event = 1;
constexpr count zeek_log_write = 3;

/// Zeek's metadata key of the network timestamp.
constexpr count metadata_network_timestamp = 1;

// Type 3: Broker's broker-benchmark builds 100 keys of 15 random letters, each mapped to a
// set of 10 random 5-letter strings. A fixed seed keeps every run's payload identical.
constexpr int table_keys = 100;
constexpr int set_elements = 10;
constexpr size_t key_length = 15;
constexpr size_t element_length = 5;
constexpr uint64_t table_seed = 0x62726f6b6572; // "broker"

// Type 0: the send time's digits, then this separator, then filler up to the size.
constexpr char raw_separator = ' ';
constexpr char raw_filler = 'x';

// Positions inside the shapes, for sent_time().
constexpr size_t content_index = 2;
constexpr size_t event_args_index = 1;
constexpr size_t event_metadata_index = 2;
constexpr size_t log_record_index = 3;

std::string random_string(std::mt19937_64& rng, size_t length) {
  std::uniform_int_distribution<int> letter{'a', 'z'};
  std::string result(length, ' ');
  for (auto& c : result)
    c = static_cast<char>(letter(rng));
  return result;
}

/// A conn.log line as Zeek's log writer sees it: the `id` record flattened into four fields.
data conn_record_without_timestamp() {
  using namespace std::chrono_literals;
  return broker::vector_builder{}
    .add(broker::timestamp{})
    .add("CHhAvVGS1DHFjwGM9")
    .add(broker::address::v4(10, 0, 0, 1))
    .add(port{52134, port::protocol::tcp})
    .add(broker::address::v4(192, 168, 1, 80))
    .add(port{80, port::protocol::tcp})
    .add(enum_value{"tcp"})
    .add("http")
    .add(broker::timespan{1500ms})
    .add(count{4096})
    .add(count{65536})
    .add("SF")
    .add(true)
    .add(false)
    .add(count{0})
    .add("ShADadFf")
    .add(count{12})
    .add(count{4728})
    .add(count{48})
    .add(count{68032})
    .add(broker::set_builder{}.add("tag1").add("tag2").build())
    .build();
}

data random_table() {
  std::mt19937_64 rng{table_seed};
  broker::table result;
  for (int i = 0; i < table_keys; ++i) {
    broker::set elements;
    for (int j = 0; j < set_elements; ++j)
      elements.emplace(random_string(rng, element_length));
    result.emplace(random_string(rng, key_length), std::move(elements));
  }
  return data{std::move(result)};
}

data zeek_message(count type, data content) {
  broker::vector result;
  result.reserve(3);
  result.emplace_back(zeek_format);
  result.emplace_back(type);
  result.emplace_back(std::move(content));
  return data{std::move(result)};
}

/// The type-0 string: "<ns since the epoch> xxx...x", raw_payload_size bytes.
data raw_payload(timestamp sent) {
  std::string result(raw_payload_size, raw_filler);
  auto ns = sent.time_since_epoch().count();
  auto [end, ec] = std::to_chars(result.data(), result.data() + result.size(), ns);
  assert(ec == std::errc{} && end < result.data() + result.size());
  *end = raw_separator;
  return data{std::move(result)};
}

/// The send time at the start of a type-0 string, or nullopt.
std::optional<timestamp> raw_sent_time(const std::string& str) {
  int64_t ns = 0;
  auto [end, ec] = std::from_chars(str.data(), str.data() + str.size(), ns);
  if (ec != std::errc{} || end == str.data() + str.size() || *end != raw_separator)
    return std::nullopt;
  return timestamp{broker::timespan{ns}};
}

const broker::vector* vector_at(const broker::vector& xs, size_t index) {
  return index < xs.size() ? broker::get_if<broker::vector>(xs[index]) : nullptr;
}

const timestamp* timestamp_at(const broker::vector& xs, size_t index) {
  return index < xs.size() ? broker::get_if<timestamp>(xs[index]) : nullptr;
}

} // namespace

event_factory::event_factory(uint64_t type, bool with_metadata)
  : type_(type), with_metadata_(with_metadata) {
  assert(type <= 3);
  if (type_ == 2)
    prototype_ = conn_record_without_timestamp();
  else if (type_ == 3)
    prototype_ = random_table();
}

data event_factory::make(timestamp sent) const {
  // Built with plain vectors and moves: the only deep copy is the prototype's.
  broker::vector content;
  switch (type_) {
    case 0:
      return raw_payload(sent);
    case 2: {
      auto record = prototype_;
      broker::get<broker::vector>(record).front() = sent;
      content.reserve(4);
      content.emplace_back(enum_value{"Conn::LOG"});
      content.emplace_back(enum_value{"Log::WRITER_ASCII"});
      content.emplace_back("conn");
      content.emplace_back(std::move(record));
      return zeek_message(zeek_log_write, data{std::move(content)});
    }
    case 3: {
      broker::vector args;
      args.reserve(2);
      args.emplace_back(sent);
      args.emplace_back(prototype_);
      content.reserve(2);
      content.emplace_back("event_3");
      content.emplace_back(std::move(args));
      return zeek_message(zeek_event, data{std::move(content)});
    }
    default: {
      broker::vector args;
      args.reserve(2);
      args.emplace_back(integer{42});
      args.emplace_back("test");
      content.reserve(3);
      content.emplace_back("event_1");
      content.emplace_back(std::move(args));
      if (with_metadata_) {
        broker::vector entry;
        entry.reserve(2);
        entry.emplace_back(metadata_network_timestamp);
        entry.emplace_back(sent);
        broker::vector metadata;
        metadata.emplace_back(std::move(entry));
        content.emplace_back(std::move(metadata));
      }
      return zeek_message(zeek_event, data{std::move(content)});
    }
  }
}

std::optional<timestamp> sent_time(const data& event) {
  if (auto* str = broker::get_if<std::string>(event))
    return raw_sent_time(*str);
  auto* msg = broker::get_if<broker::vector>(event);
  if (msg == nullptr || msg->size() != 3)
    return std::nullopt;
  auto* type = broker::get_if<count>((*msg)[1]);
  auto* content = vector_at(*msg, content_index);
  if (type == nullptr || content == nullptr)
    return std::nullopt;
  if (*type == zeek_log_write) {
    if (auto* record = vector_at(*content, log_record_index))
      if (auto* ts = timestamp_at(*record, 0))
        return *ts;
    return std::nullopt;
  }
  if (*type != zeek_event)
    return std::nullopt;
  if (auto* metadata = vector_at(*content, event_metadata_index))
    for (auto& entry : *metadata)
      if (auto* pair = broker::get_if<broker::vector>(entry); pair && pair->size() == 2)
        if (auto* key = broker::get_if<count>((*pair)[0]);
            key && *key == metadata_network_timestamp)
          if (auto* ts = timestamp_at(*pair, 1))
            return *ts;
  if (auto* args = vector_at(*content, event_args_index))
    if (auto* ts = timestamp_at(*args, 0))
      return *ts;
  return std::nullopt;
}

} // namespace broker_throughput
