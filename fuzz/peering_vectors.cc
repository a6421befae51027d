#include "peering_vectors.hh"

#include "fuzz_common.hh"

#include "broker/internal/codec/bin.hh"
#include "broker/internal/peering/wire.hh"

namespace broker::fuzz {

namespace wire = internal::wire;

namespace {

endpoint_id id_of(const char* hex) {
  auto bytes = from_hex(hex);
  endpoint_id::bytes_type raw{};
  for (size_t i = 0; i < raw.size(); ++i)
    raw[i] = static_cast<uint8_t>(bytes[i]);
  return endpoint_id{raw};
}

std::string node(const endpoint_id& sender, const endpoint_id& receiver,
                 wire::message_type type, uint16_t ttl, std::string_view topic,
                 std::string_view payload) {
  std::string out;
  auto err = wire::append_node_message(out, sender, receiver, type, ttl, topic, payload);
  FUZZ_CHECK(!err);
  return out;
}

// The values of the data frames of doc/protocol/peering.md §12.
constexpr const char* event_hex = "0e030200000000000000010200000000000000010e0205076576656e"
                                  "745f310e0203000000000000002a050474657374";
constexpr const char* all_types_hex =
  "0e0f038000000000000000037fffffffffffffff02000000000000000002ffffffffffffffff0519"
  "48656c6c6f205c753030336342726f6b65725c75303033652100010104c01e0000000000000a0000"
  "000000e4e1c00b03666f6f0620010db80000000000000000000000000700000000000000000000ff"
  "ffffffff0078081f90010c0205036261720503666f6f0d02050a66697273742d6e616d6505044a6f"
  "686e05096c6173742d6e616d650503446f65";

} // namespace

std::vector<named_frame> handshake_frames() {
  std::string b = id_b_hex;
  std::string p0 = id_p0_hex;
  return {
    {"probe", from_hex("00000005 07 5a45454b")},
    {"hello-p0-1-99", from_hex("00000017 06 5a45454b " + p0 + " 01 63")},
    {"hello-p0", from_hex("00000017 06 5a45454b " + p0 + " 01 01")},
    {"hello-b", from_hex("00000017 06 5a45454b " + b + " 01 01")},
    {"version-select-p0", from_hex("00000016 08 5a45454b " + p0 + " 01")},
    {"version-select-b", from_hex("00000016 08 5a45454b " + b + " 01")},
    {"originator-syn-foo-bar", from_hex("0000000b 0a 01 08 2f666f6f2f626172")},
    {"originator-syn-test", from_hex("00000008 0a 01 05 2f74657374")},
    {"responder-syn-ack-test", from_hex("00000008 0b 01 05 2f74657374")},
    {"originator-syn-empty", from_hex("00000002 0a 00")},
    {"originator-ack", from_hex("00000001 0c")},
    {"drop-conn-39", from_hex("0000002b 09 5a45454b " + b + " 27 14 "
                              "726564756e64616e7420636f6e6e656374696f6e")},
    {"drop-conn-2", from_hex("00000033 09 5a45454b " + b + " 02 1c "
                             "756e737570706f727465642076657273696f6e73206f666665726564")},
    {"drop-conn-unknown-code", from_hex("0000001a 09 5a45454b " + b + " 28 03 666f6f")},
    {"wrong-magic", from_hex("00000017 06 11223344 " + p0 + " 01 01")},
    {"unknown-tag", from_hex("00000003 01 7878")},
  };
}

std::vector<named_frame> node_frames() {
  auto b = id_of(id_b_hex);
  auto p0 = id_of(id_p0_hex);
  auto pf = id_of(id_pf_hex);
  endpoint_id nil;
  using mt = wire::message_type;
  std::vector<named_frame> result{
    {"data-hello-world", from_hex("00000038 5746d8ee36445bd29f54d5a44c26c2a1 "
                                  "c0551e8d392b509ba47bae46f75befac 01 0010 0006 666f6f626172 "
                                  "050b68656c6c6f20776f726c64")},
    {"data-event", node(b, nil, mt::data, 16, "/test", from_hex(event_hex))},
    {"data-all-types", node(b, nil, mt::data, 16, "/test", from_hex(all_types_hex))},
    {"data-count", node(b, nil, mt::data, 16, "/test", from_hex("020000000000000001"))},
    {"routing-update", from_hex("00000036 " + std::string{id_b_hex} + " " + id_p0_hex
                                + " 03 0010 0003 3c243e 02 05 2f74657374 06 2f7a65656b2f")},
    {"ping", node(p0, b, mt::ping, 1, "<$>", "foo")},
    {"pong", node(b, p0, mt::pong, 16, "<$>", "foo")},
    {"bye", node(b, p0, mt::ping, 16, "<$>", wire::make_bye_payload(1))},
    {"empty-frame", from_hex("00000000")},
  };
  std::string ext_frame;
  auto err = wire::append_extended_data(ext_frame, b, nil, 16, "/test",
                                        {pf, 0x0102030405060708, 3,
                                         from_hex("020000000000000001")});
  FUZZ_CHECK(!err);
  result.push_back({"data-ext", ext_frame});
  // A store command: a clone attaching to the master of store "s" (store/store_logic.hh).
  auto cmd = internal::bin::encode(vector{"c", count{7}, vector{count{4}, count{1}}});
  FUZZ_CHECK(cmd);
  result.push_back({"command", node(b, nil, mt::command, 16, "s/<$>/data/master", *cmd)});
  return result;
}

} // namespace broker::fuzz
