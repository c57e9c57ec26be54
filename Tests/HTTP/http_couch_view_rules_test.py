#!/usr/bin/env python3
"""Views as CouchDB's own view tests query them: functions, ranges, CouchDB's query_parse_error
checks, linked and conflicted documents, stale reads on every worker, reductions that do not
shrink, raw collation, keys shown as emitted, design document checks, several queries at once.

Environment: SOFA_HTTP_URL, SOFA_ADMIN_NAME, SOFA_ADMIN_PASSWORD (as couch_client_test.py).
"""

import json
import unittest

from http_support import URL, CouchTestCase


class ViewRulesTests(CouchTestCase):
    """Views as CouchDB's own view tests query them."""

    def view_db(self):
        db = self.new_db()
        docs = [{"_id": str(i), "integer": i, "link": str(i - 1)} for i in range(10, 15)]
        self.assertEqual(self.session.post(URL + "/" + db + "/_bulk_docs", json={"docs": docs}, timeout=30).status_code, 201)
        design = {"views": {
            "semi": {"map": "function (doc) {\n emit(doc.integer, doc.integer);\n};\n", "reduce": "_sum\nare\nawesome"},
            "jsreduce": {"map": "function (doc) { emit(null, doc.integer); }",
                         "reduce": "function (keys, values) { return sum(values); };"},
            "nulls": {"map": "function (doc) { emit(null, null); }"},
            "linked": {"map": "function (doc) { emit(doc.integer, {_id: doc.link}); }"},
        }}
        self.assertEqual(self.session.put(URL + "/" + db + "/_design/t", json=design, timeout=30).status_code, 201)
        return db

    def view(self, db, name, params=None, body=None):
        url = URL + "/" + db + "/_design/t/_view/" + name
        if body is not None:
            return self.session.post(url, params=params or {}, json=body, timeout=30)
        return self.session.get(url, params=params or {}, timeout=30)

    def test_functions_with_a_trailing_semicolon_and_builtin_names_with_more_after(self):
        db = self.view_db()
        self.assertEqual(self.view(db, "semi").json()["rows"], [{"key": None, "value": 60}])
        self.assertEqual(self.view(db, "jsreduce").json()["rows"], [{"key": None, "value": 60}])
        self.assertEqual(len(self.view(db, "semi", {"reduce": "false"}).json()["rows"]), 5)

    def test_document_ids_in_ranges_are_taken_as_written(self):
        db = self.view_db()
        rows = self.view(db, "nulls", {"startkey": "null", "startkey_docid": "12", "endkey": "null", "endkey_docid": "13"}).json()
        self.assertEqual([r["id"] for r in rows["rows"]], ["12", "13"])

    def test_linked_documents_and_stale_reads(self):
        db = self.view_db()
        row = self.view(db, "linked", {"key": "12", "include_docs": "true"}).json()["rows"][0]
        self.assertEqual((row["id"], row["doc"]["_id"]), ("12", "11"))
        # A value's `_rev` without `_id` shows the row's own document at that revision
        # (view_include_docs.exs, "emitted _rev controls things").
        first = self.session.put(URL + "/" + db + "/0", json={"integer": 0}, timeout=30).json()["rev"]
        self.session.put(URL + "/" + db + "/0", json={"_rev": first, "integer": 100, "prev": first}, timeout=30)
        design = {"views": {"with_prev": {"map": "function (doc) { emit(doc._id, {'_rev': doc.prev}); }"}}}
        self.assertEqual(self.session.put(URL + "/" + db + "/_design/prev", json=design, timeout=30).status_code, 201)
        rows = self.session.post(URL + "/" + db + "/_design/prev/_view/with_prev", params={"include_docs": "true"},
                                 json={"keys": ["0"]}, timeout=30).json()["rows"]
        self.assertEqual([(r["doc"]["_rev"], r["doc"]["integer"], "prev" in r["doc"]) for r in rows], [(first, 0, False)])
        before = self.view(db, "nulls", {"update_seq": "true"}).json()
        self.session.put(URL + "/" + db + "/late", json={"integer": 99}, timeout=30)
        stale = self.view(db, "nulls", {"stale": "ok", "update_seq": "true"}).json()
        self.assertEqual((len(stale["rows"]), stale["update_seq"]), (len(before["rows"]), before["update_seq"]))
        after = self.view(db, "nulls", {"stale": "update_after", "update_seq": "true"}).json()
        self.assertEqual(len(after["rows"]), len(before["rows"]))
        # update_after brought the index up to date after answering: a stale read now sees the new row.
        self.assertEqual(len(self.view(db, "nulls", {"stale": "ok"}).json()["rows"]), len(before["rows"]) + 1)

    def test_a_reduction_that_does_not_shrink_is_an_error_row(self):
        # view_errors.exs, "reduce overflow error" (CouchDB's reduce_limit).
        db = self.view_db()
        design = {"views": {"big": {"map": "function (doc) { emit(doc.integer, doc.integer); }",
                                    "reduce": "function (keys, values) { var c = []; for (var i = 0; i < 1000; i++) { c.push('wazzap'); } return c; }"},
                            "small": {"map": "function (doc) { emit(doc.integer, doc.integer); }",
                                      "reduce": "function (keys, values) { return values.length; }"}}}
        self.assertEqual(self.session.put(URL + "/" + db + "/_design/big", json=design, timeout=30).status_code, 201)
        answer = self.session.get(URL + "/" + db + "/_design/big/_view/big", timeout=30)
        self.assertEqual(answer.status_code, 200, answer.text[:300])
        self.assertEqual(answer.json()["rows"][0]["error"], "reduce_overflow_error")
        self.assertIn("Reduce output must shrink more rapidly", answer.json()["rows"][0]["reason"])
        self.assertEqual(self.session.get(URL + "/" + db + "/_design/big/_view/small", timeout=30).json()["rows"], [{"key": None, "value": 5}])

    def test_raw_collation(self):
        # view_collation_raw.exs: a view with "options": {"collation": "raw"} orders keys as
        # Erlang orders terms (numbers, false, null, true, objects, arrays, then strings by bytes).
        import json
        values = [1, 2, 3, 4, False, None, True, {"a": 1}, {"a": 2}, {"b": 1}, {"b": 2}, {"b": 2, "a": 1}, {"b": 2, "c": 2},
                  ["a"], ["b"], ["b", "c"], ["b", "c", "a"], ["b", "d"], ["b", "d", "e"], "A", "B", "a", "aa", "b", "ba", "bb"]
        db = self.new_db()
        docs = [{"_id": str(i + 1), "foo": v} for i, v in enumerate(values)]
        self.assertEqual(self.session.post(URL + "/" + db + "/_bulk_docs", json={"docs": docs}, timeout=30).status_code, 201)
        design = {"views": {"test": {"map": "function (doc) { emit(doc.foo, null); }", "options": {"collation": "raw"}}}}
        self.assertEqual(self.session.put(URL + "/" + db + "/_design/test", json=design, timeout=30).status_code, 201)
        url = URL + "/" + db + "/_design/test/_view/test"
        self.assertEqual([r["key"] for r in self.session.get(url, timeout=30).json()["rows"]], values)
        self.assertEqual([r["key"] for r in self.session.get(url, params={"descending": "true"}, timeout=30).json()["rows"]],
                         list(reversed(values)))
        ranged = self.session.get(url, params={"startkey": '"Z"', "endkey": '"a"'}, timeout=30).json()["rows"]
        self.assertEqual([r["key"] for r in ranged], ["a"])
        for value in (2, None, {"b": 2, "a": 1}, ["b", "c"], "aa"):
            rows = self.session.get(url, params={"key": json.dumps(value)}, timeout=30).json()["rows"]
            self.assertEqual([r["key"] for r in rows], [value])
        before_b = self.session.get(url, params={"endkey": '"b"', "inclusive_end": "false"}, timeout=30).json()["rows"]
        self.assertEqual(before_b[-1]["key"], "aa")

    def test_emitted_objects_keep_their_members_order(self):
        # view_collation.exs compares keys as emitted: an object's members come back in their order.
        import json
        db = self.new_db()
        self.session.put(URL + "/" + db + "/o", json={"v": 1}, timeout=30)
        design = {"views": {"objects": {"map": "function (doc) { emit({b: 2, a: 1}, {z: 1, y: [{d: 1, c: 2}]}); }"}}}
        self.assertEqual(self.session.put(URL + "/" + db + "/_design/o", json=design, timeout=30).status_code, 201)
        text = self.session.get(URL + "/" + db + "/_design/o/_view/objects", timeout=30).text
        row = json.loads(text, object_pairs_hook=lambda pairs: pairs)[2][1][0]
        self.assertEqual(dict(row)["key"], [("b", 2), ("a", 1)])
        self.assertEqual(dict(row)["value"], [("z", 1), ("y", [[("d", 1), ("c", 2)]])])

    def test_stale_reads_answer_the_index_s_sequence_on_every_worker(self):
        # view_update_seq.exs: with several query workers sharing the index, a stale read's
        # update_seq is the index's, whichever worker answers.
        db = self.view_db()
        for round_ in range(3):
            self.session.put(URL + "/" + db + "/late%d" % round_, json={"integer": round_}, timeout=30)
            fresh = self.view(db, "nulls", {"update_seq": "true"}).json()
            seen = {self.view(db, "nulls", {"stale": "ok", "update_seq": "true"}).json()["update_seq"] for _ in range(8)}
            self.assertEqual(seen, {fresh["update_seq"]}, round_)

    def test_map_functions_and_included_documents_see_conflicts(self):
        db = self.new_db()
        first, second = self.conflicted(db, "c")
        self.session.put(URL + "/" + db + "/plain", json={"v": 0}, timeout=30)
        design = {"views": {"conflicted": {"map": "function (doc) { if (doc._conflicts) emit(doc._id, doc._conflicts); }"},
                            "all": {"map": "function (doc) { emit(doc._id, null); }"}}}
        self.assertEqual(self.session.put(URL + "/" + db + "/_design/t", json=design, timeout=30).status_code, 201)
        self.assertEqual(self.view(db, "conflicted").json()["rows"], [{"id": "c", "key": "c", "value": [first]}])
        docs = self.view(db, "all", {"include_docs": "true", "conflicts": "true"}).json()["rows"]
        self.assertEqual([(r["id"], r["doc"].get("_conflicts")) for r in docs], [("c", [first]), ("plain", None)])

    def test_design_documents_are_checked_before_they_are_stored(self):
        db = self.new_db()
        refused = [
            ({"views": "invalid"}, "`views` field must have object type"),
            ({"views": {"v": {"reduce": "_count"}}}, "View `v` must contain map function"),
            ({"views": {"v": {"map": {}}}}, "`views.v.map` field must have string type"),
            ({"views": {"v": {"map": "function(doc){}", "reduce": "_foobar"}}}, "`_foobar` is not a supported reduce function."),
            ({"options": "invalid"}, "`options` field must have object type"),
            ({"language": 1}, "`language` field must have string type"),
        ]
        for body, reason in refused:
            answer = self.session.put(URL + "/" + db + "/_design/bad", json=body, timeout=30)
            self.assertEqual((answer.status_code, answer.json()), (400, {"error": "invalid_design_doc", "reason": reason}), body)
        bulk = self.session.post(URL + "/" + db + "/_bulk_docs", timeout=30,
                                 json={"docs": [{"_id": "_design/bad", "views": "invalid"}, {"_id": "fine"}]}).json()
        self.assertEqual([r.get("error") for r in bulk], ["invalid_design_doc", None])
        good = {"views": {"v": {"map": "function(doc){ emit(doc._id, null); }", "reduce": "_count"}, "lib": {"x": "1"}}}
        self.assertEqual(self.session.put(URL + "/" + db + "/_design/good", json=good, timeout=30).status_code, 201)

    def test_several_queries_at_once_and_inline_attachments(self):
        db = self.view_db()
        answer = self.session.post(URL + "/" + db + "/_design/t/_view/semi/queries", timeout=30,
                                   json={"queries": [{}, {"reduce": False, "limit": 2}, {"keys": [10, 12], "group": True}]})
        self.assertEqual(answer.status_code, 200, answer.text)
        results = answer.json()["results"]
        self.assertEqual(results[0]["rows"], [{"key": None, "value": 60}])
        self.assertEqual([r["key"] for r in results[1]["rows"]], [10, 11])
        self.assertEqual(results[2]["rows"], [{"key": 10, "value": 10}, {"key": 12, "value": 12}])
        self.session.put(URL + "/" + db + "/att", timeout=30, json={
            "integer": 50, "_attachments": {"a.txt": {"content_type": "text/plain", "data": "aGVsbG8="}}})
        rows = self.view(db, "semi", {"reduce": "false", "key": "50", "include_docs": "true", "attachments": "true"}).json()["rows"]
        self.assertEqual([r["doc"]["_attachments"]["a.txt"]["data"] for r in rows], ["aGVsbG8="])

    def test_design_options_include_design_documents_and_local_sequences(self):
        db = self.new_db()
        self.session.put(URL + "/" + db + "/a", json={}, timeout=30)
        design = {"options": {"include_design": True, "local_seq": True},
                  "views": {"v": {"map": "function (doc) { emit(doc._id, doc._local_seq); }"}}}
        self.assertEqual(self.session.put(URL + "/" + db + "/_design/t", json=design, timeout=30).status_code, 201)
        rows = self.view(db, "v").json()["rows"]
        self.assertEqual([r["id"] for r in rows], ["_design/t", "a"])
        self.assertTrue(all(isinstance(r["value"], int) and r["value"] > 0 for r in rows), rows)
        info = self.session.post(URL + "/" + db + "/_view_cleanup", json={}, timeout=30)
        self.assertEqual(info.status_code, 202)
        self.assertEqual(len(self.view(db, "v", {"update": "false"}).json()["rows"]), 2)  # cleanup kept the index

    def test_sum_adds_objects_member_by_member(self):
        db = self.new_db()
        docs = [{"_id": "a", "v": {"x": 1, "y": {"z": 2}}}, {"_id": "b", "v": {"x": 2.5, "w": [1, 2]}}]
        self.session.post(URL + "/" + db + "/_bulk_docs", json={"docs": docs}, timeout=30)
        design = {"views": {"s": {"map": "function (doc) { emit(doc._id, doc.v); }", "reduce": "_sum"}}}
        self.session.put(URL + "/" + db + "/_design/t", json=design, timeout=30)
        self.assertEqual(self.view(db, "s").json()["rows"], [{"key": None, "value": {"x": 3.5, "y": {"z": 2}, "w": [1, 2]}}])

    def test_options_couchdb_refuses(self):
        db = self.view_db()
        refused = [
            ("nulls", {"group": "true"}, None, "Invalid use of grouping on a map view."),
            ("nulls", {"reduce": "true"}, None, "Reduce is invalid for map-only views."),
            ("semi", {"group": "true", "reduce": "false"}, None, "Invalid use of grouping on a map view."),
            ("semi", {"startkey": "2", "endkey": "1"}, None,
             "No rows can match your key range, reverse your start_key and end_key or set descending=true"),
            ("semi", {"startkey": "1", "endkey": "5", "descending": "true"}, None,
             "No rows can match your key range, reverse your start_key and end_key or set descending=false"),
            ("semi", {"include_docs": "true"}, None, "`include_docs` is invalid for reduce"),
            ("semi", {}, {"keys": [10, 11]}, "Multi-key fetchs for reduce views must use `group=true`"),
            ("nulls", {"startkey": "1"}, {"keys": [10]}, "`start_key` is incompatible with `keys`"),
            ("nulls", {"stale": "foo"}, None, "Invalid value for `stale`."),
            ("nulls", {"update": "soon"}, None, "Invalid value for `update`."),
        ]
        for name, params, body, reason in refused:
            answer = self.view(db, name, params, body)
            self.assertEqual((answer.status_code, answer.json()), (400, {"error": "query_parse_error", "reason": reason}),
                             (name, params, body))
        bad_keys = self.view(db, "nulls", None, {"keys": 1})
        self.assertEqual((bad_keys.status_code, bad_keys.json()["reason"]), (400, "`keys` member must be an array."))
        for url in ("/_design/t/_view/nulls?key=abc", "/_all_docs?startkey=foo"):
            answer = self.session.get(URL + "/" + db + url, timeout=30)
            self.assertEqual((answer.status_code, answer.json()["error"]), (400, "bad_request"), url)
        gone = self.session.post(URL + "/" + db + "/_temp_view", json={"map": "function(doc){}"}, timeout=30)
        self.assertEqual((gone.status_code, gone.json()),
                         (410, {"error": "gone", "reason": "Temporary views are not supported in CouchDB"}))


if __name__ == "__main__":
    unittest.main(verbosity=2)
