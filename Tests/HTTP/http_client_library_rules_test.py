"""CouchDB's rules that CouchDB client libraries (aiocouch, pycouchdb, python-couchdb) lean on:
how query parameters are read, which status a refusal has, what a document read adds, checked
against a real Sofa cluster's sofa-http with the requests those libraries send.

Run by the Swift integration test HTTPAPITests with SOFA_HTTP_URL, SOFA_ADMIN_NAME and
SOFA_ADMIN_PASSWORD set.
"""
import base64
import time
import unittest
import urllib.parse

import requests

from http_support import URL, CouchTestCase, rev

MAP = "function(doc) { if (doc.n) emit(doc.n, null); }"


class ClientLibraryRulesTests(CouchTestCase):
    def view_db(self):
        db = self.new_db()
        docs = [{"_id": "k%d" % n, "n": n} for n in (1, 2, 3)]
        self.assertEqual(self.session.post(URL + "/" + db + "/_bulk_docs", json={"docs": docs}, timeout=30).status_code, 201)
        design = {"views": {"by_n": {"map": MAP, "reduce": "_count"}}}
        self.assertEqual(self.session.put(URL + "/" + db + "/_design/v", json=design, timeout=30).status_code, 201)
        return db

    def test_listing_booleans_are_read_in_any_case(self):
        # pycouchdb sends Python's True and False as written.
        db = self.view_db()
        view = URL + "/" + db + "/_design/v/_view/by_n"
        rows = self.session.get(view + "?reduce=False&include_docs=True&descending=True&limit=1", timeout=30).json()["rows"]
        self.assertEqual((rows[0]["key"], rows[0]["doc"]["_id"]), (3, "k3"))
        self.assertEqual(self.session.get(view + "?group=TRUE", timeout=30).json()["rows"][0], {"key": 1, "value": 1})
        listed = self.session.get(URL + "/" + db + "/_all_docs?descending=True&include_docs=true&limit=1", timeout=30).json()
        self.assertEqual(listed["rows"][0]["doc"]["_id"], "k3")
        # A value that is no boolean is refused, naming it.
        for path in ("/_design/v/_view/by_n?descending=yes", "/_all_docs?descending=yes"):
            answer = self.session.get(URL + "/" + db + path, timeout=30)
            self.assertEqual((answer.status_code, answer.json()),
                             (400, {"error": "query_parse_error", "reason": 'Invalid boolean parameter: "yes"'}), path)
        self.assertEqual(self.session.get(URL + "/_all_dbs?descending=True", timeout=30).status_code, 200)

    def test_document_and_feed_flags_act_only_when_true_as_written(self):
        db = self.new_db()
        made = self.session.put(URL + "/" + db + "/d", json={"a": 1}, timeout=30).json()
        for flag in ("conflicts", "revs", "revs_info", "local_seq", "attachments", "deleted_conflicts", "meta", "latest"):
            answer = self.session.get(URL + "/" + db + "/d?%s=True" % flag, timeout=30)
            self.assertEqual((answer.status_code, answer.json()), (200, {"_id": "d", "_rev": made["rev"], "a": 1}), flag)
        feed = self.session.get(URL + "/" + db + "/_changes?include_docs=True&descending=1", timeout=30)
        self.assertEqual(feed.status_code, 200)
        self.assertNotIn("doc", feed.json()["results"][0])

    def test_deleted_conflicts_and_meta(self):
        db = self.new_db()
        first = self.session.put(URL + "/" + db + "/x", json={"v": 0}, timeout=30).json()["rev"]
        low, high = sorted([rev(2), rev(2)])
        self.insert(db, "x", low, (first,), v="A")
        self.insert(db, "x", high, (first,), v="B")
        gone = self.session.delete(URL + "/" + db + "/x?rev=" + low, timeout=30).json()["rev"]
        read = self.session.get(URL + "/" + db + "/x?deleted_conflicts=true", timeout=30).json()
        self.assertEqual((read["_rev"], read["_deleted_conflicts"]), (high, [gone]))
        self.assertNotIn("_conflicts", read)
        meta = self.session.get(URL + "/" + db + "/x?meta=true", timeout=30).json()
        self.assertEqual(meta["_deleted_conflicts"], [gone])
        self.assertEqual([item["rev"] for item in meta["_revs_info"]], [high, first])
        self.assertEqual(meta["_revs_info"][0]["status"], "available")

    def test_revs_info_says_which_bodies_are_kept(self):
        db = self.new_db()
        first = self.session.put(URL + "/" + db + "/y", json={"v": 1}, timeout=30).json()["rev"]
        second = self.session.put(URL + "/" + db + "/y", json={"_rev": first, "v": 2}, timeout=30).json()["rev"]
        info = self.session.get(URL + "/" + db + "/y?revs_info=true", timeout=30).json()["_revs_info"]
        self.assertEqual(info, [{"rev": second, "status": "available"}, {"rev": first, "status": "available"}])
        # Sofa's compaction is done when it is answered.
        self.assertEqual(self.session.post(URL + "/" + db + "/_compact", json={}, timeout=30).status_code, 202)
        info = self.session.get(URL + "/" + db + "/y?revs_info=true", timeout=30).json()["_revs_info"]
        self.assertEqual(info, [{"rev": second, "status": "available"}, {"rev": first, "status": "missing"}])

    def test_a_non_admin_is_unauthorized_where_only_admins_go(self):
        db = self.new_db()
        name, password = self.new_member(db)
        member = requests.Session()
        member.auth = (name, password)
        self.addCleanup(member.close)
        for method, path, reason in (("PUT", "/" + db + "x", "You are not a server admin."),
                                     ("DELETE", "/" + db, "You are not a server admin."),
                                     ("GET", "/_all_dbs", "You are not a server admin."),
                                     ("POST", "/" + db + "/_compact", "You are not a server or db admin."),
                                     ("POST", "/" + db + "/_view_cleanup", "You are not a server or db admin.")):
            answer = member.request(method, URL + path, json={} if method == "POST" else None, timeout=30)
            self.assertEqual((answer.status_code, answer.json()), (401, {"error": "unauthorized", "reason": reason}), path)
        # A database's own refusals stay 403.
        answer = member.put(URL + "/" + db + "/_design/d", json={"views": {}}, timeout=30)
        self.assertEqual(answer.status_code, 403)

    def test_revisions_and_names_that_are_not_there(self):
        db = self.view_db()
        self.assertEqual(self.session.put(URL + "/" + db + "/doc1", json={}, timeout=30).status_code, 201)
        answer = self.session.get(URL + "/" + db + "/doc1?rev=1-abc", timeout=30)
        self.assertEqual((answer.status_code, answer.json()), (404, {"error": "not_found", "reason": "missing"}))
        answer = self.session.get(URL + "/" + db + "/doc1?rev=garbage", timeout=30)
        self.assertEqual((answer.status_code, answer.json()["reason"]), (400, "Invalid rev format"))
        answer = self.session.post(URL + "/" + db + "/_compact/nope", json={}, timeout=30)
        self.assertEqual((answer.status_code, answer.json()["error"]), (404, "not_found"))
        self.assertEqual(self.session.post(URL + "/" + db + "/_compact/v", json={}, timeout=30).status_code, 202)
        answer = self.session.get(URL + "/" + db + "/_design/v/_view/nope", timeout=30)
        self.assertEqual((answer.status_code, answer.json()), (404, {"error": "not_found", "reason": "missing_named_view"}))

    def test_copy_says_where_and_a_bulk_item_must_be_a_document(self):
        db = self.new_db()
        self.assertEqual(self.session.put(URL + "/" + db + "/doc1", json={"a": 1}, timeout=30).status_code, 201)
        answer = self.session.request("COPY", URL + "/" + db + "/doc1", headers={"Destination": "doc1 copy"}, timeout=30)
        self.assertEqual(answer.status_code, 201)
        self.assertTrue(answer.headers["Location"].endswith("/" + db + "/doc1%20copy"), answer.headers["Location"])
        answer = self.session.post(URL + "/" + db + "/_bulk_docs", json={"docs": [{"_id": "fine"}, 1]}, timeout=30)
        self.assertEqual((answer.status_code, answer.json()), (400, {"error": "bad_request", "reason": "Document must be a JSON object"}))
        self.assertEqual(self.session.get(URL + "/" + db + "/fine", timeout=30).status_code, 404)

    def test_urls_of_this_server_name_its_databases(self):
        # CouchDB 3 writes both sides as URLs, credentials in them, for its own databases too.
        source, target, other = self.new_db(), self.new_db(), self.new_db()
        docs = [{"_id": "d%d" % n} for n in range(3)]
        self.assertEqual(self.session.post(URL + "/" + source + "/_bulk_docs", json={"docs": docs}, timeout=30).status_code, 201)
        parts = urllib.parse.urlsplit(URL)
        credentialed = "%s://%s:%s@%s" % (parts.scheme, urllib.parse.quote(self.session.auth[0]),
                                          urllib.parse.quote(self.session.auth[1], safe=""), parts.netloc)
        answer = self.session.post(URL + "/_replicate", timeout=120,
                                   json={"source": credentialed + "/" + source, "target": {"url": URL + "/" + target}})
        self.assertEqual((answer.status_code, answer.json().get("ok")), (200, True), answer.text)
        self.assertEqual(self.session.get(URL + "/" + target, timeout=30).json()["doc_count"], 3)
        # Another server's URL is refused, without the credentials in the answer.
        answer = self.session.post(URL + "/_replicate", timeout=30,
                                   json={"source": "http://someone:secret@other.example:5984/x", "target": target})
        self.assertEqual(answer.status_code, 400)
        self.assertNotIn("secret", answer.text)
        # A _replicator document with URLs of this server replicates between its databases.
        made = self.session.put(URL + "/_replicator/" + other, timeout=30,
                                json={"source": credentialed + "/" + source, "target": credentialed + "/" + other})
        self.assertIn(made.status_code, (201, 202), made.text)
        self.addCleanup(lambda: self.session.delete(URL + "/_replicator/" + other, timeout=30,
                                                    params={"rev": self.session.get(URL + "/_replicator/" + other, timeout=30).json()["_rev"]}))
        deadline, since, seen = time.monotonic() + 60, "0", set()
        while len(seen) < 3 and time.monotonic() < deadline:
            feed = self.session.get(URL + "/" + other + "/_changes", timeout=30,
                                    params={"feed": "longpoll", "since": since, "timeout": "5000"}).json()
            seen.update(change["id"] for change in feed["results"])
            since = feed["last_seq"]
        self.assertEqual(seen, {"d0", "d1", "d2"})

    def test_a_design_document_whose_javascript_does_not_compile_is_refused(self):
        db = self.new_db()
        for name, view in (("map", {"map": "function(doc){ emit(doc.n"}), ("word", {"map": "not a function"}),
                           ("reduce", {"map": MAP, "reduce": "function(k, v) { return sum(v"})):
            answer = self.session.put(URL + "/" + db + "/_design/bad", json={"views": {name: view}}, timeout=30)
            self.assertEqual((answer.status_code, answer.json()["error"]), (400, "compilation_error"), name)
            kind = "reduce" if name == "reduce" else "map"
            self.assertTrue(answer.json()["reason"].startswith("Compilation of the %s function in the '%s' view failed: " % (kind, name)),
                            answer.json()["reason"])
        self.assertEqual(self.session.get(URL + "/" + db + "/_design/bad", timeout=30).status_code, 404)
        good = {"views": {"v": {"map": MAP, "reduce": "_sum"}, "w": {"map": MAP, "reduce": "function(k, v) { return v.length; }"}}}
        self.assertEqual(self.session.put(URL + "/" + db + "/_design/good", json=good, timeout=30).status_code, 201)

    def test_a_failed_reduction_is_the_rows_value(self):
        db = self.new_db()
        docs = [{"_id": "a", "n": 1, "kind": "odd"}, {"_id": "b", "n": 2, "kind": "even"}]
        self.assertEqual(self.session.post(URL + "/" + db + "/_bulk_docs", json={"docs": docs}, timeout=30).status_code, 201)
        design = {"views": {"throws": {"map": MAP, "reduce": "function(k, v, r) { throw new Error('rboom'); }"},
                            "badsum": {"map": "function(doc) { emit(doc.kind, doc.kind); }", "reduce": "_sum"}}}
        self.assertEqual(self.session.put(URL + "/" + db + "/_design/r", json=design, timeout=30).status_code, 201)
        answer = self.session.get(URL + "/" + db + "/_design/r/_view/throws", timeout=30)
        self.assertEqual((answer.status_code, answer.json()["rows"]), (200, [{"key": None, "value": None}]))
        answer = self.session.get(URL + "/" + db + "/_design/r/_view/badsum?group=true", timeout=30)
        self.assertEqual(answer.status_code, 200, answer.text)
        rows = answer.json()["rows"]
        self.assertEqual([row["key"] for row in rows], ["even", "odd"])
        self.assertEqual([(row["value"]["error"], row["value"]["caused_by"]) for row in rows],
                         [("builtin_reduce_error", "even"), ("builtin_reduce_error", "odd")])

    def test_map_functions_require_the_design_documents_library(self):
        db = self.new_db()
        docs = [{"_id": "a", "n": 1}, {"_id": "b", "n": 2}]
        self.assertEqual(self.session.post(URL + "/" + db + "/_bulk_docs", json={"docs": docs}, timeout=30).status_code, 201)
        lib = {"util": "var f = require('./factor'); exports.scale = function (x) { return f.k * x; };",
               "factor": "exports.k = 2;"}
        design = {"views": {"lib": lib, "req": {
            "map": "function(doc) { var u = require('views/lib/util'); emit(u.scale(doc.n), null); }"}}}
        made = self.session.put(URL + "/" + db + "/_design/e", json=design, timeout=30)
        self.assertEqual(made.status_code, 201, made.text)
        rows = self.session.get(URL + "/" + db + "/_design/e/_view/req", timeout=30).json()["rows"]
        self.assertEqual([(row["key"], row["id"]) for row in rows], [(2, "a"), (4, "b")])
        # A new library is a new view: its rows are mapped again.
        design.update(_rev=made.json()["rev"])
        design["views"]["lib"]["factor"] = "exports.k = 10;"
        self.assertEqual(self.session.put(URL + "/" + db + "/_design/e", json=design, timeout=30).status_code, 201)
        rows = self.session.get(URL + "/" + db + "/_design/e/_view/req", timeout=30).json()["rows"]
        self.assertEqual([row["key"] for row in rows], [10, 20])

    def test_database_names_with_every_character_couchdb_allows(self):
        name = "a-b_c$d(e)+f/g" + str(time.monotonic_ns())
        path = URL + "/" + urllib.parse.quote(name, safe="")
        self.assertEqual(self.session.put(path, timeout=30).status_code, 201)
        self.addCleanup(lambda: self.session.delete(path, timeout=30))
        self.assertIn(name, self.session.get(URL + "/_all_dbs", timeout=30).json())
        self.assertEqual(self.session.get(path, timeout=30).json()["db_name"], name)
        made = self.session.put(path + "/doc", json={"n": 1}, timeout=30)
        self.assertEqual(made.status_code, 201, made.text)
        attached = self.session.put(path + "/doc/a.txt", params={"rev": made.json()["rev"]}, data=b"hello",
                                    headers={"Content-Type": "text/plain"}, timeout=30)
        self.assertEqual(attached.status_code, 201, attached.text)
        self.assertEqual(self.session.get(path + "/doc/a.txt", timeout=30).content, b"hello")
        self.assertEqual(self.session.put(path + "/_design/v", json={"views": {"n": {"map": MAP}}}, timeout=30).status_code, 201)
        self.assertEqual([row["id"] for row in self.session.get(path + "/_design/v/_view/n", timeout=30).json()["rows"]], ["doc"])
        # Another database's name is not a prefix of it on disk: "a-b_c$d(e)+f" is a database of its own.
        self.assertEqual(self.session.get(URL + "/" + urllib.parse.quote(name.split("/")[0], safe=""), timeout=30).status_code, 404)
        self.assertEqual(self.session.delete(path, timeout=30).status_code, 200)
        self.assertNotIn(name, self.session.get(URL + "/_all_dbs", timeout=30).json())

    def follow(self, db, count):
        """The IDs written to `db` until `count` arrived (long polls with a deadline)."""
        deadline, since, seen = time.monotonic() + 60, "0", set()
        while len(seen) < count and time.monotonic() < deadline:
            feed = self.session.get(URL + "/" + db + "/_changes", timeout=30,
                                    params={"feed": "longpoll", "since": since, "timeout": "5000"}).json()
            seen.update(change["id"] for change in feed["results"])
            since = feed["last_seq"]
        return seen

    def test_a_replications_selector_chooses_what_is_copied(self):
        source = self.new_db()
        docs = [{"_id": "d%d" % n, "n": n} for n in range(5)]
        self.assertEqual(self.session.post(URL + "/" + source + "/_bulk_docs", json={"docs": docs}, timeout=30).status_code, 201)
        target = self.new_db()
        answer = self.session.post(URL + "/_replicate", timeout=120,
                                   json={"source": source, "target": target, "selector": {"n": {"$lt": 2}}})
        self.assertEqual(answer.status_code, 200, answer.text)
        listed = self.session.get(URL + "/" + target + "/_all_docs", timeout=30).json()
        self.assertEqual([row["id"] for row in listed["rows"]], ["d0", "d1"])
        for extra in ({"doc_ids": ["d3"]}, {"filter": "_selector"}):
            answer = self.session.post(URL + "/_replicate", timeout=30,
                                       json=dict({"source": source, "target": target, "selector": {"n": 1}}, **extra))
            self.assertEqual((answer.status_code, answer.json()["reason"]),
                             (400, "`selector`, `filter` and `doc_ids` fields are mutually exclusive"))
        # A _replicator document: its selector, and create_target making the target.
        made = "t" + str(time.monotonic_ns())
        self.addCleanup(lambda: self.session.delete(URL + "/" + made, timeout=30))
        created = self.session.put(URL + "/_replicator/" + made, timeout=30,
                                   json={"source": source, "target": made, "create_target": True, "selector": {"n": {"$gte": 3}}})
        self.assertIn(created.status_code, (201, 202), created.text)
        self.addCleanup(lambda: self.session.delete(URL + "/_replicator/" + made, timeout=30,
                                                    params={"rev": self.session.get(URL + "/_replicator/" + made, timeout=30).json()["_rev"]}))
        deadline = time.monotonic() + 60
        while self.session.get(URL + "/" + made, timeout=30).status_code == 404 and time.monotonic() < deadline:
            self.session.get(URL + "/_replicator/_changes", timeout=30, params={"feed": "longpoll", "timeout": "500", "since": "now"})
        self.assertEqual(self.follow(made, 2), {"d3", "d4"})
        # A one-shot's end is written into its document as CouchDB 3 writes it.
        deadline, since, state = time.monotonic() + 60, "0", None
        while state is None and time.monotonic() < deadline:
            state = self.session.get(URL + "/_replicator/" + made, timeout=30).json().get("_replication_state")
            since = self.session.get(URL + "/_replicator/_changes", timeout=30,
                                     params={"feed": "longpoll", "timeout": "1000", "since": since}).json()["last_seq"]
        document = self.session.get(URL + "/_replicator/" + made, timeout=30).json()
        self.assertEqual((document["_replication_state"], document["_replication_stats"]["docs_written"]), ("completed", 2), document)
        self.assertIn("T", document["_replication_state_time"])

    def test_a_session_cookie_says_how_long_it_lasts(self):
        answer = requests.post(URL + "/_session", json={"name": self.session.auth[0], "password": self.session.auth[1]}, timeout=30)
        cookie = answer.headers["Set-Cookie"]
        self.assertIn("Max-Age=600", cookie)
        self.assertIn("Expires=", cookie)
        self.assertIn("GMT", cookie)

    def test_stale_revisions_from_elsewhere_are_conflicts(self):
        db = self.new_db()
        self.assertEqual(self.session.put(URL + "/" + db + "/d1", json={"a": 1}, timeout=30).status_code, 201)
        answer = self.session.put(URL + "/" + db + "/d1", json={"_rev": "1-abc", "a": 3}, timeout=30)
        self.assertEqual((answer.status_code, answer.json()["error"]), (409, "conflict"))
        answer = self.session.delete(URL + "/" + db + "/d1", params={"rev": "1-abc"}, timeout=30)
        self.assertEqual((answer.status_code, answer.json()["error"]), (409, "conflict"))
        answer = self.session.post(URL + "/" + db + "/_bulk_docs", json={"docs": [{"_id": "d1", "_rev": "1-abc", "a": 4}]}, timeout=30)
        self.assertEqual(answer.json(), [{"id": "d1", "error": "conflict", "reason": "Document update conflict."}])
        answer = self.session.get(URL + "/" + db + "/d1", params={"open_revs": '["9-zz"]'}, timeout=30)
        self.assertEqual((answer.status_code, answer.json()), (200, [{"missing": "9-zz"}]))
        answer = self.session.post(URL + "/" + db + "/_bulk_get", json={"docs": [{"id": "d1", "rev": "9-nope"}]}, timeout=30)
        self.assertEqual(answer.json()["results"][0]["docs"][0]["error"]["error"], "not_found")
        # A new document written deleted is a tombstone (a second delete without its _rev is not).
        made = self.session.put(URL + "/" + db + "/nd", json={"_deleted": True}, timeout=30)
        self.assertEqual((made.status_code, made.json()["rev"][:2]), (201, "1-"), made.text)
        self.assertEqual(self.session.get(URL + "/" + db + "/nd", timeout=30).json(), {"error": "not_found", "reason": "deleted"})
        self.assertEqual(self.session.put(URL + "/" + db + "/nd", json={"_deleted": True}, timeout=30).status_code, 404)
        bulk = self.session.post(URL + "/" + db + "/_bulk_docs", json={"docs": [{"_id": "nd2", "_deleted": True}, {"_id": "nd"}]},
                                 timeout=30).json()
        self.assertEqual((bulk[0]["id"], bulk[0]["rev"][:2], bulk[1]["id"], bulk[1]["rev"][:2]), ("nd2", "1-", "nd", "2-"), bulk)
        answer = self.session.put(URL + "/" + db + "/b?batch=ok", json={"x": 1}, timeout=30)
        self.assertEqual((answer.status_code, answer.json()), (202, {"ok": True, "id": "b"}))

    def test_dbs_info_group_level_zero_and_stats_of_arrays(self):
        db = self.view_db()
        answer = self.session.post(URL + "/_dbs_info", json={"keys": [db, "nosuchdb"]}, timeout=30)
        self.assertEqual(answer.status_code, 200, answer.text)
        self.assertEqual(answer.json()[0]["info"]["doc_count"], 4)
        self.assertEqual(answer.json()[1], {"key": "nosuchdb", "error": "not_found"})
        rows = self.session.get(URL + "/" + db + "/_design/v/_view/by_n?group_level=0", timeout=30).json()["rows"]
        self.assertEqual(rows, [{"key": None, "value": 3}])
        design = {"views": {"st": {"map": "function(doc) { if (doc.n) emit(null, [doc.n, 1]); }", "reduce": "_stats"}}}
        self.assertEqual(self.session.put(URL + "/" + db + "/_design/s", json=design, timeout=30).status_code, 201)
        value = self.session.get(URL + "/" + db + "/_design/s/_view/st", timeout=30).json()["rows"][0]["value"]
        self.assertEqual(value, [{"sum": 6, "count": 3, "min": 1, "max": 3, "sumsqr": 14},
                                 {"sum": 3, "count": 3, "min": 1, "max": 1, "sumsqr": 3}])

    def test_a_malformed_session_cookie_is_refused(self):
        for cookie in ("bogus-cookie", base64.urlsafe_b64encode(b"just:two").decode().rstrip("=")):
            answer = requests.get(URL + "/", cookies={"AuthSession": cookie}, timeout=30)
            self.assertEqual((answer.status_code, answer.json()),
                             (400, {"error": "bad_request", "reason": "Malformed AuthSession cookie. Please clear your cookies."}))
        # One well formed but not this server's counts as none.
        forged = base64.urlsafe_b64encode(b"admin:6560F000:00ff").decode().rstrip("=")
        self.assertEqual(requests.get(URL + "/", cookies={"AuthSession": forged}, timeout=30).status_code, 200)


if __name__ == "__main__":
    unittest.main()
