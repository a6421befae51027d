"""Unit tests of the command line's literals and plain-JSON output."""

import datetime
import ipaddress
import json
import os
import unittest

from brokerclient import Count, EncodeError, Enum, Event, Port, Table, Timespan, codec, literal
from brokerclient.errors import DecodeError

# The table broker-store is tested with too (tools/broker-store/values.test.cc): one literal
# syntax for both tools (doc/literals.md). Present in the source tree only.
TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tests",
                     "data", "literals.json")

UTC = datetime.timezone.utc


class Literals(unittest.TestCase):

    def test_json_v1_objects_are_taken_exactly(self):
        self.assertIs(type(literal.parse('{"@data-type":"count","data":42}')), Count)
        self.assertEqual(literal.parse('{"@data-type":"enum-value","data":"x"}'), Enum("x"))
        self.assertEqual(literal.parse('[{"@data-type":"count","data":1}, "a"]'),
                         [Count(1), "a"])

    def test_plain_json(self):
        self.assertIs(type(literal.parse("42")), int)
        self.assertEqual(literal.parse("4.5"), 4.5)
        self.assertEqual(literal.parse('"10.0.0.1"'), "10.0.0.1")  # quoted: a string
        self.assertEqual(literal.parse("true"), True)
        self.assertIsNone(literal.parse("null"))
        self.assertEqual(literal.parse('{"a": [1, 2]}'), {"a": [1, 2]})

    def test_bare_words_in_brokers_text_forms(self):
        self.assertEqual(literal.parse("10.0.0.1"), ipaddress.ip_address("10.0.0.1"))
        self.assertEqual(literal.parse("::1"), ipaddress.ip_address("::1"))
        self.assertEqual(literal.parse("10.0.0.0/8"), ipaddress.ip_network("10.0.0.0/8"))
        self.assertEqual(literal.parse("80/tcp"), Port(80, "tcp"))
        self.assertEqual(literal.parse("1500ms"), datetime.timedelta(milliseconds=1500))
        self.assertEqual(literal.parse("1500ns"), Timespan(1500))
        self.assertEqual(literal.parse("2022-04-10T07:00:00"),
                         datetime.datetime(2022, 4, 10, 7, tzinfo=UTC))
        self.assertEqual(literal.parse("hello world"), "hello world")
        self.assertIs(type(literal.parse("7c")), Count)
        self.assertRaises(ValueError, literal.parse, "80/sctp")  # starts like a number

    def test_an_invalid_json_v1_object_is_an_error(self):
        self.assertRaises(DecodeError, literal.parse, '{"@data-type":"count","data":-1}')


@unittest.skipUnless(os.path.exists(TABLE), "tests/data/literals.json is not here")
class SharedTable(unittest.TestCase):
    """Every word of the table broker-store shares parses to its value, or is refused."""

    def setUp(self):
        with open(TABLE) as f:
            self.table = json.load(f)

    def test_values(self):
        self.assertGreater(len(self.table["values"]), 30)
        for case in self.table["values"]:
            with self.subTest(word=case["word"]):
                got = literal.parse(case["word"])
                want = codec.decode(case["value"])
                self.assertEqual(codec.encode(got), codec.encode(want))

    def test_errors(self):
        self.assertGreater(len(self.table["errors"]), 5)
        for case in self.table["errors"]:
            with self.subTest(word=case["word"]):
                with self.assertRaises((ValueError, DecodeError, EncodeError)):
                    codec.encode(literal.parse(case["word"]))


class PlainOutput(unittest.TestCase):

    def test_scalars(self):
        self.assertEqual(literal.to_plain(Count(3)), 3)
        self.assertEqual(literal.to_plain(Enum("x")), "x")
        self.assertEqual(literal.to_plain(Port(80, "tcp")), "80/tcp")
        self.assertEqual(literal.to_plain(datetime.timedelta(seconds=2)), "2s")
        self.assertEqual(literal.to_plain(datetime.datetime(2022, 4, 10, 7, tzinfo=UTC)),
                         "2022-04-10T07:00:00.000")
        self.assertEqual(literal.to_plain(float("nan")), "NaN")

    def test_containers(self):
        self.assertEqual(literal.to_plain({"b", "a"}), ["a", "b"])
        self.assertEqual(literal.to_plain({"k": (1, Count(2))}), {"k": [1, 2]})
        self.assertEqual(literal.to_plain({Count(1): "x"}), {"1": "x"})
        self.assertEqual(literal.to_plain({(1, 2): "x"}), [[[1, 2], "x"]])
        self.assertEqual(literal.to_plain(Table([(Count(1), "a"), (1, "b")])),
                         [[1, "a"], [1, "b"]])

    def test_events(self):
        self.assertEqual(literal.to_plain(Event("ping", [Count(1)], {1: "x"})),
                         {"event": "ping", "args": [1], "metadata": {"1": "x"}})

    def test_values_without_broker_type_are_refused(self):
        self.assertRaises(EncodeError, literal.to_plain, object())


if __name__ == "__main__":
    unittest.main()
