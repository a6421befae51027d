// Fuzz target: the binary data codec (codec/bin, doc/protocol/binary.md), the decoder of every
// data-message payload a peer sends. Checks (codec_checks.hh): decode and decode_prefix agree,
// decode -> encode -> decode is the identity on values and a fixed point on bytes, the
// encoding is no longer than the input, and the JSON encoding of every decoded value decodes
// back to itself.

#include "codec_checks.hh"
#include "fuzz_common.hh"

#include "broker/internal/codec/bin.hh"

namespace bin = broker::internal::bin;

using namespace broker;

namespace {

// Every hex vector of codec/bin.test.cc and codec/bin_limits.test.cc, valid and invalid.
const char* const test_vectors[] = {
  "05 80 00",
  "0e 80 80 80 80 80 01",
  "05 80 80 80 80 10",
  "05 0b 68656c6c6f20776f726c64",
  "01 01",
  "01 00",
  "02 0102030405060708",
  "03 0102030405060708",
  "04 4004000000000000",
  "05 03 616263",
  "0b 03 616263",
  "00",
  "0e 03 01 01 05 03 616263 0e 02 03 0000000000000001 03 0000000000000002",
  "0c 03 03 0000000000000001 03 0000000000000002 05 03 616263",
  "0d 03 05 04 6b657931 03 0000000000000001 05 04 6b657932 03 0000000000000002 05 "
  "04 6b657933 03 0000000000000003",
  "0c 00",
  "0c 01 00",
  "0c 01 02 0000000000000001",
  "0c 01 03 0000000000000001",
  "0d 00",
  "0d 01 05 02 6b31 00",
  "0d 02 05 02 6b31 05 02 7631 05 02 6b32 05 02 7632",
  "0e 00",
  "0e 01 00",
  "0e 02 05 05 68656c6c6f 05 06 62726f6b6572",
  "0c 02 05 05 68656c6c6f 05 06 62726f6b6572",
  "00 01",
  "01 01 01",
  "02 010203040506070809",
  "05 03 61626364",
  "0b 03 61626364",
  "01",
  "02 01",
  "03 01020304050607",
  "04",
  "03",
  "03 61",
  "03 6162",
  "05",
  "05 03 61",
  "0f",
  "ff",
  "08 0050 04",
  "0c 02 03 0000000000000001 03 0000000000000001",
  "0d 02 05 01 61 00 05 01 61 00",
  "0e 02 00",
  "0e 02 00 05",
  "0c 02 04 3ff0000000000000 04 ffffffffffffffff",
  "0c 02 04 0000000000000000 04 8000000000000000",
  "0c 02 04 ffffffffffffffff 04 3ff0000000000000",
  "0c 02 04 7ff8000000000000 04 fff0000000000000",
  "0d 02 04 ffffffffffffffff 00 04 0000000000000000 00",
  "0c 02 04 ffffffffffffffff 04 7ff8000000000000",
  "07 00000000000000000000ffff0a000000 c8",
  "07 00000000000000000000ffff0a000000 81",
  "07 00000000000000000000ffff0a000000 32",
  "07 00000000000000000000ffff0a000000 5f",
  "07 00000000000000000000ffff0a000000 60",
  "07 00000000000000000000ffff0a010203 68",
  "07 ffffffffffffffffffffffffffffffff 80",
  "06 0000",
  "07 00000000000000000000ffff0a000000",
  "08 0050",
  "0c",
  "0d 01 00",
  "0d 01 05 01",
  "01 02",
  "01 ff",
  "04 fff0000000000000",
  "04 7ff0000000000000",
  "04 ffffffffffffffff",
  "04 7ff8000000000000",
  "04 fff8000000000000",
  "04 7ff0000000000001",
  "04 0000000000000001",
  "04 800fffffffffffff",
  "0c 02 04 ffffffffffffffff 05 03 616263",
  "0d 01 0c 01 02 0000000000000001 05 01 6e",
  "02 0000000000000000",
  "02 000000000000002a",
  "02 ffffffffffffffff",
  "03 0000000000000000",
  "03 ffffffffffffffff",
  "03 000000000000002a",
  "03 ffffffffffffffd6",
  "03 8000000000000000",
  "03 7fffffffffffffff",
  "04 3ff0000000000000",
  "04 bff0000000000000",
  "04 c01e000000000000",
  "04 3fb999999999999a",
  "04 0000000000000000",
  "04 8000000000000000",
  "04 fcd0000000000000",
  "04 4000000000000000",
  "04 3e7ad7f29abcaf48",
  "05 00",
  "05 03 666f6f",
  "05 02 c3bc",
  "05 c8 01",
  "06 00000000000000000000ffff 7f000001",
  "06 00000000000000000000ffff c0a80908",
  "06 00000000000000000000000000000001",
  "06 00000000000000000000000000000000",
  "06 20010db8000000000000000000000000",
  "07 00000000000000000000ffff c0a80900 78",
  "07 00000000000000000000ffff 0a000000 68",
  "07 00000000000000000000ffff ffffff00 78",
  "07 20010db8000000000000000000000000 20",
  "07 00000000000000000000000000000000 00",
  "08 1f90 01",
  "08 2328 02",
  "08 007b 03",
  "08 0000 00",
  "09 00000000499602d2",
  "09 16e476d02cb86000",
  "09 ffffffffffffffff",
  "0a 0000000000e4e1c0",
  "0a fffffffffffffa24",
  "0a 0000000000000000",
  "0b 03 666f6f",
  "0c 02 05 03 626172 05 03 666f6f",
  "0c 04 00 02 0000000000000001 03 0000000000000002 05 03 616263",
  "0d 02 05 0a 66697273742d6e616d65 05 04 4a6f686e 05 09 6c6173742d6e616d65 05 03 446f65",
  "b a 0d 02 02 0000000000000001 05 01 61 02 0000000000000002 05 01 62",
  "0e 03 02 0000000000000001 03 0000000000000002 05 05 7468726565",
  "0e030200000000000000010200000000000000010e0205076576656e745f310e0203000000 "
  "000000002a050474657374",
  "0e030200000000000000010200000000000000010e0305076576656e745f310e0203000000 "
  "000000002a0504746573740e010e020200000000000000010917570cec17f64400",
  "0c 01 04 ffffffffffffffff",
  "0d 02 05 01 6b 04 3ff0000000000000 05 01 6c 04 ffffffffffffffff",
  "0e ffffffff0f 00",
  "0c ffffffff0f",
  "0d 80808080 08 00 00",
  "05 ffffffff0f 61",
  "0b ffffffff0f",
};

} // namespace

std::vector<fuzz::seed> fuzz::seeds() {
  std::vector<seed> result;
  size_t n = 0;
  for (auto hex : test_vectors)
    result.push_back({"test-vector-" + std::to_string(n++), from_hex(hex)});
  // Deep nesting right at the limit: 128 vectors around a none.
  std::string deep(bin::default_max_depth * 2, '\x01');
  for (size_t i = 0; i < deep.size(); i += 2)
    deep[i] = '\x0e';
  deep += '\x00';
  result.push_back({"nesting-at-limit", deep});
  return result;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto bytes = fuzz::as_text(data, size);
  if (auto value = fuzz::check_bin_decode(bytes, bin::default_max_depth)) {
    fuzz::check_json_encoding(*value);
    // Printing must handle anything the decoder produces.
    (void) to_string(*value);
  }
  return 0;
}
