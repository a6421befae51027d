"""Unit tests of the JSON v1 codec: the vectors of doc/protocol/websocket.md §10, lossless
round trips, and errors that name what is wrong. No node needed:
`python3 -m unittest discover -s python/tests`."""

import datetime
import ipaddress
import json
import math
import os
import unittest

from brokerclient import (Count, DecodeError, EncodeError, Enum, Integer, Port, Set, Table,
                          Timespan, Vector, codec, decode, dumps, encode, loads, times)

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "spec_vectors.json"), encoding="utf-8") as f:
    VECTORS = json.load(f)

UTC = datetime.timezone.utc
ip = ipaddress.ip_address
net = ipaddress.ip_network


def same(a, b):
    """True if `a` and `b` are the same Python types all the way down, with equal values
    (plain == would say Count(1) == 1 == True and Enum('x') != 'x' only by accident)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, (set, frozenset, Set)):
        xs, ys = (sorted(s, key=codec.sort_key) for s in (a, b))
        return len(xs) == len(ys) and all(same(x, y) for x, y in zip(xs, ys))
    if isinstance(a, (dict, Table)):
        xs, ys = (sorted(m.items(), key=lambda kv: codec.sort_key(kv[0])) for m in (a, b))
        return len(xs) == len(ys) and all(same(kx, ky) and same(vx, vy)
                                          for (kx, vx), (ky, vy) in zip(xs, ys))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, datetime.datetime):
        return a == b and a.tzinfo == b.tzinfo
    if isinstance(a, Timespan):
        return a.nanoseconds == b.nanoseconds
    return a == b


# One value of each of the 15 types (and edge cases), in the shapes the decoder returns and
# at the node's precision (timestamps in milliseconds), so that py.round_trip can send them
# through a node too.
EVERY_TYPE = [
    None, True, False, Count(0), Count(2**64 - 1), -(2**63), 2**63 - 1, -7.5, 0.1, 1e300,
    -0.0, math.inf, -math.inf, "Hello <Broker>! ü 😀 \x00\x0b\x7f \\ \" /", "",
    ip("10.0.0.1"), ip("2001:db8::"), ip("::"), net("10.0.0.0/8"), net("2001:db8::/32"),
    Port(8080, "tcp"), Port(53, "udp"), Port(8, "icmp"), Port(0, "?"),
    datetime.datetime(2022, 4, 10, 7, 0, 0, 123000, tzinfo=UTC),
    datetime.datetime(1969, 12, 31, 23, 59, 58, 500000, tzinfo=UTC),
    datetime.timedelta(milliseconds=15), datetime.timedelta(microseconds=-3),
    datetime.timedelta(0), Timespan(1500), Timespan(-1),
    Enum("Conn::LOG"), Enum(""),
    {Count(1), Count(2)}, set(), {"a", Count(2), -1, (1, "x"), frozenset({1})},
    {"first-name": "John", "last-name": "Doe"}, {}, {(ip("10.0.0.1"), Port(80, "tcp")): 1},
    (), (1, (2, (3, ())), (), {}),
]


class SameHelper(unittest.TestCase):
    """The comparison the round-trip tests rely on tells Broker types apart."""

    def test_same_tells_types_apart_where_equality_does_not(self):
        for a, b in [(Count(1), 1), (True, 1), (1.0, 1), ((Count(1),), (1,)),
                     ({Count(1)}, {1}), ({"k": Count(1)}, {"k": 1}), (0.0, -0.0),
                     (Timespan(1500), Timespan(1501)), ([1], (1,))]:
            self.assertFalse(same(a, b), "%r vs %r" % (a, b))
        self.assertTrue(same({Count(1): (1, "x")}, {Count(1): (1, "x")}))


class SpecVectors(unittest.TestCase):
    """The exact frames of doc/protocol/websocket.md §10, copied into spec_vectors.json."""

    def test_all_types_message_decodes_to_the_natural_values(self):
        for key in ("12.1 all types, client input", "12.1 all types, node output",
                    "12.1 all types, Broker's output"):
            kind, topic, value = codec.decode_frame(VECTORS[key])
            self.assertEqual((kind, topic), ("data", "/test"))
            expected = (-(2**63), 2**63 - 1, Count(0), Count(2**64 - 1),
                        "Hello \\u003cBroker\\u003e!", None, True, -7.5,
                        datetime.timedelta(milliseconds=15), Enum("foo"), ip("2001:db8::"),
                        net("255.255.255.0/24"), Port(8080, "tcp"), {"bar", "foo"},
                        {"first-name": "John", "last-name": "Doe"})
            self.assertTrue(same(value, expected), "%s: %r" % (key, value))

    def test_all_types_message_encodes_byte_for_byte_as_the_node_does(self):
        _, topic, value = codec.decode_frame(VECTORS["12.1 all types, client input"])
        self.assertEqual(codec.encode_message(topic, value),
                         VECTORS["12.1 all types, node output"])

    def test_single_values_encode_as_in_the_spec(self):
        values = {
            "none": None,
            "timespan 1.5 s": datetime.timedelta(seconds=1.5),
            "timespan 0": datetime.timedelta(0),
            "timespan 2000 ns": Timespan(2000),
            "timestamp 2022-04-10T07:00:00Z": datetime.datetime(2022, 4, 10, 7, tzinfo=UTC),
            "port 8080/tcp": Port(8080, "tcp"),
            "port 0/unknown": Port(0, "unknown"),
            "address 2001:db8::": ip("2001:db8::"),
            "address ::ffff:10.0.0.1": ip("::ffff:10.0.0.1"),
            "subnet 255.255.255.0/24": net("255.255.255.0/24"),
            "real −7.5 (ours / Broker)": -7.5,
            "real 2.0 (ours / Broker)": 2.0,
            "string with TAB and 0x01 (ours)": "a\tb\x01",
            "empty vector / set / table": [],
            "table {\"first-name\": \"John\"}": {"first-name": "John"},
            "set {count 10, count 2, \"a\"}": {Count(10), Count(2), "a"},
        }
        rows = VECTORS["12.5 single values"]
        checked = 0
        for description, text in rows:
            if description not in values:
                continue  # rows whose value Python cannot hold (nanosecond timestamps)
            self.assertEqual(dumps(values[description]), text, description)
            checked += 1
        self.assertEqual(checked, len(values), "every value above has a row in the spec")

    def test_a_nanosecond_timestamp_from_the_node_reads_to_the_microsecond(self):
        self.assertEqual(loads('{"@data-type":"timestamp","data":"2022-04-10T07:00:00.123"}'),
                         datetime.datetime(2022, 4, 10, 7, 0, 0, 123000, tzinfo=UTC))

    def test_timespans_use_the_largest_exact_unit(self):
        for ns, text in VECTORS["6.8 timespan output (ns, text)"]:
            self.assertEqual(times.format_timespan(ns), text)
            self.assertEqual(encode(Timespan(ns))["data"], text)

    def test_every_timestamp_form_the_node_accepts_is_read(self):
        for text, node_output in VECTORS["12.6 timestamp input (text, node output)"]:
            ns = times.parse_timestamp(text)
            self.assertEqual(times.format_timestamp(ns - ns % 10**6), node_output, text)

    def test_every_timespan_form_the_node_accepts_is_read(self):
        for text, node_output in VECTORS["12.6 timespan input (text, node output)"]:
            self.assertEqual(times.format_timespan(times.parse_timespan(text)), node_output)


class RoundTrip(unittest.TestCase):

    def test_every_type_survives_encoding_and_decoding_unchanged(self):
        for value in EVERY_TYPE:
            back = loads(dumps(value))
            self.assertTrue(same(back, value), "%r came back as %r" % (value, back))

    def test_all_types_in_one_vector(self):
        value = tuple(EVERY_TYPE)
        self.assertTrue(same(loads(dumps(value)), value))

    def test_microsecond_timestamps_round_trip_with_six_digits(self):
        value = datetime.datetime(2022, 4, 10, 7, 0, 0, 123456, tzinfo=UTC)
        self.assertEqual(encode(value)["data"], "2022-04-10T07:00:00.123456")
        self.assertTrue(same(loads(dumps(value)), value))

    def test_encode_and_decode_work_on_parsed_json(self):
        self.assertEqual(encode(Port(1, "udp")), {"@data-type": "port", "data": "1/udp"})
        self.assertEqual(decode({"@data-type": "count", "data": 7}), Count(7))

    def test_nan_round_trips(self):
        self.assertTrue(math.isnan(loads(dumps(math.nan))))
        self.assertEqual(dumps(math.nan), '{"@data-type":"real","data":NaN}')

    def test_count_and_integer_stay_apart(self):
        self.assertEqual(encode(Count(5))["@data-type"], "count")
        self.assertEqual(encode(5)["@data-type"], "integer")
        self.assertEqual(encode(Integer(5))["@data-type"], "integer")
        self.assertIs(type(loads(dumps(Count(5)))), Count)
        self.assertIs(type(loads(dumps(5))), int)

    def test_enum_and_string_stay_apart(self):
        self.assertIs(type(loads(dumps(Enum("x")))), Enum)
        self.assertIs(type(loads(dumps("x"))), str)
        self.assertNotEqual(Enum("x"), "x")

    def test_set_and_vector_stay_apart(self):
        self.assertEqual(loads(dumps([1, 2])), (1, 2))
        self.assertEqual(loads(dumps({1, 2})), {1, 2})
        self.assertEqual(encode(Set([1, 2]))["@data-type"], "set")
        self.assertEqual(encode(Vector({1}))["@data-type"], "vector")

    def test_elements_python_would_merge_come_back_as_set(self):
        value = Set([Count(1), 1, True, 1.0, Enum("a"), "a"])
        back = loads(dumps(value))
        self.assertIsInstance(back, Set)
        self.assertEqual(len(back), 6)
        self.assertTrue(same(back, value))

    def test_keys_python_would_merge_come_back_as_table(self):
        value = Table([(Count(1), "count"), (1, "integer"), (True, "boolean")])
        back = loads(dumps(value))
        self.assertIsInstance(back, Table)
        self.assertEqual(sorted(back.values()), ["boolean", "count", "integer"])
        self.assertEqual(back[Count(1)], "count")
        self.assertEqual(back[1], "integer")

    def test_containers_inside_sets_and_keys_come_back_hashable(self):
        value = {frozenset({1}): {"x": {2}}, (1, 2): Table({"k": 1})}
        back = loads(dumps(value))
        # A table as a value (not a key) is a plain dict again.
        self.assertTrue(same(back, {frozenset({1}): {"x": {2}}, (1, 2): {"k": 1}}),
                        repr(back))
        nested = loads(dumps({frozenset({frozenset({1})}), (Table({}),)}))
        self.assertIn(frozenset({frozenset({1})}), nested)

    def test_sets_and_tables_are_sorted_in_brokers_order(self):
        text = dumps({"b", "a", Count(10), Count(2), -1, None, (1,), ip("10.0.0.1"),
                      ip("::1")})
        order = [element["data"] for element in json.loads(text)["data"]]
        self.assertEqual(order, [{}, 2, 10, -1, "a", "b", "::1", "10.0.0.1",
                                 [{"@data-type": "integer", "data": 1}]])

    def test_sorted_output_does_not_depend_on_insertion_order(self):
        self.assertEqual(dumps({"x": 1, "a": 2}), dumps({"a": 2, "x": 1}))

    def test_naive_datetimes_are_utc_and_aware_ones_are_converted(self):
        naive = datetime.datetime(2022, 4, 10, 7, 0, 0)
        cest = datetime.datetime(2022, 4, 10, 9, 0, 0,
                                 tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
        self.assertEqual(encode(naive)["data"], "2022-04-10T07:00:00.000")
        self.assertEqual(encode(cest)["data"], "2022-04-10T07:00:00.000")

    def test_v4_mapped_addresses_are_ipv4_in_broker(self):
        self.assertEqual(dumps(net("::ffff:10.0.0.0/104")),
                         '{"@data-type":"subnet","data":"10.0.0.0/8"}')
        self.assertEqual(loads(dumps(ip("::ffff:1.2.3.4"))), ip("1.2.3.4"))

    def test_the_duck_typed_hook_encodes_any_object(self):
        class Record:
            def __broker_value__(self):
                return [Count(1), "x"]
        self.assertEqual(dumps(Record()), dumps([Count(1), "x"]))


class EncodeErrors(unittest.TestCase):

    def assertFails(self, value, *fragments):
        with self.assertRaises(EncodeError) as cm:
            dumps(value)
        for fragment in fragments:
            self.assertIn(fragment, str(cm.exception))

    def test_unsupported_types_are_named_with_their_place(self):
        self.assertFails([1, {"k": object()}], "value[1]['k']", "object has no Broker type")
        self.assertFails(b"bytes", "bytes have no JSON v1 encoding")
        self.assertFails(datetime.date(2022, 1, 1), "use a datetime")

    def test_out_of_range_numbers(self):
        self.assertFails(2**63, "out of the integer range", "Count")
        self.assertFails(-(2**63) - 1, "out of the integer range")
        self.assertRaises(ValueError, Count, -1)
        self.assertRaises(ValueError, Count, 2**64)
        self.assertRaises(ValueError, Integer, 2**63)

    def test_times_outside_brokers_range(self):
        self.assertFails(datetime.datetime(2300, 1, 1), "timestamp outside Broker's range")
        self.assertFails(datetime.timedelta(days=300 * 365), "timespan outside")

    def test_duplicates_that_broker_would_reject(self):
        self.assertFails(Set([Count(1), Count(1)]), "duplicate set element")
        self.assertFails({ip("1.2.3.4"), ip("::ffff:1.2.3.4")}, "duplicate set element")
        self.assertFails(Table([("k", 1), ("k", 2)]), "duplicate table key")

    def test_strings_that_are_not_unicode(self):
        self.assertFails("bad \udc80 surrogate", "not valid Unicode")

    def test_ports_check_their_fields(self):
        self.assertRaises(ValueError, Port, 65536, "tcp")
        self.assertRaises(ValueError, Port, 80, "sctp")
        self.assertRaises(TypeError, Port, "80", "tcp")

    def test_reserved_and_non_string_topics(self):
        with self.assertRaises(EncodeError):
            codec.encode_message("<$>/local/data/statuses", 1)
        with self.assertRaises(EncodeError):
            codec.encode_message(b"/t", 1)

    def test_nesting_beyond_what_the_node_accepts(self):
        # 128 JSON levels: 63 vectors around a count or around an empty vector.
        dumps(nest(63, Count(1)))
        dumps(nest(63, ()))
        self.assertFails(nest(64, Count(1)), "nested deeper than the 128 JSON levels")
        self.assertFails(nest(64, None), "nested deeper")
        self.assertFails(nest(64, ()), "value[0][0][0]...[0][0][0]: nested deeper")
        dumps(nest(62, {1: 1}))
        self.assertFails(nest(62, {1: ()}), "nested deeper")  # a table entry adds a level
        self.assertFails(nest(63, {1: 1}), "nested deeper")


def nest(levels, leaf):
    """`leaf` inside `levels` vectors (tuples, as the decoder returns them)."""
    for _ in range(levels):
        leaf = (leaf,)
    return leaf


class DecodeErrors(unittest.TestCase):

    def assertFails(self, text, *fragments):
        with self.assertRaises(DecodeError) as cm:
            loads(text)
        for fragment in fragments:
            self.assertIn(fragment, str(cm.exception))

    def test_malformed_json(self):
        self.assertFails("How is it going?", "not valid JSON")

    def test_wrong_shapes_are_named_with_their_place(self):
        self.assertFails('{"@data-type":"phone","data":"555"}', "unknown @data-type")
        self.assertFails('{"@data-type":"count","data":-1}', "count out of range")
        self.assertFails('{"@data-type":"count","data":1.0}', "expected an integer")
        self.assertFails('{"@data-type":"integer","data":true}', "expected an integer")
        self.assertFails('{"@data-type":"boolean","data":1}', "expected true or false")
        self.assertFails('{"@data-type":"vector","data":[1]}', "value[0]", "expected a")
        self.assertFails('{"@data-type":"table","data":[{"key":{"@data-type":"none"}}]}',
                         "value{#0}", "key")
        self.assertFails('{"@data-type":"address","data":"10.0.0.256"}', "address")
        self.assertFails('{"@data-type":"port","data":"80/sctp"}', "port")
        self.assertFails('{"@data-type":"timestamp","data":"2022-02-30T00:00:00"}',
                         "not a valid date")
        self.assertFails('{"@data-type":"timespan","data":"5 s"}', "not a timespan")
        self.assertFails('{"@data-type":"count"}', "count without data")

    def test_deep_nesting_is_refused(self):
        text = '{"@data-type":"vector","data":[' * 64 + "]}" * 64
        loads(text)
        self.assertFails('{"@data-type":"vector","data":[' + text + "]}", "nested deeper")
        text = '{"@data-type":"vector","data":[' * 100000 + "]}" * 100000
        self.assertFails(text, "nested")

    def test_frames_other_than_data_messages(self):
        self.assertEqual(codec.decode_frame(
            '{"type":"error","code":"deserialization_failed","context":"input #1 x"}'),
            ("error", "deserialization_failed", "input #1 x"))
        self.assertEqual(codec.decode_frame('{"type":"ack","endpoint":"e","version":"v"}'),
                         ("ack", "e", "v"))
        with self.assertRaises(DecodeError):
            codec.decode_frame('{"type":"gossip"}')
        with self.assertRaises(DecodeError):
            codec.decode_frame("[1]")

    def test_lenient_inputs_the_node_never_sends_still_read(self):
        self.assertEqual(loads('{"@data-type":"real","data":5}'), 5.0)
        self.assertIs(type(loads('{"@data-type":"real","data":5}')), float)
        self.assertEqual(loads('{"@data-type":"none"}'), None)
        self.assertEqual(loads('{"@data-type":"subnet","data":"10.1.2.3/8"}'),
                         net("10.0.0.0/8"))
        self.assertEqual(loads('{"@data-type":"port","data":"80"}'), Port(80, "tcp"))


if __name__ == "__main__":
    unittest.main()
