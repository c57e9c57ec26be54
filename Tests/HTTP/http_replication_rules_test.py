#!/usr/bin/env python3
"""What a replicator such as PouchDB relies on from CouchDB's HTTP API, in CouchDB's words.

Environment: SOFA_HTTP_URL, SOFA_ADMIN_NAME, SOFA_ADMIN_PASSWORD (as couch_client_test.py).

* `_all_docs?include_docs=true&conflicts=true` lists each document's `_conflicts` (a replicator
  that misses only a generation-1 revision takes the document from `_all_docs` and trusts it
  unless `_conflicts` says otherwise);
* `_bulk_get?latest=true` answers the newest leaf descending from the revision asked for;
* `_changes` of a database that does not exist, or that the client may not read, is answered
  with its status and error body (404, 401, 403), for every feed, before any row;
* `_bulk_docs` from a member who is not the database's admin refuses each design document in
  its place (`unauthorized`) and writes the others.
"""

import unittest
import uuid

import requests

from http_support import URL, CouchTestCase, rev


class ReplicationRulesTests(CouchTestCase):
    def test_all_docs_lists_conflicts_with_the_documents(self):
        db = self.new_db()
        first, second = self.conflicted(db, "c")
        self.session.put(URL + "/" + db + "/plain", json={"v": 1}, timeout=30)
        keyed = self.session.post(URL + "/" + db + "/_all_docs", params={"include_docs": "true", "conflicts": "true"},
                                  json={"keys": ["c", "plain"]}, timeout=30).json()
        self.assertEqual(keyed["rows"][0]["doc"]["_rev"], second)
        self.assertEqual(keyed["rows"][0]["doc"]["_conflicts"], [first])
        self.assertNotIn("_conflicts", keyed["rows"][1]["doc"])
        listed = self.session.get(URL + "/" + db + "/_all_docs", params={"include_docs": "true", "conflicts": "true"},
                                  timeout=30).json()
        self.assertEqual([(row["id"], row["doc"].get("_conflicts")) for row in listed["rows"]], [("c", [first]), ("plain", None)])
        without = self.session.get(URL + "/" + db + "/_all_docs", params={"include_docs": "true"}, timeout=30).json()
        self.assertNotIn("_conflicts", without["rows"][0]["doc"])

    def test_bulk_get_latest_answers_the_newest_leaf(self):
        db = self.new_db()
        one = self.session.put(URL + "/" + db + "/v", json={"n": 1}, timeout=30).json()["rev"]
        two = self.session.put(URL + "/" + db + "/v", json={"_rev": one, "n": 2}, timeout=30).json()["rev"]
        asked = {"docs": [{"id": "v", "rev": one}]}
        latest = self.session.post(URL + "/" + db + "/_bulk_get", params={"revs": "true", "latest": "true"},
                                   json=asked, timeout=30).json()
        doc = latest["results"][0]["docs"][0]["ok"]
        self.assertEqual((doc["_rev"], doc["n"], doc["_revisions"]["start"]), (two, 2, 2))
        # A losing leaf is its own latest; without `latest` the revision asked for is answered.
        base = rev(1)
        low, high = sorted([rev(2), rev(2)])
        self.insert(db, "w", low, [base], side="low")
        self.insert(db, "w", high, [base], side="high")
        leaves = self.session.post(URL + "/" + db + "/_bulk_get", params={"revs": "true", "latest": "true"},
                                   json={"docs": [{"id": "w", "rev": low}, {"id": "w", "rev": base}]}, timeout=30).json()
        # Each leaf descending from the revision, the winner first.
        self.assertEqual([[d["ok"]["_rev"] for d in r["docs"]] for r in leaves["results"]], [[low], [high, low]])
        plain = self.session.post(URL + "/" + db + "/_bulk_get", params={"revs": "true"}, json=asked, timeout=30).json()
        self.assertEqual(plain["results"][0]["docs"][0]["ok"]["_rev"], one)

    def test_changes_errors_come_before_the_feed(self):
        missing = "r" + uuid.uuid4().hex
        db = self.new_db()
        name, password = self.new_member(db)
        self.session.put(URL + "/" + db + "/d", json={"v": 1}, timeout=30)
        outsider = self.new_member(self.new_db())
        for feed in ("normal", "longpoll", "continuous"):
            params = {"feed": feed, "timeout": "1000"}
            gone = self.session.get(URL + "/" + missing + "/_changes", params=params, timeout=30)
            self.assertEqual((gone.status_code, gone.json()["error"]), (404, "not_found"), feed)
            anonymous = requests.get(URL + "/" + db + "/_changes", params=params, timeout=30)
            self.assertEqual((anonymous.status_code, anonymous.json()["error"]), (401, "unauthorized"), feed)
            refused = requests.get(URL + "/" + db + "/_changes", params=params, auth=outsider, timeout=30)
            self.assertEqual((refused.status_code, refused.json()["error"]), (403, "forbidden"), feed)
            member = requests.get(URL + "/" + db + "/_changes", params=params, auth=(name, password), timeout=30)
            self.assertEqual(member.status_code, 200, feed)
            self.assertIn('"id":"d"', member.text, feed)

    def test_bulk_docs_refuses_design_documents_one_by_one(self):
        db = self.new_db()
        name, password = self.new_member(db)
        answer = requests.post(URL + "/" + db + "/_bulk_docs", auth=(name, password), timeout=30, json={"docs": [
            {"_id": "plain1", "v": 1}, {"_id": "_design/z", "views": {}}, {"_id": "plain2", "v": 2}]})
        self.assertEqual(answer.status_code, 201, answer.text)
        results = answer.json()
        self.assertEqual([r.get("id") for r in results], ["plain1", "_design/z", "plain2"])
        self.assertTrue(results[0]["ok"] and results[2]["ok"], results)
        self.assertEqual((results[1]["error"], results[1]["reason"]), ("unauthorized", "You are not a db or server admin."))
        self.assertEqual(self.session.get(URL + "/" + db + "/plain2", timeout=30).json()["v"], 2)
        self.assertEqual(self.session.get(URL + "/" + db + "/_design/z", timeout=30).status_code, 404)
        # Only design documents: each refused in its place for a member; a non-member is refused whole.
        only = requests.post(URL + "/" + db + "/_bulk_docs", auth=(name, password), timeout=30,
                             json={"docs": [{"_id": "_design/y", "views": {}}]})
        self.assertEqual((only.status_code, only.json()[0]["error"]), (201, "unauthorized"), only.text)
        outsider = self.new_member(self.new_db())
        refused = requests.post(URL + "/" + db + "/_bulk_docs", auth=outsider, timeout=30,
                                json={"docs": [{"_id": "_design/y", "views": {}}, {"_id": "plain3"}]})
        self.assertEqual((refused.status_code, refused.json()["error"]), (403, "forbidden"), refused.text)
        # The database's admin writes it.
        admin = self.session.post(URL + "/" + db + "/_bulk_docs", json={"docs": [{"_id": "_design/z", "views": {}}]}, timeout=30)
        self.assertTrue(admin.json()[0]["ok"], admin.text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
