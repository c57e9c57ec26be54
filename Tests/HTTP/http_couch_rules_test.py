#!/usr/bin/env python3
"""CouchDB's rules that its own test suite checks, beyond replication: changes and listing
parameters, revisions named twice, bad attachment data, `_users` documents, server listings
and Mango (views and design documents are in http_couch_view_rules_test.py).

Environment: SOFA_HTTP_URL, SOFA_ADMIN_NAME, SOFA_ADMIN_PASSWORD (as couch_client_test.py).
"""

import json
import unittest
import uuid

from http_support import URL, CouchTestCase


class CouchRulesTests(CouchTestCase):
    """Smaller rules of CouchDB's own tests: parameters, revisions named twice, bad input."""

    def test_changes_parameters(self):
        db = self.new_db()
        self.session.put(URL + "/" + db + "/d", json={"v": 1}, timeout=30)
        for value, reason in (("-1", "The heartbeat value should be a positive integer (in milliseconds)."),
                              ("abc", "Invalid heartbeat value. Expecting a positive integer value (in milliseconds).")):
            answer = self.session.get(URL + "/" + db + "/_changes", params={"feed": "continuous", "heartbeat": value}, timeout=30)
            self.assertEqual((answer.status_code, answer.json()), (400, {"error": "bad_request", "reason": reason}))
        # A sequence past the largest the filtered feeds can ask for answers nothing after it.
        for name, extra in (("_selector", {"selector": {"v": 1}}), ("_sofa_where", {"where": "v = 1"})):
            far = self.session.post(URL + "/" + db + "/_changes", params={"filter": name, "since": "18446744073709551615"},
                                    json=extra, timeout=30)
            self.assertEqual((far.status_code, far.json()["results"]), (200, []), name)
        live = self.session.get(URL + "/" + db + "/_changes", params={"feed": "live", "timeout": "100"}, timeout=30)
        self.assertEqual(live.status_code, 200)
        self.assertEqual(json.loads(live.text.splitlines()[0])["id"], "d")

    def test_json_that_does_not_parse_says_why(self):
        db = self.new_db()
        for body, why in ((b"[" * 600 + b"]" * 600, "nesting deeper than 512"), (b'{"a":1e400}', "number out of range"),
                          (b'{"a":"x\x00y"}', "control character in string")):
            answer = self.session.put(URL + "/" + db + "/d", data=body, headers={"Content-Type": "application/json"}, timeout=30)
            self.assertEqual((answer.status_code, answer.json()["error"]), (400, "bad_request"))
            self.assertTrue(answer.json()["reason"].startswith("invalid UTF-8 JSON: "), answer.text)
            self.assertIn(why, answer.json()["reason"])

    def test_changes_with_documents_list_conflicts_and_inline_attachments(self):
        db = self.new_db()
        first, second = self.conflicted(db, "c")
        self.session.put(URL + "/" + db + "/att", timeout=30, json={
            "_attachments": {"a.txt": {"content_type": "text/plain", "data": "aGVsbG8="}}})
        feed = self.session.get(URL + "/" + db + "/_changes", timeout=30,
                                params={"include_docs": "true", "conflicts": "true", "attachments": "true"}).json()
        docs = {row["id"]: row["doc"] for row in feed["results"]}
        self.assertEqual((docs["c"]["_rev"], docs["c"]["_conflicts"]), (second, [first]))
        self.assertEqual([row["changes"] for row in feed["results"] if row["id"] == "c"], [[{"rev": second}]])
        self.assertEqual(docs["att"]["_attachments"]["a.txt"]["data"], "aGVsbG8=")
        plain = self.session.get(URL + "/" + db + "/_changes", params={"include_docs": "true"}, timeout=30).json()
        plain_docs = {row["id"]: row["doc"] for row in plain["results"]}
        self.assertNotIn("_conflicts", plain_docs["c"])
        self.assertTrue(plain_docs["att"]["_attachments"]["a.txt"]["stub"])
        leaves = self.session.get(URL + "/" + db + "/_changes", params={"style": "all_docs"}, timeout=30).json()
        self.assertEqual(sorted(c["rev"] for row in leaves["results"] if row["id"] == "c" for c in row["changes"]), [first, second])

    def test_all_docs_keys_with_limit_skip_and_descending(self):
        db = self.new_db()
        for doc_id in ("a", "b", "c"):
            self.session.put(URL + "/" + db + "/" + doc_id, json={}, timeout=30)
        def keyed(params, body):
            answer = self.session.post(URL + "/" + db + "/_all_docs", params=params, json=body, timeout=30)
            return [row.get("key") for row in answer.json()["rows"]]
        self.assertEqual(keyed({}, {"keys": ["c", "a", "b"], "limit": 2}), ["c", "a"])
        self.assertEqual(keyed({"limit": "1"}, {"keys": ["c", "a"], "limit": 2}), ["c"])
        self.assertEqual(keyed({"skip": "1"}, {"keys": ["c", "a", "b"]}), ["a", "b"])
        self.assertEqual(keyed({"descending": "true"}, {"keys": ["c", "a", "b"]}), ["b", "a", "c"])
        bad = self.session.post(URL + "/" + db + "/_all_docs", json={"keys": "a"}, timeout=30)
        self.assertEqual((bad.status_code, bad.json()["reason"]), (400, "`keys` body member must be an array."))

    def test_revisions_named_twice_must_agree(self):
        db = self.new_db()
        rev = self.session.put(URL + "/" + db + "/d", json={"v": 1}, timeout=30).json()["rev"]
        other = "1-" + "0" * 32
        body = self.session.put(URL + "/" + db + "/d", params={"rev": other}, json={"_rev": rev, "v": 2}, timeout=30)
        self.assertEqual((body.status_code, body.json()["reason"]),
                         (400, "Document rev from request body and query string have different values"))
        etag = self.session.put(URL + "/" + db + "/d", headers={"If-Match": '"%s"' % other}, json={"_rev": rev, "v": 2}, timeout=30)
        self.assertEqual((etag.status_code, etag.json()["reason"]), (400, "Document rev and etag have different values"))
        self.assertEqual(self.session.put(URL + "/" + db + "/d", headers={"If-Match": '"%s"' % rev}, json={"v": 2},
                                          timeout=30).status_code, 201)
        missing = self.session.delete(URL + "/" + db + "/nothing", timeout=30)
        self.assertEqual((missing.status_code, missing.json()["error"]), (404, "not_found"))
        without = self.session.delete(URL + "/" + db + "/d", timeout=30)
        self.assertEqual((without.status_code, without.json()["error"]), (409, "conflict"))

    def test_attachment_data_must_be_base64(self):
        db = self.new_db()
        bad = self.session.put(URL + "/" + db + "/bin", timeout=30, json={
            "_attachments": {"foo.txt": {"content_type": "text/plain", "data": "notBase64Encoded="}}})
        self.assertEqual((bad.status_code, bad.json()["error"]), (400, "bad_request"))
        wrapped = self.session.put(URL + "/" + db + "/bin", timeout=30, json={
            "_attachments": {"foo.txt": {"content_type": "text/plain", "data": "VGhpcyBpcyBh\nIGJhc2U2NCBlbmNvZGVkIHRleHQ="}}})
        self.assertEqual(wrapped.status_code, 201, wrapped.text)
        self.assertEqual(self.session.get(URL + "/" + db + "/bin/foo.txt", timeout=30).content, b"This is a base64 encoded text")

    def test_server_listings_and_session(self):
        names = sorted(self.new_db() for _ in range(3))
        listed = self.session.get(URL + "/_all_dbs", params={"start_key": json.dumps(names[1]), "end_key": json.dumps(names[2])},
                                  timeout=30).json()
        # (Other databases may fall between these random names: only the bounds are asserted.)
        self.assertEqual([n for n in listed if n in names], names[1:])
        self.assertTrue(all(names[1] <= n <= names[2] for n in listed), listed)
        backwards = self.session.get(URL + "/_all_dbs", timeout=30, params={
            "startkey": json.dumps(names[2]), "endkey": json.dumps(names[1]), "descending": "true"}).json()
        self.assertEqual([n for n in backwards if n in names], [names[2], names[1]])
        self.assertEqual(backwards, sorted(backwards, reverse=True))
        gone = self.session.post(URL + "/r" + uuid.uuid4().hex + "/_ensure_full_commit", json={}, timeout=30)
        self.assertEqual(gone.status_code, 404)
        session = self.session.get(URL + "/_session", timeout=30).json()
        self.assertEqual(session["info"]["authentication_db"], "_users")

    def test_user_documents_follow_couchdbs_rules(self):
        if self.session.head(URL + "/_users", timeout=30).status_code == 404:
            self.session.put(URL + "/_users", timeout=30)
        name = "u" + uuid.uuid4().hex
        cases = [
            ({"name": name, "roles": [], "password": "p"}, "doc.type must be user"),
            ({"type": "user", "roles": [], "password": "p"}, "doc.name is required"),
            ({"type": "user", "name": name, "password": "p"}, "doc.roles must exist"),
            ({"type": "user", "name": name, "roles": "x", "password": "p"}, "doc.roles must be an array"),
            ({"type": "user", "name": name, "roles": [1], "password": "p"}, "doc.roles can only contain strings"),
            ({"type": "user", "name": name + "x", "roles": [], "password": "p"}, "Doc ID must be of the form org.couchdb.user:name"),
            ({"type": "user", "name": name, "roles": ["_admin"], "password": "p"}, "No system roles (starting with underscore) in users db."),
        ]
        for body, reason in cases:
            answer = self.session.put(URL + "/_users/org.couchdb.user:" + name, json=body, timeout=30)
            self.assertEqual((answer.status_code, answer.json()), (403, {"error": "forbidden", "reason": reason}), body)
        colon = self.session.put(URL + "/_users/org.couchdb.user:joe:erlang", timeout=30,
                                 json={"type": "user", "name": "joe:erlang", "roles": [], "password": "p"})
        self.assertEqual((colon.status_code, colon.json()["reason"]), (403, "Character `:` is not allowed in usernames."))


class MangoRulesTests(CouchTestCase):
    """Mango as CouchDB's own Mango tests (src/mango/test) use it."""

    def mango_db(self):
        db = self.new_db()
        docs = [
            {"_id": "u0", "name": "Ann", "age": 22, "favorites": ["C", "Ruby", "Python", "C"], "prefs": {"x": 1}, "empty": {},
             "dot.key": "dotted"},
            {"_id": "u1", "name": "Bo", "age": 30, "favorites": ["Erlang"], "prefs": {"y": 2}, "empty": {"a": 1}, "scores": {"2020": 9}},
            {"_id": "u2", "name": "Cy", "age": 22, "favorites": "Python"},
            {"_id": "_design/d", "views": {}},
        ]
        self.assertEqual(self.session.post(URL + "/" + db + "/_bulk_docs", json={"docs": docs}, timeout=30).status_code, 201)
        return db

    def find(self, db, body):
        return self.session.post(URL + "/" + db + "/_find", json=body, timeout=30)

    def ids(self, db, selector, **more):
        answer = self.find(db, dict(selector=selector, **more))
        self.assertEqual(answer.status_code, 200, answer.text)
        return sorted(doc["_id"] for doc in answer.json()["docs"])

    def test_selectors(self):
        db = self.mango_db()
        self.assertEqual(self.ids(db, {}), ["u0", "u1", "u2"])  # design documents are not found
        self.assertEqual(self.ids(db, {"favorites": {"$in": ["Ruby", "Erlang"]}}), ["u0", "u1"])
        self.assertEqual(self.ids(db, {"favorites": {"$nin": ["Ruby", "Erlang"]}}), ["u2"])
        self.assertEqual(self.ids(db, {"favorites.3": "C"}), ["u0"])
        self.assertEqual(self.ids(db, {"scores.2020": {"$gt": 5}}), ["u1"])  # a member named with digits
        self.assertEqual(self.ids(db, {"prefs": {"$in": [1]}}), [])  # $in looks inside arrays, not objects
        self.assertEqual(self.ids(db, {"empty": {}}), ["u0"])
        self.assertEqual(self.ids(db, {"age": 22, "$or": []}), ["u0", "u2"])
        self.assertEqual(self.ids(db, {"$or": []}), [])
        self.assertEqual(self.ids(db, {"name": {"$beginsWith": "A"}}), ["u0"])
        self.assertEqual(self.ids(db, {"prefs": {"$keyMapMatch": {"$eq": "y"}}}), ["u1"])
        self.assertEqual(self.ids(db, {"age": {"$size": 0}}), [])
        for bad in ({"name": {"$regex": "("}}, {"favorites": {"$elemMatch": 1}}):
            self.assertEqual(self.find(db, {"selector": bad}).status_code, 400, bad)
        self.assertEqual(self.find(db, {"selector": {"_id": "u2"}, "fields": []}).json()["docs"][0]["favorites"], "Python")
        fields = self.find(db, {"selector": {"_id": "u0"}, "fields": ["dot\\.key", "prefs.x"]}).json()["docs"]
        self.assertEqual(fields, [{"dot.key": "dotted", "prefs": {"x": 1}}])

    def test_ranges_follow_couchdbs_collation(self):
        db = self.new_db()
        values = {"n": None, "f": False, "t": True, "z": 0, "o": 1, "A": "A", "a": "a", "b": "b", "l": [1], "d": {"x": 1}}
        docs = [{"_id": key, "v": value} for key, value in values.items()] + [{"_id": "missing"}]
        self.session.post(URL + "/" + db + "/_bulk_docs", json={"docs": docs}, timeout=30)
        cases = [
            ({"$gt": None}, "ftzoAabld"), ({"$gte": None}, "nftzoAabld"), ({"$lt": None}, ""), ({"$lte": None}, "n"),
            ({"$gt": False}, "tzoAabld"), ({"$gte": False}, "ftzoAabld"), ({"$lt": True}, "nf"), ({"$lte": True}, "nft"),
            ({"$lt": 1}, "nftz"), ({"$lte": 1}, "nftzo"), ({"$gt": 0}, "oAabld"), ({"$gte": 1}, "oAabld"),
            ({"$lt": "b"}, "nftzoAa"), ({"$gt": "a"}, "bld"), ({"$gt": [0]}, "ld"), ({"$lt": {"x": 2}}, "nftzoAabld"),
        ]
        for condition, expected in cases:
            self.assertEqual(self.ids(db, {"v": condition}), sorted(expected), condition)

    def test_find_options(self):
        db = self.mango_db()
        stats = self.find(db, {"selector": {"age": 22}, "execution_stats": True}).json()
        self.assertEqual((stats["execution_stats"]["results_returned"], stats["execution_stats"]["total_keys_examined"]), (2, 0))
        self.assertGreater(stats["execution_stats"]["execution_time_ms"], 0)
        bad = self.find(db, {"selector": {}, "bookmark": "bad-bookmark"})
        self.assertEqual((bad.status_code, bad.json()), (400, {"error": "invalid_bookmark", "reason": 'Invalid bookmark value: "bad-bookmark"'}))
        for body in ({"selector": {}, "r": [1]}, {"selector": {}, "conflicts": [True]}):
            self.assertEqual(self.find(db, body).status_code, 400, body)

    def test_index_choice_warnings_and_sorts(self):
        db = self.mango_db()
        url = URL + "/" + db + "/_index"
        scan = self.find(db, {"selector": {"age": 22}}).json()
        self.assertEqual(scan["warning"], "No matching index found, create an index to optimize query time.")
        for ddoc in ("zzz", "aaa"):
            self.session.post(url, json={"index": {"fields": ["age"]}, "ddoc": ddoc, "name": "byage"}, timeout=30)
        self.session.post(url, json={"index": {"fields": ["age", "name"]}, "ddoc": "both", "name": "both"}, timeout=30)
        def explained(body):
            return self.session.post(URL + "/" + db + "/_explain", json=body, timeout=30).json()["index"]
        self.assertEqual(explained({"selector": {"age": 22}})["ddoc"], "_design/aaa")  # the first by name
        self.assertEqual(explained({"selector": {"age": 22, "name": "Ann"}})["ddoc"], "_design/both")  # the most fields
        self.assertEqual(explained({"selector": {"age": 22, "name": "Ann"}, "use_index": "zzz"})["ddoc"], "_design/zzz")
        self.assertEqual(explained({"selector": {"name": "Ann"}})["name"], "_all_docs")
        self.assertNotIn("warning", self.find(db, {"selector": {"age": 22}}).json())
        unusable = self.find(db, {"selector": {"name": "Ann"}, "use_index": "_design/aaa"}).json()
        self.assertIn("_design/aaa was not used because it does not contain a valid index for this query.", unusable["warning"])
        sorted_ids = [d["_id"] for d in self.find(db, {"selector": {"age": {"$gt": 0}}, "sort": [{"age": "desc"}]}).json()["docs"]]
        self.assertEqual(sorted_ids[0], "u1")
        for sort in ([{"name": "asc"}], ["name", "age"]):
            refused = self.find(db, {"selector": {"age": {"$gt": 0}}, "sort": sort})
            self.assertEqual((refused.status_code, refused.json()["error"]), (400, "no_usable_index"), sort)
        self.assertEqual(self.find(db, {"selector": {"name": "Ann"}, "sort": ["_id"]}).status_code, 200)
        # The sort's fields need no constraint; fields before them pinned to one value may lead.
        self.session.post(url, json={"index": {"fields": ["name"]}, "ddoc": "byname", "name": "byname"}, timeout=30)
        by_name = self.find(db, {"selector": {"age": 22}, "sort": ["name"]})
        self.assertEqual([d["_id"] for d in by_name.json()["docs"]], ["u0", "u2"], by_name.text)
        self.assertEqual(explained({"selector": {"age": 22}, "sort": ["name"]})["name"], "both")

    def test_partial_indexes(self):
        db = self.mango_db()
        url = URL + "/" + db + "/_index"
        made = self.session.post(url, timeout=30, json={"index": {"fields": ["age"], "partial_filter_selector": {"name": {"$ne": "Bo"}}},
                                                        "ddoc": "Selected", "name": "Selected"})
        self.assertEqual(made.json()["result"], "created", made.text)
        listed = [i for i in self.session.get(url, timeout=30).json()["indexes"] if i["name"] == "Selected"]
        self.assertEqual(listed[0]["def"]["partial_filter_selector"], {"name": {"$ne": "Bo"}})
        everyone = {"age": {"$gt": 0}}
        self.assertEqual(self.ids(db, everyone), ["u0", "u1", "u2"])  # not named: not the partial index
        self.assertEqual(self.ids(db, everyone, use_index="Selected"), ["u0", "u2"])
        explained = self.session.post(URL + "/" + db + "/_explain", json={"selector": everyone}, timeout=30).json()
        self.assertEqual(explained["index"]["name"], "_all_docs")
        self.assertEqual(self.session.post(url, json={"index": {"fields": ["a"], "partial_filter_selector": 1}}, timeout=30).status_code, 400)
        self.assertEqual(self.session.delete(url + "/_design/Selected/json/Selected", timeout=30).status_code, 200)
        local = self.session.get(URL + "/" + db + "/_local_docs", timeout=30).json()["rows"]
        self.assertEqual([r["id"] for r in local if "partial" in r["id"]], [])

    def test_index_listing_and_creation(self):
        db = self.mango_db()
        url = URL + "/" + db + "/_index"
        for ddoc in ("aaa", "bbb"):
            made = self.session.post(url, json={"index": {"fields": ["name"]}, "ddoc": ddoc, "name": "byname"}, timeout=30).json()
            self.assertEqual((made["result"], made["id"], made["name"]), ("created", "_design/" + ddoc, "byname"))
        again = self.session.post(url, json={"index": {"fields": ["name"]}, "ddoc": "aaa", "name": "byname"}, timeout=30).json()
        self.assertEqual(again["result"], "exists")
        listed = self.session.get(url, timeout=30).json()
        self.assertEqual([(i["ddoc"], i["name"], i["build_status"]) for i in listed["indexes"]],
                         [(None, "_all_docs", "ready"), ("_design/aaa", "byname", "ready"), ("_design/bbb", "byname", "ready")])
        self.assertEqual(len(self.session.get(url, params={"skip": "1", "limit": "1"}, timeout=30).json()["indexes"]), 1)
        for params in ({"skip": "-1"}, {"limit": "0"}):
            self.assertEqual(self.session.get(url, params=params, timeout=30).status_code, 400, params)
        self.assertEqual(self.session.get(url + "/foo", timeout=30).status_code, 405)
        for body in ({"index": {"fields": [{"foo": 2}]}}, {"index": {"fields": [{"foo": "asc"}, {"bar": "desc"}]}},
                     {"index": {"fields": [""]}}, {"index": {"fields": ["a"]}, "type": True}, {"index": {"fields": ["a"]}, "name": 1},
                     {"index": {"fields": ["a"]}, "ddoc": ""}, {"index": {"fields": ["a"], "selector": {}}},
                     {"index": {"fields": ["a"]}, "name": "a%b"}, {"index": {"fields": ["a"]}, "ddoc": "a%b"}):
            self.assertEqual(self.session.post(url, json=body, timeout=30).status_code, 400, body)
        deleted = self.session.post(url + "/_bulk_delete", json={"docids": ["_design/bbb", "_design/nothing"]}, timeout=30).json()
        self.assertEqual(deleted, {"success": [{"id": "_design/bbb", "ok": True}], "fail": [{"id": "_design/nothing", "error": "not_found"}]})
        self.assertEqual(self.session.delete(url + "/_design/aaa/not_a_real_type/byname", timeout=30).status_code, 404)
        self.assertEqual(self.session.delete(url + "/_design/aaa/json/byname", timeout=30).status_code, 200)
        self.assertEqual([i["ddoc"] for i in self.session.get(url, timeout=30).json()["indexes"]], [None])


if __name__ == "__main__":
    unittest.main(verbosity=2)
