"""Bad input to Sofa's HTTP API: each answered with CouchDB's error or a closed connection,
and the server keeps serving everyone else with bounded memory.

Run by the Swift integration test HTTPAPITests with SOFA_HTTP_URL, SOFA_ADMIN_NAME,
SOFA_ADMIN_PASSWORD and SOFA_HTTP_PID (the sofa-http process, whose memory is watched).
"""
import os
import socket
import sys
import time
import unittest
import uuid
from urllib.parse import urlparse

import requests

from http_support import rss_kib


class HTTPBadInputTest(unittest.TestCase):
    def setUp(self):
        self.url = os.environ["SOFA_HTTP_URL"].rstrip("/")
        parsed = urlparse(self.url)
        self.address = (parsed.hostname, parsed.port)
        self.session = requests.Session()
        self.session.auth = (os.environ["SOFA_ADMIN_NAME"], os.environ["SOFA_ADMIN_PASSWORD"])
        self.db = self.url + "/bad" + uuid.uuid4().hex[:10]
        self.assertEqual(self.session.put(self.db).status_code, 201)

    def tearDown(self):
        self.session.delete(self.db)

    def assertServes(self):
        response = self.session.get(self.db, timeout=10)
        self.assertEqual(response.status_code, 200, response.text)

    def assertCouchError(self, response, status, word):
        self.assertEqual(response.status_code, status, response.text)
        body = response.json()
        self.assertEqual(body["error"], word, body)
        self.assertTrue(body["reason"], body)

    def test_malformed_json_bad_utf8_and_wrong_types_are_couchdb_errors(self):
        headers = {"Content-Type": "application/json"}
        self.assertCouchError(self.session.put(self.db + "/a", data=b'{"a": ', headers=headers), 400, "bad_request")
        self.assertCouchError(self.session.put(self.db + "/a", data=b'{"a": "\xff\xfe"}', headers=headers), 400, "bad_request")
        self.assertCouchError(self.session.put(self.db + "/a", data=b'[1, 2]', headers=headers), 400, "bad_request")
        self.assertCouchError(self.session.post(self.db, data=b'{"a": 1}', headers={"Content-Type": "text/html"}),
                              415, "bad_content_type")
        self.assertCouchError(self.session.post(self.db + "/_bulk_docs", json={"nodocs": []}), 400, "bad_request")
        self.assertCouchError(self.session.put(self.db + "/a", json={"_bad": 1}), 400, "doc_validation")
        self.assertCouchError(self.session.get(self.db + "/_changes", params={"since": "nonsense"}), 400, "bad_request")
        self.assertCouchError(self.session.get(self.db + "/_all_docs", params={"limit": "-3"}), 400, "query_parse_error")
        self.assertCouchError(self.session.get(self.url + "/NotADb!"), 400, "illegal_database_name")
        raw = self.raw(b"GET /%ff%fe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        self.assertTrue(raw.startswith(b"HTTP/1.1 400") or raw.startswith(b"HTTP/1.1 404"), raw[:200])
        # Nothing was written by any of them.
        self.assertEqual(self.session.get(self.db).json()["doc_count"], 0)
        self.assertServes()

    def test_huge_headers_are_refused_and_the_server_goes_on(self):
        header = b"X-Big: " + b"a" * (256 * 1024) + b"\r\n"
        raw = self.raw(b"GET / HTTP/1.1\r\nHost: x\r\n" + header + b"Connection: close\r\n\r\n")
        self.assertFalse(raw.startswith(b"HTTP/1.1 200"), raw[:200])
        self.assertServes()

    def test_slow_clients_do_not_stall_the_others(self):
        slow = []
        for _ in range(64):
            connection = socket.create_connection(self.address, timeout=5)
            connection.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            slow.append(connection)
        try:
            started = time.monotonic()
            for _ in range(20):
                self.assertServes()
            self.assertLess(time.monotonic() - started, 10)
        finally:
            for connection in slow:
                connection.close()

    def test_a_continuous_feed_nobody_reads_keeps_memory_bounded(self):
        pid = os.environ["SOFA_HTTP_PID"]
        # The same writes once without the feed first: what the process keeps from them is not the feed's.
        for round_ in range(3):
            docs = [{"_id": "w%02d-%04d" % (round_, i), "text": "x" * 10000} for i in range(500)]
            self.assertEqual(self.session.post(self.db + "/_bulk_docs", json={"docs": docs}, timeout=60).status_code, 201)
        feed = socket.create_connection(self.address, timeout=5)
        feed.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        path = urlparse(self.db).path + "/_changes?feed=continuous&include_docs=true&heartbeat=1000&since=0"
        auth = requests.auth._basic_auth_str(*self.session.auth)
        feed.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n\r\n" % (path, auth)).encode())
        before = rss_kib(pid)
        try:
            for round_ in range(12):
                docs = [{"_id": "r%02d-%04d" % (round_, i), "text": "x" * 10000} for i in range(500)]
                response = self.session.post(self.db + "/_bulk_docs", json={"docs": docs}, timeout=60)
                self.assertEqual(response.status_code, 201, response.text[:300])
            # 60 MB of changes went into a feed whose reader reads nothing.
            grown = rss_kib(pid) - before
            self.assertLess(grown, 64 * 1024, "sofa-http grew by %d KiB" % grown)
            self.assertServes()
        finally:
            feed.close()
        self.assertServes()

    def test_z_failed_sign_ins_from_one_address_are_delayed(self):
        # Each attempt names another (unknown) user: only this address's failures add up.
        took = []
        for attempt in range(5):
            started = time.monotonic()
            response = requests.get(self.url + "/_session", auth=("nobody%d" % attempt, "wrong"), timeout=30)
            took.append(time.monotonic() - started)
            self.assertEqual(response.status_code, 401)
        self.assertGreaterEqual(took[3], 0.25, took)   # the fourth waits 250 ms, the fifth 500 ms
        self.assertGreaterEqual(took[4], 0.5, took)
        # A right password resets the count (after its own wait).
        name, password = self.session.auth
        self.assertEqual(requests.get(self.url + "/_session", auth=(name, password + ""), timeout=30).status_code, 200)

    def raw(self, request):
        connection = socket.create_connection(self.address, timeout=10)
        try:
            connection.sendall(request)
            chunks = []
            while True:
                try:
                    chunk = connection.recv(65536)
                except (ConnectionResetError, socket.timeout):
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            return b"".join(chunks)
        except (BrokenPipeError, ConnectionResetError):
            return b""
        finally:
            connection.close()


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
