"""Unit tests of Zeek's event layout (doc/protocol/websocket.md §10.7)."""

import datetime
import json
import os
import unittest

from brokerclient import Count, Event, codec, dumps, loads
from brokerclient.zeek import NETWORK_TIMESTAMP

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "spec_vectors.json"), encoding="utf-8") as f:
    VECTORS = json.load(f)

UTC = datetime.timezone.utc


class ZeekEvents(unittest.TestCase):

    def test_an_event_encodes_exactly_as_zeek_sends_it(self):
        self.assertEqual(codec.encode_message("/foo/bar", Event("event_1", [42, "test"])),
                         VECTORS["11 zeek event"])

    def test_the_spec_frame_decodes_to_an_event(self):
        _, topic, value = codec.decode_frame(VECTORS["11 zeek event"])
        self.assertEqual(Event.from_value(value), Event("event_1", [42, "test"]))
        self.assertIsNone(Event.from_value(value).metadata)

    def test_metadata_is_the_third_element(self):
        ts = datetime.datetime(2023, 4, 18, 14, 13, 14, tzinfo=UTC)
        event = Event("event_1", [42, "test"], metadata={NETWORK_TIMESTAMP: ts})
        self.assertEqual(json.loads(dumps(event))["data"][2]["data"][2],
                         json.loads(VECTORS["11 zeek event metadata"]))
        back = Event.from_value(loads(dumps(event)))
        self.assertEqual(back, event)
        self.assertEqual(back.network_timestamp, ts)
        self.assertIs(type(list(back.metadata)[0]), Count)

    def test_metadata_may_be_given_as_pairs_and_empty_metadata_is_kept(self):
        self.assertEqual(Event("e", [], [(200, "x")]).metadata, {200: "x"})
        empty = Event("e", [], {})
        self.assertEqual(Event.from_value(loads(dumps(empty))).metadata, {})

    def test_typed_arguments_round_trip(self):
        event = Event("Intel::seen", [Count(3), (datetime.timedelta(seconds=1), "x"),
                                      {"a", "b"}])
        back = Event.from_value(loads(dumps(event)))
        self.assertEqual(back.args, event.args)
        self.assertIs(type(back.args[0]), Count)
        self.assertIsInstance(back.args, list)

    def test_values_of_other_shapes_are_not_events(self):
        not_events = [
            (Count(1), Count(1)),                        # too short
            (1, Count(1), ("e", ())),                    # integer format, not count
            (Count(1), Count(2), ("e", ())),             # another message type
            (Count(1), Count(1), (Count(5), ())),        # name not a string
            (Count(1), Count(1), ("e", ((Count(1),),))[:1]),
            (Count(1), Count(1), ("e", (), ((1, "x"),))),  # metadata key not a count
            (Count(1), Count(1), ("e", (), ((Count(1), "x"), (Count(1), "y")))),
            "event",
        ]
        for value in not_events:
            self.assertIsNone(Event.from_value(value), repr(value))

    def test_bad_constructor_arguments(self):
        self.assertRaises(TypeError, Event, 42)
        self.assertRaises(TypeError, Event, "e", [], {-1: "x"})
        self.assertRaises(TypeError, Event, "e", [], ["x"])
        self.assertRaises(ValueError, Event, "e", [], [(1, "a"), (1, "b")])


if __name__ == "__main__":
    unittest.main()
