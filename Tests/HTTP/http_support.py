"""What the HTTP API's test programs share (imported from their folder)."""

import os
import unittest
import uuid

import requests


def rss_kib(pid):
    """The resident memory of process `pid`, in KiB."""
    with open("/proc/%s/status" % pid) as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for pid %s" % pid)


# -- What the CouchDB-rule test programs share ------------------------------------------------

URL = os.environ.get("SOFA_HTTP_URL", "").rstrip("/")
ADMIN = (os.environ.get("SOFA_ADMIN_NAME", ""), os.environ.get("SOFA_ADMIN_PASSWORD", ""))


def rev(generation):
    """A revision ID of `generation` with a random digest."""
    return "%d-%s" % (generation, uuid.uuid4().hex)


class CouchTestCase(unittest.TestCase):
    """An admin session, and databases and members made for one test (no tests of its own)."""
    maxDiff = None

    def setUp(self):
        self.session = requests.Session()
        self.session.auth = ADMIN

    def tearDown(self):
        self.session.close()

    def new_db(self):
        name = "r" + uuid.uuid4().hex
        self.assertEqual(self.session.put(URL + "/" + name, timeout=30).status_code, 201)
        self.addCleanup(lambda: self.session.delete(URL + "/" + name, timeout=30))
        return name

    def new_member(self, db):
        """A user who is a member (not an admin) of `db`: its name and password."""
        if self.session.head(URL + "/_users", timeout=30).status_code == 404:
            self.session.put(URL + "/_users", timeout=30)
        name, password = "u" + uuid.uuid4().hex, uuid.uuid4().hex
        made = self.session.put(URL + "/_users/org.couchdb.user:" + name, timeout=30,
                                json={"name": name, "type": "user", "roles": [], "password": password})
        self.assertEqual(made.status_code, 201, made.text)
        security = {"admins": {"names": [], "roles": []}, "members": {"names": [name], "roles": []}}
        self.assertEqual(self.session.put(URL + "/" + db + "/_security", json=security, timeout=30).status_code, 200)
        return name, password

    def conflicted(self, db, doc_id):
        """Makes `doc_id` a document with two leaves of generation 1: (the loser, the winner)."""
        loser, winner = sorted([rev(1), rev(1)])
        self.insert(db, doc_id, loser, v="low")
        self.insert(db, doc_id, winner, v="high")
        return loser, winner

    def insert(self, db, doc_id, revision, ancestors=(), **body):
        """Writes `revision` (with `ancestors`, newest first) as a replicator does."""
        ids = [r.split("-", 1)[1] for r in (revision,) + tuple(ancestors)]
        doc = dict(body, _id=doc_id, _rev=revision, _revisions={"start": int(revision.split("-")[0]), "ids": ids})
        answer = self.session.post(URL + "/" + db + "/_bulk_docs", json={"docs": [doc], "new_edits": False}, timeout=30)
        self.assertEqual((answer.status_code, answer.json()), (201, []))
