"""Sync between two Sofa clusters through CouchDB's HTTP API only.

A small replicator written here speaks the CouchDB replication protocol to both clusters'
sofa-http: changes (style=all_docs) -> _revs_diff -> _bulk_get (revs, attachments) ->
_bulk_docs with new_edits=false -> checkpoints in _local documents. The test then compares
every document, every open revision with its history, and every attachment's bytes.

Run by the Swift integration test HTTPAPITests with SOFA_SOURCE_URL, SOFA_TARGET_URL,
SOFA_ADMIN_NAME and SOFA_ADMIN_PASSWORD set (both clusters share their first admin).
"""
import base64
import hashlib
import json
import os
import random
import sys
import unittest
import uuid

import requests


def hexrev(generation, seed):
    return "%d-%s" % (generation, hashlib.md5(seed.encode()).hexdigest())


class Replicator:
    def __init__(self, session, source, target):
        self.session = session
        self.source = source
        self.target = target
        self.rep_id = hashlib.md5((source + "|" + target).encode()).hexdigest()
        self.docs_written = 0

    def _json(self, method, url, expect=(200, 201), **kwargs):
        response = self.session.request(method, url, **kwargs)
        if response.status_code not in expect:
            raise AssertionError("%s %s -> %d %s" % (method, url, response.status_code, response.text[:500]))
        return response.json()

    def checkpoint(self):
        seqs = []
        for base in (self.source, self.target):
            response = self.session.get(base + "/_local/" + self.rep_id)
            if response.status_code == 404:
                return None
            seqs.append(response.json().get("last_seq"))
        return seqs[0] if seqs[0] == seqs[1] else None

    def run(self, batch=50):
        since = self.checkpoint() or 0
        while True:
            changes = self._json("GET", self.source + "/_changes",
                                 params={"since": since, "style": "all_docs", "limit": batch})
            results = changes["results"]
            if not results:
                break
            wanted = {row["id"]: [c["rev"] for c in row["changes"]] for row in results}
            missing = self._json("POST", self.target + "/_revs_diff", json=wanted)
            asked = [{"id": doc_id, "rev": rev} for doc_id, entry in missing.items() for rev in entry["missing"]]
            if asked:
                fetched = self._json("POST", self.source + "/_bulk_get",
                                     params={"revs": "true", "attachments": "true"}, json={"docs": asked})
                docs = []
                for result in fetched["results"]:
                    for item in result["docs"]:
                        if "ok" not in item:
                            raise AssertionError("bulk_get failed: %r" % item)
                        docs.append(item["ok"])
                written = self._json("POST", self.target + "/_bulk_docs", json={"docs": docs, "new_edits": False})
                if written:
                    raise AssertionError("bulk_docs new_edits=false refused: %r" % written)
                self.docs_written += len(docs)
            since = changes["last_seq"]
            for base in (self.source, self.target):
                current = self.session.get(base + "/_local/" + self.rep_id)
                body = {"last_seq": since}
                if current.status_code == 200:
                    body["_rev"] = current.json()["_rev"]
                self._json("PUT", base + "/_local/" + self.rep_id, json=body)
        return since


class HTTPSyncTest(unittest.TestCase):
    def setUp(self):
        self.session = requests.Session()
        self.session.auth = (os.environ["SOFA_ADMIN_NAME"], os.environ["SOFA_ADMIN_PASSWORD"])
        self.name = "sync" + uuid.uuid4().hex[:10]
        self.source = os.environ["SOFA_SOURCE_URL"].rstrip("/") + "/" + self.name
        self.target = os.environ["SOFA_TARGET_URL"].rstrip("/") + "/" + self.name + "_copy"
        for base in (self.source, self.target):
            self.assertEqual(self.session.put(base).status_code, 201)

    def tearDown(self):
        for base in (self.source, self.target):
            self.session.delete(base)

    def put(self, doc_id, body, rev=None):
        if rev:
            body = dict(body, _rev=rev)
        response = self.session.put(self.source + "/" + doc_id, json=body)
        self.assertEqual(response.status_code, 201, response.text)
        return response.json()["rev"]

    def everything(self, base):
        """Every document's open revisions, each with history and attachment bytes."""
        listing = self.session.get(base + "/_changes", params={"style": "all_docs"}).json()
        out = {}
        for row in listing["results"]:
            leaves = self.session.get(base + "/" + row["id"],
                                      params={"open_revs": "all", "revs": "true", "attachments": "true"},
                                      headers={"Accept": "application/json"})
            self.assertEqual(leaves.status_code, 200, leaves.text)
            out[row["id"]] = sorted((item["ok"] for item in leaves.json()), key=lambda d: d["_rev"])
        return out

    def test_documents_revisions_conflicts_deletions_and_attachments_arrive_identical(self):
        rng = random.Random(7)
        # Documents with several revisions.
        for index in range(120):
            rev = self.put("doc-%03d" % index, {"n": index, "text": "x" * rng.randint(0, 300)})
            if index % 3 == 0:
                rev = self.put("doc-%03d" % index, {"n": index, "edited": True}, rev)
        # A deletion.
        rev = self.put("gone", {"v": 1})
        self.assertEqual(self.session.delete(self.source + "/gone", params={"rev": rev}).status_code, 200)
        # A conflict: two branches from one parent, the second written with new_edits=false.
        base_rev = self.put("branchy", {"side": "a"})
        base_rev = self.put("branchy", {"side": "a1"}, base_rev)
        base_rev = "1-" + self.session.get(self.source + "/branchy", params={"revs": "true"}).json()["_revisions"]["ids"][1]
        other = {"_id": "branchy", "_rev": hexrev(2, "b-side"), "side": "b",
                 "_revisions": {"start": 2, "ids": [hexrev(2, "b-side").split("-")[1], base_rev.split("-")[1]]}}
        self.assertEqual(self.session.post(self.source + "/_bulk_docs",
                                           json={"docs": [other], "new_edits": False}).json(), [])
        # Attachments: 0 bytes, small, 1 MiB; one standalone, one inline.
        blob = bytes(rng.getrandbits(8) for _ in range(1 << 20))
        rev = self.put("files", {"kind": "files"})
        for name, data in (("empty.bin", b""), ("small.txt", b"hello sync"), ("big.bin", blob)):
            response = self.session.put(self.source + "/files/" + name, params={"rev": rev}, data=data,
                                        headers={"Content-Type": "application/octet-stream"})
            self.assertEqual(response.status_code, 201, response.text)
            rev = response.json()["rev"]
        inline = {"_attachments": {"note.txt": {"content_type": "text/plain",
                                                "data": base64.b64encode(b"inline note").decode()}}}
        self.put("inline", inline)

        replicator = Replicator(self.session, self.source, self.target)
        first = replicator.run()
        self.assertGreater(replicator.docs_written, 120)
        self.assertEqual(self.everything(self.source), self.everything(self.target))

        # More edits: the next run starts from the checkpoint and moves only what changed.
        self.put("late", {"late": True})
        replicator = Replicator(self.session, self.source, self.target)
        self.assertEqual(replicator.checkpoint(), first)
        replicator.run()
        self.assertEqual(replicator.docs_written, 1)
        self.assertEqual(self.everything(self.source), self.everything(self.target))

        # The attachments' bytes, read back one by one from the target.
        for name, data in (("empty.bin", b""), ("small.txt", b"hello sync"), ("big.bin", blob)):
            response = self.session.get(self.target + "/files/" + name)
            self.assertEqual(response.status_code, 200)
            self.assertEqual(response.content, data, name)
        self.assertEqual(self.session.get(self.target + "/inline/note.txt").content, b"inline note")
        # The conflict arrived as a conflict.
        branchy = self.session.get(self.target + "/branchy", params={"conflicts": "true"}).json()
        self.assertEqual(len(branchy.get("_conflicts", [])), 1, branchy)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
