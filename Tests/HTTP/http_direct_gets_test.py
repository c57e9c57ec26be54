"""Plain `GET /db/id` requests, which sofa-http answers on the connection's event loop without its
request router: the answers are the router's answers, byte for byte and header for header (but
the date), they keep the order of pipelined requests, and credentials are checked as everywhere.

Run by the Swift integration test HTTPAPITests with SOFA_HTTP_URL, SOFA_ADMIN_NAME,
SOFA_ADMIN_PASSWORD and SOFA_HTTP_PID (the sofa-http process, whose memory is watched).
"""
import base64
import json
import os
import socket
import threading
import time
import unittest
import uuid
from urllib.parse import urlparse

import requests

from http_support import rss_kib


def basic(name, password):
    return "Basic " + base64.b64encode(("%s:%s" % (name, password)).encode()).decode()


class Answers:
    """HTTP/1.1 answers read one after another from one socket (Content-Length or chunked)."""

    def __init__(self, connection):
        self.connection = connection
        self.buffer = b""

    def _fill(self):
        data = self.connection.recv(65536)
        if not data:
            raise AssertionError("the server closed the connection")
        self.buffer += data

    def _line(self):
        while b"\r\n" not in self.buffer:
            self._fill()
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def _exactly(self, count):
        while len(self.buffer) < count:
            self._fill()
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def next(self):
        status = int(self._line().split(b" ")[1])
        headers = {}
        while True:
            line = self._line()
            if not line:
                break
            name, value = line.split(b":", 1)
            headers[name.decode().lower()] = value.decode().strip()
        if "content-length" in headers:
            body = self._exactly(int(headers["content-length"]))
        else:
            if headers.get("transfer-encoding") != "chunked":
                raise AssertionError("an answer with neither a length nor chunks: %r" % headers)
            body = b""
            while True:
                size = int(self._line().split(b";")[0], 16)
                if size == 0:
                    while self._line():
                        pass
                    break
                body += self._exactly(size)
                self._exactly(2)
        return status, headers, body


class DirectGetsTest(unittest.TestCase):
    def setUp(self):
        self.url = os.environ["SOFA_HTTP_URL"].rstrip("/")
        parsed = urlparse(self.url)
        self.address = (parsed.hostname, parsed.port)
        self.admin = (os.environ["SOFA_ADMIN_NAME"], os.environ["SOFA_ADMIN_PASSWORD"])
        self.session = requests.Session()
        self.session.auth = self.admin
        self.name = "direct" + uuid.uuid4().hex[:10]
        self.db = self.url + "/" + self.name
        self.assertEqual(self.session.put(self.db).status_code, 201)
        answer = self.session.put(self.db + "/doc", json={"n": 1, "text": "caf\u00e9 \u2603", "list": [1, 2.5, None]})
        self.assertEqual(answer.status_code, 201, answer.text)
        self.rev = answer.json()["rev"]

    def tearDown(self):
        self.session.delete(self.db)
        self.session.close()

    def raw(self, requests_bytes, count, authorization=None):
        """Sends `requests_bytes` in one write and reads `count` answers from the same connection."""
        with socket.create_connection(self.address, timeout=10) as connection:
            connection.sendall(requests_bytes)
            answers = Answers(connection)
            return [answers.next() for _ in range(count)]

    def get(self, path, authorization):
        return ("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n\r\n" % (path, authorization)).encode()

    def test_a_direct_answer_is_the_routed_answer(self):
        authorization = basic(*self.admin)
        self.session.get(self.db)  # the admin's header is known from here on
        # The first goes the short way; `?revs=false` asks for the same answer through the router.
        direct, routed = self.raw(self.get("/%s/doc" % self.name, authorization)
                                  + self.get("/%s/doc?revs=false" % self.name, authorization), 2)
        self.assertEqual(direct[0], 200)
        self.assertEqual(direct[2], routed[2])
        self.assertTrue(direct[1].pop("date"))
        self.assertTrue(routed[1].pop("date"))
        self.assertEqual(direct[1], routed[1])
        self.assertEqual(direct[1]["etag"], '"%s"' % self.rev)
        self.assertEqual(direct[1]["content-type"], "application/json")
        body = direct[2].decode()
        self.assertTrue(body.endswith("\n"))
        self.assertEqual(json.loads(body),
                         {"_id": "doc", "_rev": self.rev, "n": 1, "text": "caf\u00e9 \u2603", "list": [1, 2.5, None]})

    def test_pipelined_requests_are_answered_in_order(self):
        authorization = basic(*self.admin)
        self.session.get(self.db)
        # A long poll that waits 400 ms, then plain gets: their answers come after its own.
        batch = (self.get("/%s/_changes?feed=longpoll&since=now&timeout=400" % self.name, authorization)
                 + self.get("/%s/doc" % self.name, authorization)
                 + self.get("/%s/_all_docs" % self.name, authorization)
                 + self.get("/%s/doc" % self.name, authorization)
                 + self.get("/%s/missing" % self.name, authorization)
                 + self.get("/%s/doc" % self.name, authorization))
        answers = self.raw(batch, 6)
        self.assertEqual([status for status, _, _ in answers], [200, 200, 200, 200, 404, 200])
        self.assertIn(b'"results"', answers[0][2])
        self.assertIn(b'"rows"', answers[2][2])
        self.assertEqual(b'{"error":"not_found","reason":"missing"}\n', answers[4][2])
        for index in (1, 3, 5):
            self.assertIn(b'"_id":"doc"', answers[index][2])

    def test_a_get_with_a_declared_body_is_answered_the_same(self):
        authorization = basic(*self.admin)
        self.session.get(self.db)
        path = "/%s/doc" % self.name
        empty = ("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Length: 0\r\n\r\n" % (path, authorization)).encode()
        with_body = ("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Length: 2\r\n\r\n{}" % (path, authorization)).encode()
        answers = self.raw(empty + with_body + self.get(path, authorization), 3)
        self.assertEqual([status for status, _, _ in answers], [200, 200, 200])
        self.assertEqual(answers[0][2], answers[1][2])
        self.assertEqual(answers[0][2], answers[2][2])

    def test_a_client_that_does_not_read_its_answers_holds_bounded_memory(self):
        pid = os.environ["SOFA_HTTP_PID"]
        authorization = basic(*self.admin)
        self.session.get(self.db)
        count = 100000
        request = self.get("/%s/doc" % self.name, authorization)
        payload = request * count  # about 12 MB of requests, 50 MB of answers
        before = rss_kib(pid)
        sent = [0]
        with socket.create_connection(self.address, timeout=60) as connection:
            def send():
                view = memoryview(payload)
                while sent[0] < len(view):
                    sent[0] += connection.send(view[sent[0]:sent[0] + 65536])
            sender = threading.Thread(target=send, daemon=True)
            sender.start()
            # The server stops reading once its answers are not taken: the sender stalls.
            deadline, last, still = time.monotonic() + 30, -1, 0
            while time.monotonic() < deadline and sent[0] < len(payload):
                if sent[0] == last:
                    still += 1
                    if still >= 10:
                        break
                else:
                    last, still = sent[0], 0
                time.sleep(0.1)  # sampling the stall, not waiting for an event
            self.assertLess(sent[0], len(payload), "the server read every request without its answers being taken")
            grown = rss_kib(pid) - before
            self.assertLess(grown, 32 * 1024, "sofa-http grew by %d KiB holding answers nobody reads" % grown)
            # Reading them all: every one answered, in full.
            answers = Answers(connection)
            for _ in range(count):
                status, _, body = answers.next()
                self.assertEqual(status, 200)
            sender.join(30)
            self.assertEqual(sent[0], len(payload))

    def test_credentials_are_checked_before_and_after_they_are_known(self):
        self.session.put(self.url + "/_users")
        name, password = "reader" + uuid.uuid4().hex[:8], "secret-1"
        user_url = self.url + "/_users/org.couchdb.user:" + name
        made = self.session.put(user_url, json={"name": name, "password": password, "roles": [], "type": "user"})
        self.assertEqual(made.status_code, 201, made.text)
        try:
            self.assertEqual(self.session.put(self.db + "/_security",
                                              json={"members": {"names": [name]}, "admins": {}}).status_code, 200)
            path = "/%s/doc" % self.name
            wrong = basic(name, "wrong")
            right = basic(name, password)
            # Unknown, then known (the second and third go the short way), a wrong password never.
            answers = self.raw(self.get(path, wrong) + self.get(path, right) + self.get(path, right)
                               + self.get(path, right) + self.get(path, wrong), 5)
            self.assertEqual([status for status, _, _ in answers], [401, 200, 200, 200, 401])
            self.assertEqual(answers[1][2], answers[3][2])
            # Anonymous: the database has members now.
            anonymous = self.raw(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode(), 1)
            self.assertEqual(anonymous[0][0], 401)
            # A new password: the old one stops working on the next request.
            current = self.session.get(user_url).json()
            current["password"] = "secret-2"
            self.assertEqual(self.session.put(user_url, json=current).status_code, 201)
            after = self.raw(self.get(path, right) + self.get(path, basic(name, "secret-2")), 2)
            self.assertEqual([status for status, _, _ in after], [401, 200])
        finally:
            current = self.session.get(user_url).json()
            self.session.delete(user_url, params={"rev": current["_rev"]})


if __name__ == "__main__":
    unittest.main()
