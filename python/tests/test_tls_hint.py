"""Unit tests: a connection that fails because only one side speaks TLS says so."""

import ssl
import unittest

import websockets.exceptions

from brokerclient import _compat


def ssl_error(reason):
    e = ssl.SSLError(1, "[SSL: %s] %s (_ssl.c:992)" % (reason, reason.lower()))
    e.reason = reason
    return e


class TlsHints(unittest.TestCase):

    def test_plain_client_at_a_tls_server(self):
        e = websockets.exceptions.InvalidMessage("did not receive a valid HTTP response")
        hint = _compat._tls_hint("ws://127.0.0.1:9997/v1/messages/json", e)
        self.assertIn("does it expect TLS", hint)
        self.assertIn("broker.disable-ssl=false serves wss://", hint)

    def test_tls_client_at_a_plain_server(self):
        hint = _compat._tls_hint("wss://127.0.0.1:9997/v1/messages/json",
                                 ssl_error("WRONG_VERSION_NUMBER"))
        self.assertIn("does not speak TLS", hint)
        self.assertIn("broker.disable-ssl=true serves ws://", hint)

    def test_other_failures_keep_their_words(self):
        self.assertIsNone(_compat._tls_hint("wss://h:1/", ssl_error("CERTIFICATE_VERIFY_FAILED")))
        self.assertIsNone(_compat._tls_hint("ws://h:1/", ConnectionRefusedError(111, "refused")))
        self.assertIsNone(_compat._tls_hint("wss://h:1/", websockets.exceptions.InvalidMessage(
            "did not receive a valid HTTP response")))
        self.assertIsNone(_compat._tls_hint("ws://h:1/", None))


if __name__ == "__main__":
    unittest.main()
