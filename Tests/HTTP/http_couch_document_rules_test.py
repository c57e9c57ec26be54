"""CouchDB's rules for documents, attachments, bulk writes and replication over HTTP, as CouchDB's
own test suite states them (its basics, bulk_docs, invalid_docids, copy_doc, batch_save,
method_override, uuids, etags_head, attachments, attachment_names, security and replication
tests), checked against a real Sofa cluster's sofa-http.

Run by the Swift integration test HTTPAPITests with SOFA_HTTP_URL, SOFA_ADMIN_NAME and
SOFA_ADMIN_PASSWORD set.
"""
import base64
import unittest

import requests

from http_support import URL, CouchTestCase

HELLO = base64.b64encode(b"hello world").decode()


class DocumentRulesTests(CouchTestCase):
    def test_local_documents_have_a_name_and_no_attachments(self):
        db = self.new_db()
        for path in ["/_local", "/_local/", "/_local%2F", "/_local/foo/bar"]:
            answer = self.session.put(URL + "/" + db + path, json={}, timeout=30)
            self.assertEqual((answer.status_code, answer.json()["error"]), (400, "bad_request"), path)
        # The ID encoded whole names the document, for local and design documents alike.
        self.assertEqual(self.session.put(URL + "/" + db + "/_local%2Fabc", json={"a": 1}, timeout=30).status_code, 201)
        self.assertEqual(self.session.get(URL + "/" + db + "/_local/abc", timeout=30).json()["a"], 1)
        self.assertEqual(self.session.put(URL + "/" + db + "/_design%2Fdd", json={"views": {}}, timeout=30).status_code, 201)
        self.assertEqual(self.session.get(URL + "/" + db + "/_design/dd", timeout=30).json()["_id"], "_design/dd")

    def test_a_revision_of_a_missing_document_is_an_update_conflict(self):
        db = self.new_db()
        made = self.session.put(URL + "/" + db + "/gone", json={"a": 1}, timeout=30).json()
        self.session.post(URL + "/" + db + "/_purge", json={"gone": [made["rev"]]}, timeout=30)
        for doc_id in ["gone", "never"]:
            answer = self.session.put(URL + "/" + db + "/" + doc_id, json={"_rev": made["rev"], "a": 2}, timeout=30)
            self.assertEqual((answer.status_code, answer.json()["error"]), (409, "conflict"), doc_id)
            bulk = self.session.post(URL + "/" + db + "/_bulk_docs", json={"docs": [{"_id": doc_id, "_rev": made["rev"]}]},
                                     timeout=30).json()
            self.assertEqual(bulk[0]["error"], "conflict", doc_id)

    def test_ids_and_bodies_couchdb_refuses(self):
        db = self.new_db()
        answer = self.session.post(URL + "/" + db, json={"_id": "_invalid"}, timeout=30)
        self.assertEqual(answer.status_code, 400)
        self.assertEqual(answer.json(), {"error": "illegal_docid", "reason": "Only reserved document ids may start with underscore."})
        answer = self.session.put(URL + "/" + db + "/bar", data="[]", timeout=30)
        self.assertEqual(answer.json(), {"error": "bad_request", "reason": "Document must be a JSON object"})
        self.assertEqual(self.session.put(URL + "/" + db + "/src", json={"a": 1}, timeout=30).status_code, 201)
        answer = self.session.request("COPY", URL + "/" + db + "/src", timeout=30,
                                      headers={"Destination": "http://localhost:5984/" + db + "/copy"})
        self.assertEqual((answer.status_code, answer.json()["reason"]), (400, "Destination URL must be relative."))
        self.assertEqual(self.session.get(URL + "/" + db + "/_all_docs", timeout=30).json()["total_rows"], 1)
        # `_attachments` that are not attachments are refused, not stored as given.
        for attachments, expected in (("x", ("doc_validation", "Bad special document member: _attachments")),
                                      ({"a.txt": {"data": 5}}, ("bad_request", "Invalid attachment data for a.txt")),
                                      ({"a.txt": "x"}, ("bad_request", "Invalid attachment data for a.txt"))):
            answer = self.session.put(URL + "/" + db + "/odd", json={"_attachments": attachments}, timeout=30)
            self.assertEqual((answer.status_code, answer.json()["error"], answer.json()["reason"]), (400,) + expected)
        self.assertEqual(self.session.get(URL + "/" + db + "/odd", timeout=30).status_code, 404)

    def test_a_connection_whose_head_never_ends_is_closed(self):
        # A client holding connections open with half-sent heads (slowloris) loses them after
        # 10 s, before the idle timeout, so it cannot fill the connection cap for long.
        import socket
        import time
        from urllib.parse import urlparse
        address = urlparse(URL)
        started = time.monotonic()
        with socket.create_connection((address.hostname, address.port), timeout=60) as raw:
            raw.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
            self.assertEqual(raw.recv(1024), b"")  # closed by the server (waits at most 60 s)
        self.assertLess(time.monotonic() - started, 40)
        self.assertEqual(self.session.get(URL + "/", timeout=30).status_code, 200)

    def test_bulk_docs_options_and_ids(self):
        db = self.new_db()
        bulk = URL + "/" + db + "/_bulk_docs"
        answer = self.session.post(bulk, json={"docs": [{"_id": "a"}, {"_id": "b"}], "all_or_nothing": True}, timeout=30)
        self.assertEqual(answer.status_code, 417)
        self.assertEqual([row["error"] for row in answer.json()], ["not_implemented", "not_implemented"])
        answer = self.session.post(bulk, json={"docs": [], "new_edits": 0}, timeout=30)
        self.assertEqual(answer.json()["reason"], "`new_edits` parameter must be a boolean.")
        answer = self.session.post(bulk, json={"docs": "foo"}, timeout=30)
        self.assertEqual(answer.json()["reason"], "`docs` parameter must be an array.")
        answer = self.session.post(bulk, json={"docs": [{"_id": "fine"}, {"_id": "_invalid"}]}, timeout=30)
        self.assertEqual((answer.status_code, answer.json()["error"]), (400, "illegal_docid"))
        self.assertEqual(self.session.get(URL + "/" + db + "/fine", timeout=30).status_code, 404)
        # Local documents in a bulk are written too.
        answer = self.session.post(bulk, json={"docs": [{"_id": "_design/foo"}, {"_id": "_local/bar", "x": 1}]}, timeout=30)
        self.assertEqual(answer.status_code, 201, answer.text)
        self.assertEqual([row.get("ok") for row in answer.json()], [True, True])
        self.assertEqual(self.session.get(URL + "/" + db + "/_local/bar", timeout=30).json()["x"], 1)
        self.assertEqual(self.session.get(URL + "/" + db + "/_design/foo", timeout=30).status_code, 200)

    def test_batch_mode_method_override_and_uuids(self):
        db = self.new_db()
        # batch=ok: accepted whatever became of the write (CouchDB does not tell a batch writer).
        for value in range(3):
            answer = self.session.put(URL + "/" + db + "/foo?batch=ok", json={"a": value}, timeout=30)
            self.assertEqual(answer.status_code, 202)
            self.assertEqual(answer.json()["id"], "foo")
        self.assertEqual(self.session.get(URL + "/" + db + "/foo", timeout=30).json()["a"], 0)
        answer = self.session.post(URL + "/" + db + "/fnord", json={"bob": "connie"}, timeout=30,
                                   headers={"X-HTTP-Method-Override": "PUT"})
        self.assertEqual(answer.status_code, 201)
        answer = self.session.post(URL + "/" + db + "/fnord?rev=" + answer.json()["rev"], timeout=30,
                                   headers={"X-HTTP-Method-Override": "DELETE"})
        self.assertEqual(answer.status_code, 200)
        self.assertEqual(self.session.get(URL + "/" + db + "/fnord", timeout=30).status_code, 404)
        # Only a POST may override.
        answer = self.session.get(URL + "/" + db + "/fnord2", headers={"X-HTTP-Method-Override": "PUT"}, timeout=30)
        self.assertEqual(answer.status_code, 404)
        answer = self.session.get(URL + "/_uuids?count=1000", timeout=30)
        self.assertIn("no-cache", answer.headers["Cache-Control"])
        self.assertEqual(answer.headers["Pragma"], "no-cache")
        self.assertTrue(answer.headers["ETag"])
        ids = answer.json()["uuids"]
        self.assertEqual(len(set(ids)), 1000)
        self.assertTrue(all(len(i) == 32 for i in ids))
        # Sequential, as CouchDB's default: in order while they share their prefix.
        same = [i for i in ids if i[:26] == ids[0][:26]]
        self.assertGreater(len(same), 1)
        self.assertEqual(same, sorted(same))

    def test_weak_etags_are_honoured(self):
        db = self.new_db()
        self.session.put(URL + "/" + db + "/e", json={"a": 1}, timeout=30)
        etag = self.session.get(URL + "/" + db + "/e", timeout=30).headers["ETag"]
        self.assertEqual(self.session.get(URL + "/" + db + "/e", headers={"If-None-Match": "W/" + etag}, timeout=30).status_code, 304)
        self.assertEqual(self.session.get(URL + "/" + db + "/e", headers={"If-None-Match": "W/\"1-0\""}, timeout=30).status_code, 200)


class AttachmentRulesTests(CouchTestCase):
    def attached(self, db, doc_id):
        answer = self.session.put(URL + "/" + db + "/" + doc_id, timeout=30,
                                  json={"_attachments": {"foo.txt": {"content_type": "text/plain", "data": HELLO}}})
        self.assertEqual(answer.status_code, 201, answer.text)
        return answer.json()["rev"]

    def test_a_stub_needs_only_stub_and_must_name_an_attachment(self):
        db = self.new_db()
        rev = self.attached(db, "d")
        answer = self.session.put(URL + "/" + db + "/d?rev=" + rev, json={"_attachments": {"foo.txt": {"stub": True}}}, timeout=30)
        self.assertEqual(answer.status_code, 201, answer.text)
        self.assertEqual(self.session.get(URL + "/" + db + "/d/foo.txt", timeout=30).content, b"hello world")
        rev = answer.json()["rev"]
        for stub in [{"foo.txt": {"stub": True, "revpos": 10}}, {"other.txt": {"stub": True}}]:
            answer = self.session.put(URL + "/" + db + "/d?rev=" + rev, json={"_attachments": stub}, timeout=30)
            self.assertEqual((answer.status_code, answer.json()["error"]), (412, "missing_stub"), stub)
        answer = self.session.post(URL + "/" + db + "/_bulk_docs", timeout=30,
                                   json={"docs": [{"_id": "d", "_rev": rev, "n": 1, "_attachments": {"foo.txt": {"stub": True}}}]})
        self.assertTrue(answer.json()[0].get("ok"), answer.text)
        self.assertEqual(self.session.get(URL + "/" + db + "/d/foo.txt", timeout=30).content, b"hello world")

    def test_names_starting_with_underscore_are_refused(self):
        db = self.new_db()
        answer = self.session.put(URL + "/" + db + "/u", timeout=30,
                                  json={"_attachments": {"_foo.txt": {"content_type": "text/plain", "data": HELLO}}})
        self.assertEqual(answer.status_code, 400)
        self.assertEqual(answer.json()["reason"], "Attachment name '_foo.txt' starts with prohibited character '_'")
        rev = self.attached(db, "d")
        answer = self.session.put(URL + "/" + db + "/d/_x?rev=" + rev, data=b"x", headers={"Content-Type": "text/plain"}, timeout=30)
        self.assertEqual(answer.status_code, 400)
        # Design functions Sofa does not run are refused as such, never stored as attachments.
        self.session.put(URL + "/" + db + "/_design/f", json={"views": {}}, timeout=30)
        ddoc = self.session.get(URL + "/" + db + "/_design/f", timeout=30).json()
        for method, path in [("GET", "_show/s"), ("PUT", "_update/u/d?rev=" + ddoc["_rev"]), ("GET", "_list/l/v"),
                             ("GET", "_rewrite/x")]:
            answer = self.session.request(method, URL + "/" + db + "/_design/f/" + path, json={}, timeout=30)
            self.assertEqual((answer.status_code, answer.json()["error"]), (501, "not_implemented"), path)
        self.assertNotIn("_attachments", self.session.get(URL + "/" + db + "/_design/f", timeout=30).json())

    def test_a_range_of_the_whole_attachment_is_the_attachment(self):
        db = self.new_db()
        self.attached(db, "d")
        whole = self.session.get(URL + "/" + db + "/d/foo.txt", headers={"Range": "bytes=0-"}, timeout=30)
        self.assertEqual((whole.status_code, whole.headers.get("Content-Range"), whole.content), (200, None, b"hello world"))
        part = self.session.get(URL + "/" + db + "/d/foo.txt", headers={"Range": "bytes=0-4"}, timeout=30)
        self.assertEqual((part.status_code, part.headers["Content-Range"], part.content), (206, "bytes 0-4/11", b"hello"))
        # A range that covers the whole attachment is still a part (attachment_ranges.exs).
        every = self.session.get(URL + "/" + db + "/d/foo.txt", headers={"Range": "bytes=0-10"}, timeout=30)
        self.assertEqual((every.status_code, every.headers["Content-Range"], every.content), (206, "bytes 0-10/11", b"hello world"))
        # A range that does not parse is left alone: the whole attachment.
        odd = self.session.get(URL + "/" + db + "/d/foo.txt", headers={"Range": "bytes=5-abc"}, timeout=30)
        self.assertEqual((odd.status_code, odd.headers.get("Content-Range"), odd.content), (200, None, b"hello world"))

    def test_all_docs_with_attachments_inline(self):
        db = self.new_db()
        self.attached(db, "d")
        rows = self.session.get(URL + "/" + db + "/_all_docs?include_docs=true&attachments=true", timeout=30).json()["rows"]
        self.assertEqual(base64.b64decode(rows[0]["doc"]["_attachments"]["foo.txt"]["data"]), b"hello world")
        answer = self.session.post(URL + "/" + db + "/_all_docs?include_docs=true&attachments=true", json={"keys": ["d"]}, timeout=30)
        self.assertEqual(base64.b64decode(answer.json()["rows"][0]["doc"]["_attachments"]["foo.txt"]["data"]), b"hello world")


class ViewAndListingRulesTests(CouchTestCase):
    def test_a_linked_document_at_the_revision_its_row_names(self):
        db = self.new_db()
        first = self.session.put(URL + "/" + db + "/0", json={"integer": 0}, timeout=30).json()["rev"]
        self.session.put(URL + "/" + db + "/0", json={"_rev": first, "integer": 100, "prev": first}, timeout=30)
        view = "function(doc) { if (doc.prev) emit(doc._id, {'_id': doc._id, '_rev': doc.prev}); }"
        self.session.put(URL + "/" + db + "/_design/test", json={"views": {"with_prev": {"map": view}}}, timeout=30)
        answer = self.session.post(URL + "/" + db + "/_design/test/_view/with_prev?include_docs=true", json={"keys": ["0"]},
                                   timeout=60)
        doc = answer.json()["rows"][0]["doc"]
        self.assertEqual((doc["_rev"], doc["integer"], "prev" in doc), (first, 0, False))

    def test_an_event_source_resumes_from_its_last_event_id(self):
        db = self.new_db()
        for n in range(4):
            self.session.put(URL + "/" + db + "/d%d" % n, json={}, timeout=30)
        answer = self.session.get(URL + "/" + db + "/_changes?feed=eventsource&timeout=100&since=0", timeout=30,
                                  headers={"Last-Event-ID": "2"})
        events = [line for line in answer.text.split("\n") if line.startswith("data: ")]
        self.assertEqual(len(events), 2, answer.text)
        # A heartbeat is an event of its own (the feed goes on: read until one arrives).
        with self.session.get(URL + "/" + db + "/_changes?feed=eventsource&heartbeat=100&since=now", stream=True,
                              timeout=30) as beating:
            lines = beating.iter_lines(decode_unicode=True)
            self.assertEqual(next(line for line in lines if line), "event: heartbeat")

    def test_design_docs_counts_design_documents(self):
        db = self.new_db()
        docs = [{"_id": str(n)} for n in range(5)] + [{"_id": "_design/d%d" % n, "views": {}} for n in range(3)]
        self.session.post(URL + "/" + db + "/_bulk_docs", json={"docs": docs}, timeout=30)
        listing = self.session.get(URL + "/" + db + "/_design_docs", timeout=30).json()
        self.assertEqual((listing["total_rows"], len(listing["rows"])), (3, 3))


class ReplicationAndSecurityRulesTests(CouchTestCase):
    def test_replicate_keeps_conflicts_and_reads_this_server_only(self):
        source, target = self.new_db(), self.new_db()
        self.session.put(URL + "/" + source + "/c", json={"v": 1}, timeout=30)
        self.session.put(URL + "/" + target + "/c", json={"v": 2}, timeout=30)
        answer = self.session.post(URL + "/_replicate", json={"source": source, "target": target}, timeout=120)
        self.assertEqual(answer.status_code, 200, answer.text)
        doc = self.session.get(URL + "/" + target + "/c?conflicts=true", timeout=30).json()
        self.assertEqual(len(doc.get("_conflicts", [])), 1, doc)
        leaves = self.session.get(URL + "/" + target + "/c?open_revs=all", headers={"Accept": "application/json"}, timeout=30).json()
        self.assertEqual([leaf["ok"].get("_deleted", False) for leaf in leaves], [False, False])
        # A URL of another server is refused; one of this server names its database.
        remote = self.session.post(URL + "/_replicate", json={"source": "http://203.0.113.9:5984/" + source, "target": target},
                                   timeout=30)
        self.assertEqual(remote.status_code, 400, remote.text)
        here = self.session.post(URL + "/_replicate", json={"source": URL + "/" + source, "target": target}, timeout=120)
        self.assertEqual(here.status_code, 200, here.text)

    def test_sessions_as_a_browser_uses_them_and_other_users_are_not_there(self):
        db = self.new_db()
        name, password = self.new_member(db)
        other, _ = self.new_member(db)
        signed_in = requests.post(URL + "/_session?next=/_up", json={"name": name, "password": password}, timeout=30,
                                  allow_redirects=False)
        self.assertEqual((signed_in.status_code, signed_in.headers["Location"]), (302, "/_up"))
        failed = requests.post(URL + "/_session?fail=/_up", json={"name": name, "password": "wrong"}, timeout=30,
                               allow_redirects=False)
        self.assertEqual((failed.status_code, failed.headers["Location"]), (302, "/_up"))
        # `_:_` is nobody (how a browser forgets basic credentials).
        nobody = requests.get(URL + "/_session", auth=("_", "_"), timeout=30)
        self.assertEqual((nobody.status_code, nobody.json()["userCtx"]["name"]), (200, None))
        # To a user, another user's document does not exist, to read or to write.
        doc = URL + "/_users/org.couchdb.user:" + other
        for method, path, body in [("GET", "", None), ("DELETE", "?rev=1-0", None),
                                   ("PUT", "", {"name": other, "type": "user", "roles": [], "password": "x"})]:
            answer = requests.request(method, doc + path, json=body, auth=(name, password), timeout=30)
            self.assertEqual((answer.status_code, answer.json()["error"]), (404, "not_found"), method)

    def test_readers_are_members_when_members_are_not_given(self):
        db = self.new_db()
        security = {"admins": {"names": [], "roles": []}, "readers": {"names": ["someone"], "roles": []}}
        self.assertEqual(self.session.put(URL + "/" + db + "/_security", json=security, timeout=30).status_code, 200)
        self.assertEqual(self.session.get(URL + "/" + db + "/_security", timeout=30).json()["members"]["names"], ["someone"])
        self.session.put(URL + "/" + db + "/d", json={"a": 1}, timeout=30)
        self.assertEqual(requests.get(URL + "/" + db + "/d", timeout=30).status_code, 401)


class RevsLimitTests(CouchTestCase):
    """CouchDB's rev_stemming tests: `_revs_limit` is applied, to new writes and to what is held."""
    LIMIT = 5

    def update(self, db, doc_id, times):
        """Writes `doc_id` `times` more times (a new document first when there is none)."""
        current = self.session.get(URL + "/" + db + "/" + doc_id, timeout=30)
        doc = current.json() if current.status_code == 200 else {"_id": doc_id}
        for count in range(times):
            doc["count"] = count
            answer = self.session.put(URL + "/" + db + "/" + doc_id, json=doc, timeout=30)
            self.assertEqual(answer.status_code, 201, answer.text)
            doc["_rev"] = answer.json()["rev"]

    def history(self, db, doc_id):
        return self.session.get(URL + "/" + db + "/" + doc_id + "?revs=true", timeout=30).json()["_revisions"]["ids"]

    def set_limit(self, db, limit):
        answer = self.session.put(URL + "/" + db + "/_revs_limit", data=str(limit),
                                  headers={"Content-Type": "application/json"}, timeout=30)
        self.assertEqual(answer.status_code, 200, answer.text)

    def test_the_limit_is_applied_to_what_is_held_and_to_later_writes(self):
        db = self.new_db()
        self.assertEqual(self.session.get(URL + "/" + db + "/_revs_limit", timeout=30).json(), 1000)
        self.update(db, "foo", self.LIMIT + 1)
        self.assertEqual(len(self.history(db, "foo")), self.LIMIT + 1)
        self.set_limit(db, self.LIMIT)
        self.assertEqual(self.session.get(URL + "/" + db + "/_revs_limit", timeout=30).json(), self.LIMIT)
        # Held already: stemmed at once, and it stays so after a compaction.
        self.assertEqual(len(self.history(db, "foo")), self.LIMIT)
        self.assertEqual(self.session.post(URL + "/" + db + "/_compact", json={}, timeout=60).status_code, 202)
        self.assertEqual(len(self.history(db, "foo")), self.LIMIT)
        self.update(db, "foo", self.LIMIT + 1)
        self.assertEqual(len(self.history(db, "foo")), self.LIMIT)
        for body in ["0", "-1", "\"x\"", "1.5"]:
            answer = self.session.put(URL + "/" + db + "/_revs_limit", data=body, timeout=30)
            self.assertEqual((answer.status_code, answer.json()["error"]), (400, "bad_request"), body)
        self.assertEqual(self.session.get(URL + "/" + db + "/_revs_limit", timeout=30).json(), self.LIMIT)

    def test_a_stemmed_history_replicated_past_the_limit_is_a_conflict(self):
        source, target = self.new_db(), self.new_db()
        self.set_limit(source, self.LIMIT)
        self.update(source, "foo", self.LIMIT + 1)
        replicate = lambda: self.assertEqual(self.session.post(URL + "/_replicate", json={"source": source, "target": target},
                                                               timeout=120).status_code, 200)
        replicate()
        self.assertNotIn("_conflicts", self.session.get(URL + "/" + target + "/foo?conflicts=true", timeout=30).json())
        # One edit fewer than the limit: the history still reaches the target's revision.
        self.update(source, "foo", self.LIMIT - 1)
        replicate()
        doc = self.session.get(URL + "/" + target + "/foo?conflicts=true", timeout=30).json()
        self.assertNotIn("_conflicts", doc)
        before = doc["_rev"]
        # Past the limit it does not: the target's revision is left as a losing conflict.
        self.update(source, "foo", self.LIMIT + 1)
        replicate()
        doc = self.session.get(URL + "/" + target + "/foo?conflicts=true", timeout=30).json()
        self.assertEqual(doc.get("_conflicts"), [before], doc)

    def test_a_member_may_not_set_the_limit(self):
        db = self.new_db()
        name, password = self.new_member(db)
        answer = requests.put(URL + "/" + db + "/_revs_limit", data="3", auth=(name, password), timeout=30)
        self.assertEqual(answer.status_code, 403, answer.text)
        self.assertEqual(self.session.get(URL + "/" + db + "/_revs_limit", timeout=30).json(), 1000)


if __name__ == "__main__":
    unittest.main()
