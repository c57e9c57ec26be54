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
  its place (`unauthorized`) and writes the others;
* a conflict is resolved by deleting (or updating) its losing revisions, by their `rev`;
* `/_replicate` (CouchDB's replication tests): missing ends are 404 `db_not_found`,
  `create_target` creates the target, an empty `doc_ids` replicates nothing, the answer has its
  `history` entry and counts the revisions the target refused, and a replication is cancelled by
  its ID;
* a listing a user may not read is refused with its status, not broken off after a 200.
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


    def test_a_conflict_is_resolved_by_deleting_its_losing_revisions(self):
        db = self.new_db()
        for how in ["DELETE", "_bulk_docs", "PUT"]:
            doc_id = "c-" + how
            loser, winner = self.conflicted(db, doc_id)
            doc = URL + "/" + db + "/" + doc_id
            self.assertEqual(self.session.get(doc + "?conflicts=true", timeout=30).json()["_conflicts"], [loser])
            if how == "DELETE":
                answer = self.session.delete(doc, params={"rev": loser}, timeout=30)
            elif how == "_bulk_docs":
                answer = self.session.post(URL + "/" + db + "/_bulk_docs", timeout=30,
                                           json={"docs": [{"_id": doc_id, "_rev": loser, "_deleted": True}]})
                self.assertNotIn("error", answer.json()[0], answer.text)
            else:
                # Merged into the winner's branch, the loser deleted, in one bulk.
                answer = self.session.post(URL + "/" + db + "/_bulk_docs", timeout=30, json={"docs": [
                    {"_id": doc_id, "_rev": winner, "v": "merged"}, {"_id": doc_id, "_rev": loser, "_deleted": True}]})
                self.assertEqual([row.get("error") for row in answer.json()], [None, None], answer.text)
            self.assertIn(answer.status_code, (200, 201), answer.text)
            resolved = self.session.get(doc + "?conflicts=true", timeout=30).json()
            self.assertNotIn("_conflicts", resolved, how)
            self.assertEqual(resolved["v"], "merged" if how == "PUT" else "high", how)
            # A revision that is no longer a leaf cannot be written on.
            stale = self.session.put(doc, params={"rev": loser}, json={"v": "late"}, timeout=30)
            self.assertEqual(stale.status_code, 409, how)

    def test_validation_sees_the_branch_a_write_continues(self):
        db = self.new_db()
        alice, alice_pw = self.new_member(db)
        bob, bob_pw = self.new_member(self.new_db())
        security = {"admins": {"names": [], "roles": []}, "members": {"names": [alice, bob], "roles": []}}
        self.assertEqual(self.session.put(URL + "/" + db + "/_security", json=security, timeout=30).status_code, 200)
        self.session.put(URL + "/" + db + "/_design/v", timeout=30, json={"validate_doc_update":
            "function(newDoc, oldDoc, userCtx) { if (userCtx.roles.indexOf('_admin') !== -1) { return; }"
            " if (oldDoc && oldDoc.owner !== userCtx.name) { throw({forbidden: 'not yours'}); } }"})
        loser, winner = sorted([rev(1), rev(1)])
        self.insert(db, "c", loser, owner=bob)
        self.insert(db, "c", winner, owner=alice)
        doc = URL + "/" + db + "/c"
        # oldDoc is the leaf the write names: bob's own losing branch, not alice's winner.
        mine = requests.put(doc, json={"_rev": loser, "owner": bob, "v": 2}, auth=(bob, bob_pw), timeout=30)
        self.assertEqual(mine.status_code, 201, mine.text)
        theirs = requests.put(doc, json={"_rev": winner, "owner": bob}, auth=(bob, bob_pw), timeout=30)
        self.assertEqual((theirs.status_code, theirs.json()["reason"]), (403, "not yours"))

    def test_replicate_checks_its_ends_and_answers_in_couchdbs_shape(self):
        source, target = self.new_db(), self.new_db()
        replicate = lambda **body: self.session.post(URL + "/_replicate", json=body, timeout=120)
        missing = "r" + uuid.uuid4().hex
        for body in [{"source": missing, "target": target}, {"source": source, "target": missing}]:
            answer = replicate(**body)
            self.assertEqual((answer.status_code, answer.json()["error"]), (404, "db_not_found"), body)
        self.assertEqual(self.session.get(URL + "/" + missing, timeout=30).status_code, 404)
        for n in range(3):
            self.session.put(URL + "/" + source + "/d%d" % n, json={"n": n}, timeout=30)
        # No document named: nothing is replicated.
        nothing = replicate(source=source, target=target, doc_ids=[])
        self.assertEqual((nothing.status_code, nothing.json().get("no_changes")), (200, True), nothing.text)
        self.assertEqual(self.session.get(URL + "/" + target, timeout=30).json()["doc_count"], 0)
        # A validation function on the target refuses one document: counted, the rest written.
        self.session.put(URL + "/" + target + "/_design/v", timeout=30, json={
            "validate_doc_update": "function(doc) { if (doc.n === 1) { throw({forbidden: 'no ones'}); } }"})
        answer = replicate(source=source, target=target)
        self.assertEqual(answer.status_code, 200, answer.text)
        result = answer.json()
        self.assertEqual((result["docs_written"], result["doc_write_failures"]), (2, 1), result)
        self.assertEqual(len(result["history"]), 1)
        entry = result["history"][0]
        self.assertEqual((entry["docs_written"], entry["doc_write_failures"], entry["session_id"]), (2, 1, result["session_id"]))
        for field in ["start_time", "end_time", "start_last_seq", "end_last_seq", "recorded_seq", "missing_checked", "missing_found"]:
            self.assertIn(field, entry)
        self.assertEqual(self.session.get(URL + "/" + target + "/d1", timeout=30).status_code, 404)
        again = replicate(source=source, target=target).json()
        self.assertTrue(again.get("no_changes"), again)
        self.assertNotEqual(again["session_id"], result["session_id"])
        # create_target makes the target.
        self.addCleanup(lambda: self.session.delete(URL + "/" + missing, timeout=30))
        made = replicate(source=source, target=missing, create_target=True)
        self.assertEqual(made.status_code, 200, made.text)
        self.assertEqual(self.session.get(URL + "/" + missing, timeout=30).json()["doc_count"], 3)

    def test_since_seq_filter_changes_and_encoded_ids(self):
        source, target = self.new_db(), self.new_db()
        replicate = lambda **body: self.session.post(URL + "/_replicate", json=dict(source=source, target=target, **body),
                                                     timeout=120)
        seqs = []
        for n in range(1, 6):
            self.session.put(URL + "/" + source + "/d%d" % n, json={"n": n}, timeout=30)
            seqs.append(self.session.get(URL + "/" + source, timeout=30).json()["update_seq"])
        # since_seq: the changes up to it are skipped (a number, or the string a feed gives).
        for since in [seqs[2], int(seqs[2])]:
            target = self.new_db()
            answer = replicate(since_seq=since)
            self.assertEqual(answer.status_code, 200, answer.text)
            self.assertEqual(answer.json()["docs_written"], 2)
            present = [self.session.get(URL + "/" + target + "/d%d" % n, timeout=30).status_code for n in range(1, 6)]
            self.assertEqual(present, [404, 404, 404, 200, 200], since)
        # Anything else is refused before the replication starts.
        for since in ["now", "x1", -1]:
            self.assertEqual(replicate(since_seq=since).status_code, 400, since)
        # A filter the source does not have is not found, before anything starts.
        missing = replicate(filter="nope/f")
        self.assertEqual((missing.status_code, missing.json()["error"]), (404, "not_found"), missing.text)
        # A filter that changes replicates from the start again (CouchDB's COUCHDB-892).
        target = self.new_db()
        design = {"filters": {"f": "function(doc) { return doc.n !== 3 && doc.n !== 4; }"}}
        made = self.session.put(URL + "/" + source + "/_design/mf", json=design, timeout=30).json()
        self.assertEqual(replicate(filter="mf/f").json()["docs_written"], 4)  # d1, d2, d5 and the design document
        self.assertEqual(self.session.get(URL + "/" + target + "/d3", timeout=30).status_code, 404)
        design["_rev"], design["filters"]["f"] = made["rev"], "function(doc) { return doc.n !== undefined; }"
        self.assertEqual(self.session.put(URL + "/" + source + "/_design/mf", json=design, timeout=30).status_code, 201)
        self.assertEqual(replicate(filter="mf/f").json()["docs_written"], 2)
        self.assertEqual(self.session.get(URL + "/" + target + "/d4", timeout=30).status_code, 200)
        # IDs in doc_ids are taken percent-decoded.
        target = self.new_db()
        answer = replicate(doc_ids=["_design%2Fmf", "d1"])
        self.assertEqual(answer.status_code, 200, answer.text)
        self.assertEqual(self.session.get(URL + "/" + target + "/_design/mf", timeout=30).status_code, 200)
        self.assertEqual(self.session.get(URL + "/" + target + "/d2", timeout=30).status_code, 404)

    def test_a_design_document_the_user_may_not_write_fails_alone(self):
        source, target = self.new_db(), self.new_db()
        name, password = self.new_member(target)
        security = {"admins": {"names": [], "roles": []}, "members": {"names": [name], "roles": []}}
        self.assertEqual(self.session.put(URL + "/" + source + "/_security", json=security, timeout=30).status_code, 200)
        docs = [{"_id": "d%d" % n, "n": n} for n in range(3)] + [{"_id": "_design/x", "views": {}}]
        self.session.post(URL + "/" + source + "/_bulk_docs", json={"docs": docs}, timeout=30)
        answer = requests.post(URL + "/_replicate", json={"source": source, "target": target}, auth=(name, password),
                               timeout=120)
        self.assertEqual(answer.status_code, 200, answer.text)
        self.assertEqual((answer.json()["docs_written"], answer.json()["doc_write_failures"]), (3, 1), answer.text)
        self.assertEqual(self.session.get(URL + "/" + target + "/_design/x", timeout=30).status_code, 404)
        self.assertEqual(self.session.get(URL + "/" + target, timeout=30).json()["doc_count"], 3)

    def test_a_replication_is_cancelled_by_its_id(self):
        source, target = self.new_db(), self.new_db()
        started = self.session.post(URL + "/_replicate", json={"source": source, "target": target, "continuous": True},
                                    timeout=60)
        self.assertEqual(started.status_code, 202, started.text)
        replication_id = started.json()["_local_id"]
        listed = [task["replication_id"] for task in self.session.get(URL + "/_active_tasks", timeout=30).json()]
        self.assertIn(replication_id, listed)
        cancel = {"replication_id": replication_id, "cancel": True}
        self.assertEqual(self.session.post(URL + "/_replicate", json=cancel, timeout=60).status_code, 200)
        self.assertEqual(self.session.post(URL + "/_replicate", json=cancel, timeout=60).status_code, 404)

    def test_a_listing_a_user_may_not_read_is_refused_with_its_status(self):
        db = self.new_db()
        name, password = self.new_member(db)
        for path in ["/_users/_all_docs", "/_users/_all_docs?include_docs=true", "/_users/_changes"]:
            answer = requests.get(URL + path, auth=(name, password), timeout=30)
            self.assertEqual((answer.status_code, answer.json()),
                             (401, {"error": "unauthorized", "reason": "You are not a server admin."}), path)
        # A server admin follows the users' changes, without their credentials.
        changes = self.session.get(URL + "/_users/_changes", params={"include_docs": "true"}, timeout=30)
        self.assertEqual(changes.status_code, 200, changes.text)
        mine = [row["doc"] for row in changes.json()["results"] if row["id"] == "org.couchdb.user:" + name]
        self.assertEqual(len(mine), 1, changes.text)
        self.assertEqual(mine[0]["name"], name)
        for hidden in ["password", "salt", "derived_key"]:
            self.assertNotIn(hidden, mine[0])


class ReplicatorClientTests(CouchTestCase):
    """What CouchDB's own replicator (couch_replicator) and PouchDB send a remote endpoint."""

    def test_open_revs_as_multipart_mixed_sends_the_attachments(self):
        # couch_replicator asks `open_revs` with Accept: multipart/mixed and no attachments=true:
        # the answer always carries the attachments' bytes (those newer than atts_since).
        import email.parser
        import email.policy
        import json
        db = self.new_db()
        first = self.session.put(URL + "/" + db + "/d/a.txt", data=b"alpha", headers={"Content-Type": "text/plain"}, timeout=30).json()["rev"]
        second = self.session.put(URL + "/" + db + "/d/b.txt", params={"rev": first}, data=b"beta",
                                  headers={"Content-Type": "text/plain"}, timeout=30).json()["rev"]
        missing = "9-" + "a" * 32
        for atts_since, expected in ((None, {"a.txt": b"alpha", "b.txt": b"beta"}), ([first], {"b.txt": b"beta"})):
            params = {"revs": "true", "latest": "true", "open_revs": json.dumps([second, missing])}
            if atts_since:
                params["atts_since"] = json.dumps(atts_since)
            answer = self.session.get(URL + "/" + db + "/d", params=params, headers={"Accept": "multipart/mixed"}, timeout=30)
            self.assertEqual(answer.status_code, 200, answer.text[:300])
            message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                b"Content-Type: " + answer.headers["Content-Type"].encode() + b"\r\n\r\n" + answer.content)
            parts = list(message.iter_parts())
            self.assertEqual([p.get_content_type() for p in parts], ["multipart/related", "application/json"])
            inner = list(parts[0].iter_parts())
            doc = json.loads(inner[0].get_payload(decode=True))
            self.assertEqual((doc["_rev"], doc["_revisions"]["start"]), (second, 2))
            self.assertEqual({p.get_filename(): p.get_payload(decode=True) for p in inner[1:]}, expected)
            self.assertEqual({n for n, a in doc["_attachments"].items() if a.get("follows")}, set(expected))
            # A missing revision is an error part, as CouchDB marks it.
            self.assertEqual(parts[1]["Content-Type"], 'application/json; error="true"')
            self.assertEqual(json.loads(parts[1].get_payload(decode=True)), {"missing": missing})

    def test_atts_since_inlines_the_newer_attachments(self):
        db = self.new_db()
        first = self.session.put(URL + "/" + db + "/d/a.txt", data=b"alpha", headers={"Content-Type": "text/plain"}, timeout=30).json()["rev"]
        self.session.put(URL + "/" + db + "/d/b.txt", params={"rev": first}, data=b"beta", headers={"Content-Type": "text/plain"}, timeout=30)
        doc = self.session.get(URL + "/" + db + "/d", params={"atts_since": '["%s"]' % first}, timeout=30).json()
        self.assertEqual((doc["_attachments"]["a.txt"].get("stub"), doc["_attachments"]["b.txt"].get("data")), (True, "YmV0YQ=="))

    def test_local_checkpoints_with_revisions_are_written(self):
        # couch_replicator writes its checkpoint with `_revisions` {"start": 0, "ids": ["1"]} after the first.
        db = self.new_db()
        path = URL + "/" + db + "/_local/checkpoint"
        made = self.session.put(path, json={"history": [], "_revisions": {"start": 0, "ids": []}}, timeout=30)
        self.assertEqual(made.status_code, 201, made.text)
        again = self.session.put(path, json={"_rev": made.json()["rev"], "history": [1], "_revisions": {"start": 0, "ids": ["1"]}}, timeout=30)
        self.assertEqual(again.status_code, 201, again.text)
        self.assertEqual(self.session.get(path, timeout=30).json()["history"], [1])

    def test_revs_diff_takes_revisions_it_cannot_hold_as_missing(self):
        db = self.new_db()
        held = self.session.put(URL + "/" + db + "/doc1", json={"v": 1}, timeout=30).json()["rev"]
        answer = self.session.post(URL + "/" + db + "/_revs_diff", json={"doc1": [held, "2-randomid"], "foo": ["1-a", "2-b"]}, timeout=30)
        self.assertEqual(answer.status_code, 200, answer.text)
        self.assertEqual(answer.json(), {"doc1": {"missing": ["2-randomid"]}, "foo": {"missing": ["1-a", "2-b"]}})

    def test_selector_changes_list_every_leaf(self):
        db = self.new_db()
        loser, winner = self.conflicted(db, "c")
        self.session.put(URL + "/" + db + "/other", json={"v": "x"}, timeout=30)
        feed = self.session.post(URL + "/" + db + "/_changes", params={"filter": "_selector", "style": "all_docs"},
                                 json={"selector": {"v": {"$in": ["low", "high"]}}}, timeout=30).json()
        self.assertEqual([(r["id"], [c["rev"] for c in r["changes"]]) for r in feed["results"]], [("c", [winner, loser])])
        docs = self.session.post(URL + "/" + db + "/_changes", params={"filter": "_selector", "include_docs": "true", "conflicts": "true"},
                                 json={"selector": {"v": "high"}}, timeout=30).json()
        self.assertEqual([(r["id"], r["doc"]["_conflicts"]) for r in docs["results"]], [("c", [loser])])

    def test_view_filter_passes_what_the_map_emits_for(self):
        # filter=_view&view=design/view (CouchDB's, and PouchDB's `view` option).
        db = self.new_db()
        design = {"views": {"kinds": {"map": "function (doc) { if (doc.kind === 'a') { emit(doc._id, null); } };"}}}
        self.assertEqual(self.session.put(URL + "/" + db + "/_design/d", json=design, timeout=30).status_code, 201)
        for doc_id, kind in (("x", "a"), ("y", "b"), ("z", "a")):
            self.session.put(URL + "/" + db + "/" + doc_id, json={"kind": kind}, timeout=30)
        for view in ("d/kinds", "_design/d/kinds"):
            feed = self.session.get(URL + "/" + db + "/_changes", params={"filter": "_view", "view": view}, timeout=30)
            self.assertEqual(feed.status_code, 200, feed.text)
            self.assertEqual([r["id"] for r in feed.json()["results"]], ["x", "z"])
        missing = self.session.get(URL + "/" + db + "/_changes", params={"filter": "_view", "view": "d/nope"}, timeout=30)
        self.assertEqual(missing.status_code, 404, missing.text)

    def test_attachments_inline_are_not_counted_as_document_bytes(self):
        # PouchDB pushes 100 documents a batch with their attachments inline (base64): a batch of
        # 20 MB, and a document with 9 MB of attachment, are written; 9 MB of JSON is still refused.
        import base64
        import os
        db = self.new_db()
        blobs = [os.urandom(1_500_000) for _ in range(10)]
        docs = [{"_id": "p%d" % i, "_attachments": {"a.bin": {"content_type": "application/octet-stream",
                                                              "data": base64.b64encode(b).decode()}}} for i, b in enumerate(blobs)]
        bulk = self.session.post(URL + "/" + db + "/_bulk_docs", json={"docs": docs}, timeout=120)
        self.assertEqual(bulk.status_code, 201, bulk.text[:300])
        self.assertEqual(self.session.get(URL + "/" + db + "/p7/a.bin", timeout=30).content, blobs[7])
        big = os.urandom(9_000_000)
        put = self.session.put(URL + "/" + db + "/big", timeout=120, json={"_attachments": {"b.bin": {
            "content_type": "application/octet-stream", "data": base64.b64encode(big).decode()}}})
        self.assertEqual(put.status_code, 201, put.text[:300])
        self.assertEqual(self.session.get(URL + "/" + db + "/big/b.bin", timeout=30).content, big)
        refused = self.session.put(URL + "/" + db + "/json", json={"text": "x" * 9_000_000}, timeout=120)
        self.assertEqual(refused.status_code, 413, refused.text[:300])

    def test_a_long_poll_with_a_heartbeat_writes_newlines_until_a_change(self):
        # PouchDB's live feeds ask feed=longpoll&heartbeat=10000: CouchDB writes a newline each
        # heartbeat and waits for a change instead of timing out.
        import json
        db = self.new_db()
        answer = self.session.get(URL + "/" + db + "/_changes", timeout=60, stream=True,
                                  params={"feed": "longpoll", "heartbeat": "100", "since": "now", "timeout": "150"})
        self.assertEqual(answer.status_code, 200)
        received = answer.iter_content(chunk_size=1)
        head = b""
        while head.count(b"\n") < 4:  # the opening line, then three heartbeats (past the timeout)
            head += next(received)
        self.session.put(URL + "/" + db + "/late", json={"v": 1}, timeout=30)
        body = json.loads(head + b"".join(received))
        self.assertEqual([r["id"] for r in body["results"]], ["late"])

    def test_pending_counts_the_changes_a_limit_left_out(self):
        db = self.new_db()
        for i in range(5):
            self.session.put(URL + "/" + db + "/d%d" % i, json={"v": i}, timeout=30)
        first = self.session.get(URL + "/" + db + "/d1", timeout=30).json()["_rev"]
        self.session.delete(URL + "/" + db + "/d1", params={"rev": first}, timeout=30)
        page = self.session.get(URL + "/" + db + "/_changes", params={"limit": "2"}, timeout=30).json()
        self.assertEqual(([r["id"] for r in page["results"]], page["pending"]), (["d0", "d2"], 3))
        rest = self.session.get(URL + "/" + db + "/_changes", params={"since": page["last_seq"], "limit": "10"}, timeout=30).json()
        self.assertEqual(([r["id"] for r in rest["results"]], rest["pending"]), (["d3", "d4", "d1"], 0))
        # CouchDB's replicator asks limit=0 for the count alone.
        counted = self.session.get(URL + "/" + db + "/_changes", params={"since": "0", "limit": "0"}, timeout=30).json()
        self.assertEqual((counted["results"], counted["pending"]), ([], 5))

    def test_a_database_that_does_not_exist_is_not_found_for_any_user(self):
        # PouchDB asks GET /db first and creates the database on a 404; a user who is nobody's
        # member is told the database is not there, as CouchDB tells them.
        db = self.new_db()
        name, password = self.new_member(db)
        missing = requests.get(URL + "/" + "m" + uuid.uuid4().hex, auth=(name, password), timeout=30)
        self.assertEqual((missing.status_code, missing.json()), (404, {"error": "not_found", "reason": "Database does not exist."}))
        other = self.new_db()
        refused = requests.get(URL + "/" + other, auth=(name, password), timeout=30)
        self.assertEqual(refused.status_code, 403, refused.text)

    def test_created_documents_have_a_location(self):
        db = self.new_db()
        put = self.session.put(URL + "/" + db + "/some%20doc", json={"v": 1}, timeout=30)
        self.assertEqual(put.headers.get("Location"), URL + "/" + db + "/some%20doc")
        posted = self.session.post(URL + "/" + db, json={"_id": "p/1"}, timeout=30)
        self.assertEqual(posted.headers.get("Location"), URL + "/" + db + "/p%2F1")
        attached = self.session.put(URL + "/" + db + "/p%2F1/a.txt", params={"rev": posted.json()["rev"]}, data=b"x", timeout=30)
        self.assertEqual(attached.headers.get("Location"), URL + "/" + db + "/p%2F1/a.txt")
        # Every 201 names the document (an update too); a refused write names nothing.
        current = put.json()["rev"]
        updated = self.session.put(URL + "/" + db + "/some%20doc", json={"_rev": current, "v": 2}, timeout=30)
        self.assertEqual((updated.status_code, updated.headers.get("Location")), (201, URL + "/" + db + "/some%20doc"))
        refused = self.session.put(URL + "/" + db + "/some%20doc", json={"_rev": current, "v": 3}, timeout=30)
        self.assertEqual((refused.status_code, refused.headers.get("Location")), (409, None))

    def test_mango_index_deleted_by_its_encoded_design_id(self):
        db = self.new_db()
        made = self.session.post(URL + "/" + db + "/_index", json={"index": {"fields": ["v"]}, "ddoc": "vidx", "name": "v-idx"}, timeout=30)
        self.assertEqual(made.status_code, 200, made.text)
        gone = self.session.delete(URL + "/" + db + "/_index/_design%2Fvidx/json/v-idx", timeout=30)
        self.assertEqual((gone.status_code, gone.json()), (200, {"ok": True}))
        names = [i["name"] for i in self.session.get(URL + "/" + db + "/_index", timeout=30).json()["indexes"]]
        self.assertNotIn("v-idx", names)


if __name__ == "__main__":
    unittest.main(verbosity=2)
