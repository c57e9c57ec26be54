#!/usr/bin/env python3
"""Drives Sofa's CouchDB HTTP API with the real CouchDB client library `ibmcloudant`.

Environment:
    SOFA_HTTP_URL        base URL of sofa-http, e.g. http://127.0.0.1:15984
    SOFA_ADMIN_NAME      server admin name
    SOFA_ADMIN_PASSWORD  server admin password

Run: python3 Tests/HTTP/couch_client_test.py   (exit code 0 when every test passes)

Every test that needs a database creates its own (unique name) and deletes it at the end;
users a test creates in `_users` are deleted too. The assertions follow CouchDB's documented
behaviour (CouchDB 3.x), not whatever Sofa happens to answer.

Note: Sofa delays the sign-ins of a name after repeated failures (for 15 minutes), so running
this file many times in a row makes the one wrong-admin-password request slower (up to 8 s).
"""

import base64
import io
import os
import re
import sys
import time
import unittest
import uuid

from ibm_cloud_sdk_core import ApiException
from ibm_cloud_sdk_core.authenticators import BasicAuthenticator, NoAuthAuthenticator
from ibmcloudant import CouchDbSessionAuthenticator
from ibmcloudant.cloudant_v1 import BulkDocs, BulkGetQueryDocument, CloudantV1, Document

URL = os.environ.get("SOFA_HTTP_URL", "").rstrip("/")
ADMIN_NAME = os.environ.get("SOFA_ADMIN_NAME", "")
ADMIN_PASSWORD = os.environ.get("SOFA_ADMIN_PASSWORD", "")

REV_PATTERN = re.compile(r"^[1-9][0-9]*-[0-9a-f]+$")  # the hash part is opaque to clients


def unique_name(prefix="t"):
    """A database/user name that is valid for CouchDB: lower case, starts with a letter."""
    return prefix + uuid.uuid4().hex


def client_with(authenticator, gzip=False):
    """A CloudantV1 client for Sofa.

    ibmcloudant gzip-compresses request bodies by default (`Content-Encoding: gzip`), which
    CouchDB accepts. Most tests turn that off so they exercise the API behind it;
    `GzipTests` covers the client's default configuration on its own.
    """
    client = CloudantV1(authenticator=authenticator)
    client.set_service_url(URL)
    if not gzip:
        client.set_enable_gzip_compression(False)
    return client


def admin_client():
    return client_with(BasicAuthenticator(ADMIN_NAME, ADMIN_PASSWORD))


def attachment_bytes(response):
    """The body of a get_attachment response (the SDK gives None for an empty body)."""
    result = response.get_result()
    return b"" if result is None else result.content


def error_word(exc):
    """The CouchDB `error` field of a failed response (the body is JSON for CouchDB errors)."""
    response = exc.http_response
    if response is None:
        return None
    try:
        return response.json().get("error")
    except ValueError:
        return None


class SofaTestCase(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.admin = admin_client()

    # -- helpers -------------------------------------------------------------------------------

    def new_db(self):
        """Creates a fresh database and registers its deletion at the end of the test."""
        name = unique_name()
        result = self.admin.put_database(db=name).get_result()
        self.assertEqual(result, {"ok": True})
        self.addCleanup(self._drop_db, name)
        return name

    def _drop_db(self, name):
        try:
            self.admin.delete_database(db=name)
        except ApiException as exc:
            if exc.status_code != 404:
                raise

    def assert_api_error(self, call, statuses, word=None):
        """Calls `call()`, expects an ApiException with one of `statuses` (and error `word`)."""
        if isinstance(statuses, int):
            statuses = (statuses,)
        with self.assertRaises(ApiException) as ctx:
            call()
        exc = ctx.exception
        self.assertIn(exc.status_code, statuses, "unexpected status; body: %r" % (
            exc.http_response.text if exc.http_response is not None else None))
        if word is not None:
            self.assertEqual(error_word(exc), word, "body: %r" % (
                exc.http_response.text if exc.http_response is not None else None))
        return exc

    def ensure_users_db(self):
        """`_users` is a system database; CouchDB setup creates it. Create it when missing."""
        try:
            self.admin.head_database(db="_users")
        except ApiException as exc:
            if exc.status_code != 404:
                raise
            try:
                self.admin.put_database(db="_users")
            except ApiException as exc2:
                if exc2.status_code != 412:
                    raise

    def new_user(self, roles=()):
        """Creates `org.couchdb.user:NAME` in `_users`; removes it at the end of the test."""
        self.ensure_users_db()
        name = unique_name("u")
        password = uuid.uuid4().hex
        doc_id = "org.couchdb.user:" + name
        result = self.admin.put_document(
            db="_users", doc_id=doc_id,
            document={"name": name, "type": "user", "roles": list(roles), "password": password},
        ).get_result()
        self.assertTrue(result["ok"])
        self.assertEqual(result["id"], doc_id)
        self.addCleanup(self._drop_user, doc_id)
        return name, password

    def _drop_user(self, doc_id):
        try:
            doc = self.admin.get_document(db="_users", doc_id=doc_id).get_result()
            self.admin.delete_document(db="_users", doc_id=doc_id, rev=doc["_rev"])
        except ApiException as exc:
            if exc.status_code != 404:
                raise

    def put_doc(self, db, doc_id, body, client=None):
        client = client or self.admin
        result = client.put_document(db=db, doc_id=doc_id, document=body).get_result()
        self.assertTrue(result["ok"])
        self.assertEqual(result["id"], doc_id)
        self.assertRegex(result["rev"], REV_PATTERN)
        return result["rev"]


# ================================================================================================
# Server
# ================================================================================================

class ServerTests(SofaTestCase):

    def test_server_information(self):
        info = self.admin.get_server_information().get_result()
        self.assertEqual(info.get("couchdb"), "Welcome")
        self.assertIsInstance(info.get("version"), str)
        self.assertTrue(info["version"])
        self.assertIsInstance(info.get("uuid"), str)
        self.assertTrue(info["uuid"])

    def test_up_information(self):
        response = self.admin.get_up_information()
        self.assertEqual(response.get_status_code(), 200)
        self.assertEqual(response.get_result().get("status"), "ok")

    def test_uuids(self):
        result = self.admin.get_uuids(count=5).get_result()
        uuids = result["uuids"]
        self.assertEqual(len(uuids), 5)
        self.assertEqual(len(set(uuids)), 5)
        for value in uuids:
            self.assertRegex(value, r"^[0-9a-f]{32}$")

    def test_all_dbs_contains_created_db(self):
        db = self.new_db()
        self.assertIn(db, self.admin.get_all_dbs().get_result())
        self.admin.delete_database(db=db)
        self.assertNotIn(db, self.admin.get_all_dbs().get_result())


# ================================================================================================
# Authentication and authorisation
# ================================================================================================

class AuthTests(SofaTestCase):

    def test_basic_auth_admin(self):
        db = self.new_db()
        rev = self.put_doc(db, "a", {"v": 1})
        doc = self.admin.get_document(db=db, doc_id="a").get_result()
        self.assertEqual(doc, {"_id": "a", "_rev": rev, "v": 1})
        session = self.admin.get_session_information().get_result()
        self.assertTrue(session["ok"])
        self.assertEqual(session["userCtx"]["name"], ADMIN_NAME)
        self.assertIn("_admin", session["userCtx"]["roles"])

    def test_wrong_password_is_401(self):
        # One failure per name: Sofa delays sign-ins of a name after repeated failures.
        db = self.new_db()
        bad_admin = client_with(BasicAuthenticator(ADMIN_NAME, ADMIN_PASSWORD + "x"))
        self.assert_api_error(lambda: bad_admin.get_database_information(db=db), 401, "unauthorized")
        user, password = self.new_user()
        bad_user = client_with(BasicAuthenticator(user, password + "x"))
        self.assert_api_error(lambda: bad_user.get_all_dbs(), 401, "unauthorized")
        unknown = client_with(BasicAuthenticator(unique_name("nobody"), "whatever"))
        self.assert_api_error(lambda: unknown.get_server_information(), 401, "unauthorized")
        # the right password still works
        self.assertEqual(self.admin.get_database_information(db=db).get_result()["db_name"], db)

    def test_no_credentials_on_new_database(self):
        db = self.new_db()
        anonymous = client_with(NoAuthAuthenticator())
        self.assert_api_error(lambda: anonymous.get_database_information(db=db), (401, 403))
        self.assert_api_error(
            lambda: anonymous.put_document(db=db, doc_id="x", document={"v": 1}), (401, 403))
        # nothing was written
        self.assert_api_error(lambda: self.admin.get_document(db=db, doc_id="x"), 404, "not_found")

    def test_member_user_can_write_and_read_non_member_forbidden(self):
        db = self.new_db()
        member, member_password = self.new_user()
        outsider, outsider_password = self.new_user()
        self.admin.put_security(db=db, members={"names": [member], "roles": []})

        member_client = client_with(BasicAuthenticator(member, member_password))
        rev = self.put_doc(db, "m1", {"by": member}, client=member_client)
        doc = member_client.get_document(db=db, doc_id="m1").get_result()
        self.assertEqual(doc, {"_id": "m1", "_rev": rev, "by": member})
        posted = member_client.post_document(db=db, document={"k": "v"}).get_result()
        self.assertTrue(posted["ok"])
        self.assertEqual(member_client.get_document(db=db, doc_id=posted["id"]).get_result()["k"], "v")
        session = member_client.get_session_information().get_result()
        self.assertEqual(session["userCtx"]["name"], member)

        outsider_client = client_with(BasicAuthenticator(outsider, outsider_password))
        self.assert_api_error(lambda: outsider_client.get_document(db=db, doc_id="m1"), 403, "forbidden")
        self.assert_api_error(
            lambda: outsider_client.put_document(db=db, doc_id="o1", document={"v": 1}), 403, "forbidden")
        self.assert_api_error(lambda: self.admin.get_document(db=db, doc_id="o1"), 404, "not_found")

        # a known user with a wrong password is still unauthorised
        wrong = client_with(BasicAuthenticator(member, member_password + "x"))
        self.assert_api_error(lambda: wrong.get_document(db=db, doc_id="m1"), 401, "unauthorized")

    def test_document_gets_follow_the_security_object_at_once(self):
        # A plain GET is read by sofa-http from the file when who may read is clear without
        # roles; each change of the security object applies to the very next GET.
        db = self.new_db()
        member, member_password = self.new_user()
        reader, reader_password = self.new_user(roles=["readers"])
        rev = self.put_doc(db, "s1", {"v": 1})
        member_client = client_with(BasicAuthenticator(member, member_password))
        reader_client = client_with(BasicAuthenticator(reader, reader_password))
        anonymous = client_with(NoAuthAuthenticator())
        expected = {"_id": "s1", "_rev": rev, "v": 1}

        # admin-only (no security object): members and anonymous clients are refused
        self.assert_api_error(lambda: member_client.get_document(db=db, doc_id="s1"), 403, "forbidden")
        self.assert_api_error(lambda: anonymous.get_document(db=db, doc_id="s1"), 401, "unauthorized")
        def bulk_get(client):
            # `_bulk_get` reads its items as GET does: the first item's document, or its error word.
            item = client.post_bulk_get(db=db, docs=[BulkGetQueryDocument(id="s1")]).get_result()["results"][0]["docs"][0]
            if "ok" in item:
                item["ok"].pop("_revisions", None)
                return item["ok"]
            return item["error"]["error"]

        for round_ in range(3):
            self.admin.put_security(db=db, members={"names": [member], "roles": []})
            self.assertEqual(member_client.get_document(db=db, doc_id="s1").get_result(), expected)
            self.assertEqual(bulk_get(member_client), expected)
            self.assert_api_error(lambda: reader_client.get_document(db=db, doc_id="s1"), 403, "forbidden")
            # by role (the gateway knows the user's roles)
            self.admin.put_security(db=db, members={"names": [], "roles": ["readers"]})
            self.assertEqual(reader_client.get_document(db=db, doc_id="s1").get_result(), expected)
            self.assertEqual(bulk_get(reader_client), expected)
            self.assert_api_error(lambda: member_client.get_document(db=db, doc_id="s1"), 403, "forbidden")
            self.assertEqual(bulk_get(member_client), "forbidden")
            self.assert_api_error(lambda: anonymous.get_document(db=db, doc_id="s1"), 401, "unauthorized")
            # no members: open to everyone, as CouchDB
            self.admin.put_security(db=db, members={"names": [], "roles": []}, admins={"names": [], "roles": []})
            self.assertEqual(anonymous.get_document(db=db, doc_id="s1").get_result(), expected)
            self.assertEqual(member_client.get_document(db=db, doc_id="s1").get_result(), expected)
            exc = self.assert_api_error(lambda: anonymous.get_document(db=db, doc_id="nope"), 404, "not_found")
            self.assertEqual(exc.http_response.json().get("reason"), "missing")
            # a database admin by name
            self.admin.put_security(db=db, members={"names": ["someone"], "roles": []},
                                    admins={"names": [member], "roles": []})
            self.assertEqual(member_client.get_document(db=db, doc_id="s1").get_result(), expected)
            self.assert_api_error(lambda: anonymous.get_document(db=db, doc_id="s1"), 401, "unauthorized")

        # each acknowledged write is what the next GET reads
        for n in range(2, 40):
            rev = self.put_doc(db, "s1", {"_rev": rev, "v": n})
            self.assertEqual(member_client.get_document(db=db, doc_id="s1").get_result(), {"_id": "s1", "_rev": rev, "v": n})
        # a database deleted and made again is read anew
        self.admin.delete_database(db=db)
        self.assert_api_error(lambda: self.admin.get_document(db=db, doc_id="s1"), 404, "not_found")
        self.admin.put_database(db=db)
        self.assert_api_error(lambda: self.admin.get_document(db=db, doc_id="s1"), 404, "not_found")
        rev = self.put_doc(db, "s1", {"again": True})
        self.assertEqual(self.admin.get_document(db=db, doc_id="s1").get_result(), {"_id": "s1", "_rev": rev, "again": True})

    def test_cookie_session_auth(self):
        db = self.new_db()
        member, member_password = self.new_user()
        self.admin.put_security(db=db, members={"names": [member], "roles": []})
        rev = self.put_doc(db, "c1", {"v": "cookie"})

        authenticator = CouchDbSessionAuthenticator(member, member_password)
        cookie_client = client_with(authenticator)
        doc = cookie_client.get_document(db=db, doc_id="c1").get_result()
        self.assertEqual(doc, {"_id": "c1", "_rev": rev, "v": "cookie"})
        session = cookie_client.get_session_information().get_result()
        self.assertTrue(session["ok"])
        self.assertEqual(session["userCtx"]["name"], member)
        self.assertEqual(session["info"].get("authenticated"), "cookie")
        # the session came from POST /_session's AuthSession cookie
        self.assertTrue(any(c.name == "AuthSession" and c.value for c in authenticator.token_manager.access_token),
                        "no AuthSession cookie from POST /_session")

    def test_cookie_session_wrong_password(self):
        # The authenticator's own POST /_session (body {"username", "password"}) with a wrong
        # password: 401 `unauthorized` and no AuthSession cookie.
        member, member_password = self.new_user()
        authenticator = CouchDbSessionAuthenticator(member, member_password + "x")
        client_with(authenticator)
        response = authenticator.token_manager.request_token()
        self.assertEqual(response.status_code, 401, response.text)
        self.assertEqual(response.json().get("error"), "unauthorized")
        self.assertFalse([c for c in response.cookies if c.name == "AuthSession" and c.value])
        with self.assertRaises(Exception):
            client_with(CouchDbSessionAuthenticator(member, member_password + "x")).get_session_information()


# ================================================================================================
# Databases
# ================================================================================================

class DatabaseTests(SofaTestCase):

    def test_database_lifecycle(self):
        db = self.new_db()
        info = self.admin.get_database_information(db=db).get_result()
        self.assertEqual(info["db_name"], db)
        self.assertEqual(info["doc_count"], 0)
        self.assertIsInstance(info["update_seq"], str)
        first_seq = info["update_seq"]

        self.put_doc(db, "a", {"v": 1})
        self.put_doc(db, "b", {"v": 2})
        info = self.admin.get_database_information(db=db).get_result()
        self.assertEqual(info["doc_count"], 2)
        self.assertIsInstance(info["update_seq"], str)
        self.assertNotEqual(info["update_seq"], first_seq)

        self.assertEqual(self.admin.head_database(db=db).get_status_code(), 200)
        self.assertEqual(self.admin.delete_database(db=db).get_result(), {"ok": True})
        self.assert_api_error(lambda: self.admin.head_database(db=db), 404)
        self.assert_api_error(lambda: self.admin.get_database_information(db=db), 404, "not_found")
        self.assert_api_error(lambda: self.admin.delete_database(db=db), 404, "not_found")

    def test_create_existing_database_412(self):
        db = self.new_db()
        self.assert_api_error(lambda: self.admin.put_database(db=db), 412, "file_exists")

    def test_missing_database_404(self):
        name = unique_name()
        self.assert_api_error(lambda: self.admin.head_database(db=name), 404)
        self.assert_api_error(lambda: self.admin.get_database_information(db=name), 404, "not_found")


# ================================================================================================
# Documents
# ================================================================================================

class DocumentTests(SofaTestCase):

    def test_post_document_generated_id(self):
        db = self.new_db()
        result = self.admin.post_document(db=db, document={"type": "x", "n": 1}).get_result()
        self.assertTrue(result["ok"])
        self.assertTrue(result["id"])
        self.assertRegex(result["rev"], r"^1-[0-9a-f]+$")
        doc = self.admin.get_document(db=db, doc_id=result["id"]).get_result()
        self.assertEqual(doc, {"_id": result["id"], "_rev": result["rev"], "type": "x", "n": 1})
        other = self.admin.post_document(db=db, document=Document(type="y")).get_result()
        self.assertNotEqual(other["id"], result["id"])

    def test_put_get_update_conflict_delete(self):
        db = self.new_db()
        body = {"s": "text é ✓", "n": 1.5, "l": [1, None, True], "o": {"k": "v"}}
        rev1 = self.put_doc(db, "doc1", body)
        self.assertTrue(rev1.startswith("1-"))
        self.assertEqual(self.admin.get_document(db=db, doc_id="doc1").get_result(),
                         dict(body, _id="doc1", _rev=rev1))

        # create again without rev → conflict
        self.assert_api_error(
            lambda: self.admin.put_document(db=db, doc_id="doc1", document={"x": 1}), 409, "conflict")

        rev2 = self.put_doc(db, "doc1", {"_rev": rev1, "n": 2})
        self.assertTrue(rev2.startswith("2-"))
        self.assertEqual(self.admin.get_document(db=db, doc_id="doc1").get_result(),
                         {"_id": "doc1", "_rev": rev2, "n": 2})
        # the old revision stays readable by rev
        old = self.admin.get_document(db=db, doc_id="doc1", rev=rev1).get_result()
        self.assertEqual(old["_rev"], rev1)
        self.assertEqual(old["n"], 1.5)

        # stale rev → conflict
        self.assert_api_error(
            lambda: self.admin.put_document(db=db, doc_id="doc1", document={"_rev": rev1, "n": 3}),
            409, "conflict")
        self.assert_api_error(lambda: self.admin.delete_document(db=db, doc_id="doc1", rev=rev1),
                              409, "conflict")

        deleted = self.admin.delete_document(db=db, doc_id="doc1", rev=rev2).get_result()
        self.assertTrue(deleted["ok"])
        self.assertTrue(deleted["rev"].startswith("3-"))
        exc = self.assert_api_error(lambda: self.admin.get_document(db=db, doc_id="doc1"), 404, "not_found")
        self.assertEqual(exc.http_response.json().get("reason"), "deleted")
        # a never-written doc is 404 `missing`
        exc = self.assert_api_error(lambda: self.admin.get_document(db=db, doc_id="nope"), 404, "not_found")
        self.assertEqual(exc.http_response.json().get("reason"), "missing")
        info = self.admin.get_database_information(db=db).get_result()
        self.assertEqual((info["doc_count"], info["doc_del_count"]), (0, 1))

        # the deleted revision (tombstone) can be read by rev
        tomb = self.admin.get_document(db=db, doc_id="doc1", rev=deleted["rev"]).get_result()
        self.assertEqual(tomb, {"_id": "doc1", "_rev": deleted["rev"], "_deleted": True})

        # re-create after delete continues the history
        rev4 = self.put_doc(db, "doc1", {"again": True})
        self.assertTrue(rev4.startswith("4-"))

    def test_get_with_revs(self):
        db = self.new_db()
        rev1 = self.put_doc(db, "r", {"n": 1})
        rev2 = self.put_doc(db, "r", {"_rev": rev1, "n": 2})
        rev3 = self.put_doc(db, "r", {"_rev": rev2, "n": 3})
        doc = self.admin.get_document(db=db, doc_id="r", revs=True).get_result()
        self.assertEqual(doc["_rev"], rev3)
        self.assertEqual(doc["_revisions"], {
            "start": 3,
            "ids": [rev3.split("-", 1)[1], rev2.split("-", 1)[1], rev1.split("-", 1)[1]],
        })
        info = self.admin.get_document(db=db, doc_id="r", revs_info=True).get_result()
        self.assertEqual([(r["rev"], r["status"]) for r in info["_revs_info"]][0], (rev3, "available"))
        self.assertEqual([r["rev"] for r in info["_revs_info"]], [rev3, rev2, rev1])

    def test_local_documents(self):
        db = self.new_db()
        result = self.admin.put_local_document(db=db, doc_id="checkpoint", document={"seq": "42"}).get_result()
        self.assertTrue(result["ok"])
        self.assertEqual(result["id"], "_local/checkpoint")
        doc = self.admin.get_local_document(db=db, doc_id="checkpoint").get_result()
        self.assertEqual(doc["_id"], "_local/checkpoint")
        self.assertEqual(doc["seq"], "42")
        # update with the rev given back
        result2 = self.admin.put_local_document(
            db=db, doc_id="checkpoint", document={"_rev": doc["_rev"], "seq": "43"}).get_result()
        self.assertTrue(result2["ok"])
        self.assertEqual(self.admin.get_local_document(db=db, doc_id="checkpoint").get_result()["seq"], "43")
        # local docs are not counted and not in _changes
        self.assertEqual(self.admin.get_database_information(db=db).get_result()["doc_count"], 0)
        changes = self.admin.post_changes(db=db).get_result()
        self.assertEqual(changes["results"], [])
        self.assert_api_error(lambda: self.admin.get_local_document(db=db, doc_id="missing"), 404, "not_found")


# ================================================================================================
# Bulk operations
# ================================================================================================

class BulkTests(SofaTestCase):

    def test_bulk_docs_ok_and_conflict(self):
        db = self.new_db()
        rev_a = self.put_doc(db, "a", {"v": 0})
        docs = [
            {"_id": "a", "v": 1},                 # no rev for an existing doc → conflict
            {"_id": "b", "v": 2},
            Document(_id="c", v=3),
            {"_id": "a2", "v": 4},
        ]
        results = self.admin.post_bulk_docs(db=db, bulk_docs=BulkDocs(docs=[
            d if isinstance(d, Document) else Document.from_dict(d) for d in docs])).get_result()
        self.assertEqual([r["id"] for r in results], ["a", "b", "c", "a2"])
        self.assertEqual(results[0].get("error"), "conflict")
        self.assertNotIn("rev", results[0])
        for r in results[1:]:
            self.assertTrue(r.get("ok"), r)
            self.assertRegex(r["rev"], r"^1-[0-9a-f]+$")
        self.assertEqual(self.admin.get_document(db=db, doc_id="a").get_result()["_rev"], rev_a)
        self.assertEqual(self.admin.get_document(db=db, doc_id="c").get_result()["v"], 3)

        # an update with the right rev works, a delete through _bulk_docs too
        results = self.admin.post_bulk_docs(db=db, bulk_docs={"docs": [
            {"_id": "a", "_rev": rev_a, "v": 10},
            {"_id": "b", "_rev": results[1]["rev"], "_deleted": True},
        ]}).get_result()
        self.assertTrue(all(r.get("ok") for r in results), results)
        self.assertEqual(self.admin.get_document(db=db, doc_id="a").get_result()["v"], 10)
        self.assert_api_error(lambda: self.admin.get_document(db=db, doc_id="b"), 404, "not_found")

    def test_bulk_docs_new_edits_false_and_revs_diff(self):
        db = self.new_db()
        h1, h2, h3 = uuid.uuid4().hex, uuid.uuid4().hex, uuid.uuid4().hex
        rev3 = "3-" + h3
        other = "1-" + uuid.uuid4().hex
        body = BulkDocs(new_edits=False, docs=[
            Document.from_dict({"_id": "rep", "_rev": rev3, "v": "three",
                                "_revisions": {"start": 3, "ids": [h3, h2, h1]}}),
            Document.from_dict({"_id": "rep2", "_rev": other, "v": "one"}),
        ])
        results = self.admin.post_bulk_docs(db=db, bulk_docs=body).get_result()
        # CouchDB answers new_edits=false with [] (errors only)
        for r in results:
            self.assertNotIn("error", r, results)

        doc = self.admin.get_document(db=db, doc_id="rep", rev=rev3).get_result()
        self.assertEqual(doc, {"_id": "rep", "_rev": rev3, "v": "three"})
        self.assertEqual(self.admin.get_document(db=db, doc_id="rep").get_result()["_rev"], rev3)
        with_revs = self.admin.get_document(db=db, doc_id="rep", revs=True).get_result()
        self.assertEqual(with_revs["_revisions"], {"start": 3, "ids": [h3, h2, h1]})
        self.assertEqual(self.admin.get_document(db=db, doc_id="rep2", rev=other).get_result()["v"], "one")

        missing4 = "4-" + uuid.uuid4().hex
        missing_other = "2-" + uuid.uuid4().hex
        diff = self.admin.post_revs_diff(db=db, document_revisions={
            "rep": [rev3, missing4],
            "rep2": [other],
            "absent": [missing_other],
        }).get_result()
        self.assertEqual(set(diff.keys()), {"rep", "absent"})
        self.assertEqual(diff["rep"]["missing"], [missing4])
        self.assertEqual(diff["absent"]["missing"], [missing_other])

        # writing the same revision again is a no-op
        self.admin.post_bulk_docs(db=db, bulk_docs=BulkDocs(new_edits=False, docs=[
            Document.from_dict({"_id": "rep", "_rev": rev3, "v": "three"})])).get_result()
        again = self.admin.get_document(db=db, doc_id="rep", conflicts=True).get_result()
        self.assertEqual(again, {"_id": "rep", "_rev": rev3, "v": "three"})

    def test_new_edits_false_conflict_winner(self):
        # Two leaves of the same generation: CouchDB's winner is deterministic (the higher rev
        # id), whatever the order they were written in, so every replica picks the same one.
        db = self.new_db()
        h1, h2 = uuid.uuid4().hex, uuid.uuid4().hex
        low = "3-0" + uuid.uuid4().hex[1:]
        high = "3-f" + uuid.uuid4().hex[1:]
        for doc_id, order in (("low-first", (low, high)), ("high-first", (high, low))):
            for rev in order:
                results = self.admin.post_bulk_docs(db=db, bulk_docs=BulkDocs(new_edits=False, docs=[
                    Document.from_dict({"_id": doc_id, "_rev": rev, "v": rev,
                                        "_revisions": {"start": 3, "ids": [rev[2:], h2, h1]}}),
                ])).get_result()
                self.assertEqual([r for r in results if "error" in r], [])
            doc = self.admin.get_document(db=db, doc_id=doc_id, conflicts=True).get_result()
            self.assertEqual((doc_id, doc["_rev"], doc["v"], doc.get("_conflicts")),
                             (doc_id, high, high, [low]))

    def test_latest_leaves_of_an_ancestor(self):
        # latest=true: the newest leaf (or leaves) descending from each revision asked for.
        import json
        import requests
        db = self.new_db()
        h1 = uuid.uuid4().hex
        leaves = ["2-a" + uuid.uuid4().hex[1:], "2-f" + uuid.uuid4().hex[1:]]
        for rev in leaves:
            self.admin.post_bulk_docs(db=db, bulk_docs=BulkDocs(new_edits=False, docs=[
                Document.from_dict({"_id": "tree", "_rev": rev, "v": rev, "_revisions": {"start": 2, "ids": [rev[2:], h1]}})]))
        auth = (ADMIN_NAME, ADMIN_PASSWORD)
        found = requests.get(URL + "/" + db + "/tree", auth=auth, timeout=30, headers={"Accept": "application/json"},
                             params={"open_revs": json.dumps(["1-" + h1, "1-" + "0" * 32]), "latest": "true"}).json()
        self.assertEqual(sorted(item["ok"]["_rev"] for item in found if "ok" in item), sorted(leaves))
        self.assertEqual([item["missing"] for item in found if "missing" in item], ["1-" + "0" * 32])
        latest = requests.get(URL + "/" + db + "/tree", auth=auth, timeout=30, params={"rev": "1-" + h1, "latest": "true"}).json()
        self.assertEqual(latest["_rev"], leaves[1])  # the winner: the higher revision ID

    def test_bulk_get(self):
        db = self.new_db()
        rev_a = self.put_doc(db, "a", {"v": "a"})
        rev_b1 = self.put_doc(db, "b", {"v": "b1"})
        rev_b2 = self.put_doc(db, "b", {"_rev": rev_b1, "v": "b2"})
        result = self.admin.post_bulk_get(db=db, docs=[
            BulkGetQueryDocument(id="a"),
            BulkGetQueryDocument(id="b", rev=rev_b1),
            BulkGetQueryDocument(id="missing"),
        ]).get_result()
        results = result["results"]
        self.assertEqual([r["id"] for r in results], ["a", "b", "missing"])
        self.assertEqual(results[0]["docs"][0]["ok"], {"_id": "a", "_rev": rev_a, "v": "a"})
        self.assertEqual(results[1]["docs"][0]["ok"], {"_id": "b", "_rev": rev_b1, "v": "b1"})
        self.assertIn("error", results[2]["docs"][0])
        self.assertEqual(results[2]["docs"][0]["error"]["error"], "not_found")
        # revs=True gives _revisions
        result = self.admin.post_bulk_get(db=db, docs=[BulkGetQueryDocument(id="b")], revs=True).get_result()
        doc = result["results"][0]["docs"][0]["ok"]
        self.assertEqual(doc["_rev"], rev_b2)
        self.assertEqual(doc["_revisions"], {"start": 2, "ids": [rev_b2[2:], rev_b1[2:]]})

    def _all_docs_db(self):
        db = self.new_db()
        ids = ["d%02d" % i for i in range(10)]
        results = self.admin.post_bulk_docs(db=db, bulk_docs={"docs": [
            {"_id": i, "n": n} for n, i in enumerate(ids)]}).get_result()
        revs = {r["id"]: r["rev"] for r in results}
        self.assertEqual(set(revs), set(ids))
        return db, ids, revs

    def test_all_docs(self):
        db, ids, revs = self._all_docs_db()
        everything = self.admin.post_all_docs(db=db).get_result()
        self.assertEqual(everything["total_rows"], 10)
        self.assertEqual([r["id"] for r in everything["rows"]], ids)
        self.assertEqual([r["key"] for r in everything["rows"]], ids)
        self.assertEqual([r["value"]["rev"] for r in everything["rows"]], [revs[i] for i in ids])
        self.assertNotIn("doc", everything["rows"][0])

    def test_all_docs_include_docs(self):
        db, ids, revs = self._all_docs_db()
        with_docs = self.admin.post_all_docs(db=db, include_docs=True).get_result()
        self.assertEqual([r["id"] for r in with_docs["rows"]], ids)
        self.assertEqual(with_docs["rows"][1].get("doc"), {"_id": "d01", "_rev": revs["d01"], "n": 1})

    def test_all_docs_limit(self):
        db, ids, revs = self._all_docs_db()
        limited = self.admin.post_all_docs(db=db, limit=3).get_result()
        self.assertEqual([r["id"] for r in limited["rows"]], ids[:3])
        self.assertEqual(limited["total_rows"], 10)

    def test_all_docs_start_key_end_key(self):
        db, ids, revs = self._all_docs_db()
        ranged = self.admin.post_all_docs(db=db, start_key="d03", end_key="d06").get_result()
        self.assertEqual([r["id"] for r in ranged["rows"]], ["d03", "d04", "d05", "d06"])
        exclusive = self.admin.post_all_docs(db=db, start_key="d03", end_key="d06", inclusive_end=False).get_result()
        self.assertEqual([r["id"] for r in exclusive["rows"]], ["d03", "d04", "d05"])

    def test_all_docs_descending_skip(self):
        db, ids, revs = self._all_docs_db()
        descending = self.admin.post_all_docs(db=db, descending=True).get_result()
        self.assertEqual([r["id"] for r in descending["rows"]], list(reversed(ids)))
        skipped = self.admin.post_all_docs(db=db, skip=8).get_result()
        self.assertEqual([r["id"] for r in skipped["rows"]], ["d08", "d09"])

    def test_all_docs_keys(self):
        db, ids, revs = self._all_docs_db()
        # a deleted doc and a missing one in `keys`
        deleted = self.admin.delete_document(db=db, doc_id="d02", rev=revs["d02"]).get_result()
        keyed = self.admin.post_all_docs(db=db, keys=["d05", "d02", "zz", "d00"]).get_result()
        rows = keyed["rows"]
        self.assertEqual([r.get("key") for r in rows], ["d05", "d02", "zz", "d00"])
        self.assertEqual(rows[0]["value"]["rev"], revs["d05"])
        self.assertEqual(rows[2], {"key": "zz", "error": "not_found"})
        self.assertEqual(rows[3]["value"]["rev"], revs["d00"])
        # CouchDB lists a deleted document's row with its tombstone rev
        self.assertEqual((rows[1].get("id"), rows[1].get("value")),
                         ("d02", {"rev": deleted["rev"], "deleted": True}), rows[1])
        self.assertEqual(self.admin.post_all_docs(db=db).get_result()["total_rows"], 9)

    def test_all_docs_keys_include_docs(self):
        db, ids, revs = self._all_docs_db()
        keyed = self.admin.post_all_docs(db=db, keys=["d05", "d00"], include_docs=True).get_result()
        self.assertEqual([r.get("doc") for r in keyed["rows"]], [
            {"_id": "d05", "_rev": revs["d05"], "n": 5},
            {"_id": "d00", "_rev": revs["d00"], "n": 0},
        ])


# ================================================================================================
# Changes
# ================================================================================================

class ChangesTests(SofaTestCase):

    def test_changes_normal_and_since(self):
        db = self.new_db()
        self.put_doc(db, "a", {"v": 1})
        self.put_doc(db, "b", {"v": 2})
        first = self.admin.post_changes(db=db).get_result()
        self.assertEqual(sorted(r["id"] for r in first["results"]), ["a", "b"])
        for r in first["results"]:
            self.assertIn("seq", r)
            self.assertRegex(r["changes"][0]["rev"], REV_PATTERN)
        self.assertIn("last_seq", first)
        self.assertIsInstance(first["last_seq"], str)
        last_seq = first["last_seq"]

        rev_c = self.put_doc(db, "c", {"v": 3})
        rev_a = self.admin.get_document(db=db, doc_id="a").get_result()["_rev"]
        deleted = self.admin.delete_document(db=db, doc_id="a", rev=rev_a).get_result()
        later = self.admin.post_changes(db=db, since=last_seq).get_result()
        by_id = {r["id"]: r for r in later["results"]}
        self.assertEqual(set(by_id), {"c", "a"})
        self.assertEqual(by_id["c"]["changes"], [{"rev": rev_c}])
        self.assertEqual(by_id["a"]["changes"], [{"rev": deleted["rev"]}])
        self.assertTrue(by_id["a"].get("deleted"))
        self.assertNotEqual(later["last_seq"], last_seq)

        # since the newest seq → nothing
        empty = self.admin.post_changes(db=db, since=later["last_seq"]).get_result()
        self.assertEqual(empty["results"], [])

        # include_docs and limit
        with_docs = self.admin.post_changes(db=db, include_docs=True).get_result()
        docs = {r["id"]: r.get("doc") for r in with_docs["results"]}
        self.assertEqual(docs["c"], {"_id": "c", "_rev": rev_c, "v": 3})
        limited = self.admin.post_changes(db=db, limit=1).get_result()
        self.assertEqual(len(limited["results"]), 1)

    def test_longpoll_since_now_times_out_empty(self):
        db = self.new_db()
        self.put_doc(db, "a", {"v": 1})
        started = time.monotonic()
        result = self.admin.post_changes(db=db, feed="longpoll", since="now", timeout=500).get_result()
        elapsed = time.monotonic() - started
        self.assertEqual(result["results"], [])
        self.assertIn("last_seq", result)
        self.assertLess(elapsed, 30.0)

    def test_doc_ids_filter(self):
        db = self.new_db()
        for i in ("x1", "x2", "x3", "x4"):
            self.put_doc(db, i, {"id": i})
        result = self.admin.post_changes(db=db, filter="_doc_ids", doc_ids=["x2", "x4", "nope"]).get_result()
        self.assertEqual(sorted(r["id"] for r in result["results"]), ["x2", "x4"])


# ================================================================================================
# Attachments
# ================================================================================================

class FilteredChangesTests(SofaTestCase):

    def _db(self):
        db = self.new_db()
        self.admin.post_bulk_docs(db=db, bulk_docs={"docs": [
            {"_id": "a", "k": 1}, {"_id": "b", "k": 2}, {"_id": "c", "k": 1}, {"_id": "d", "k": 3},
            {"_id": "_design/x", "language": "javascript"}]})
        return db

    def test_selector_filter(self):
        db = self._db()
        result = self.admin.post_changes(db=db, filter="_selector", selector={"k": 1}, include_docs=True).get_result()
        self.assertEqual([row["id"] for row in result["results"]], ["a", "c"])
        self.assertEqual([row["doc"]["k"] for row in result["results"]], [1, 1])
        later = self.admin.post_changes(db=db, filter="_selector", selector={"k": 1}, since=result["last_seq"]).get_result()
        self.assertEqual(later["results"], [])

    def test_n1ql_where_and_design_filters(self):
        import requests
        db = self._db()
        response = requests.get(URL + "/" + db + "/_changes", auth=(ADMIN_NAME, ADMIN_PASSWORD),
                                params={"filter": "_sofa_where", "where": "k > 1"}, timeout=30)
        self.assertEqual([row["id"] for row in response.json()["results"]], ["b", "d"])
        design = self.admin.post_changes(db=db, filter="_design").get_result()
        self.assertEqual([row["id"] for row in design["results"]], ["_design/x"])


class MultipartTests(SofaTestCase):

    def test_multipart_related_write_and_multipart_mixed_open_revs(self):
        import json
        import requests
        db = self.new_db()
        boundary = "abc123boundary"
        first, second = os.urandom(3000), b"plain text part"
        document = {"kind": "mp", "_attachments": {
            "one.bin": {"follows": True, "content_type": "application/octet-stream", "length": len(first)},
            "two.txt": {"follows": True, "content_type": "text/plain", "length": len(second)}}}
        body = (("--%s\r\nContent-Type: application/json\r\n\r\n" % boundary).encode() + json.dumps(document).encode()
                + ("\r\n--%s\r\n\r\n" % boundary).encode() + first
                + ("\r\n--%s\r\n\r\n" % boundary).encode() + second + ("\r\n--%s--" % boundary).encode())
        response = requests.put(URL + "/" + db + "/mp", data=body, auth=(ADMIN_NAME, ADMIN_PASSWORD),
                                headers={"Content-Type": 'multipart/related; boundary="%s"' % boundary}, timeout=30)
        self.assertEqual(response.status_code, 201, response.text)
        rev = response.json()["rev"]
        got = self.admin.get_attachment(db=db, doc_id="mp", attachment_name="one.bin")
        self.assertEqual(attachment_bytes(got), first)
        got = self.admin.get_attachment(db=db, doc_id="mp", attachment_name="two.txt")
        self.assertEqual(attachment_bytes(got), second)
        stub = self.admin.get_document(db=db, doc_id="mp").get_result()["_attachments"]["one.bin"]
        self.assertEqual((stub["length"], stub["revpos"], stub["stub"]), (len(first), 1, True))

        mixed = requests.get(URL + "/" + db + "/mp", params={"open_revs": json.dumps([rev, "9-" + "a" * 32])},
                             headers={"Accept": "multipart/mixed"}, auth=(ADMIN_NAME, ADMIN_PASSWORD), timeout=30)
        self.assertEqual(mixed.status_code, 200)
        content_type = mixed.headers["Content-Type"]
        self.assertTrue(content_type.startswith("multipart/mixed"), content_type)
        # The document with its attachments following (CouchDB's replicator reads them from
        # here), then the missing revision.
        import email.parser
        import email.policy
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + mixed.content)
        parts = list(message.iter_parts())
        inner = list(parts[0].iter_parts())
        document = json.loads(inner[0].get_payload(decode=True))
        self.assertEqual((document["_rev"], document["kind"]), (rev, "mp"))
        self.assertEqual({p.get_filename(): p.get_payload(decode=True) for p in inner[1:]}, {"one.bin": first, "two.txt": second})
        self.assertEqual(json.loads(parts[1].get_payload(decode=True)), {"missing": "9-" + "a" * 32})

    def test_bulk_get_as_multipart_mixed_with_attachments_following(self):
        # Accept: multipart/mixed (and not JSON): a part per document; one with attachments is a
        # multipart/related part (the JSON with "follows", then the bytes); failures say error="true".
        import email.parser
        import email.policy
        import json
        import requests
        db = self.new_db()
        auth = (ADMIN_NAME, ADMIN_PASSWORD)
        big, small = os.urandom(200000), b"small text"
        rev_a1 = self.admin.put_attachment(db=db, doc_id="a", attachment_name="big.bin", attachment=io.BytesIO(big),
                                           content_type="application/octet-stream").get_result()["rev"]
        rev_a2 = self.admin.put_attachment(db=db, doc_id="a", attachment_name="small.txt", attachment=io.BytesIO(small),
                                           content_type="text/plain", rev=rev_a1).get_result()["rev"]
        rev_p = self.put_doc(db, "plain", {"v": 1})
        request = {"docs": [{"id": "a"}, {"id": "plain"}, {"id": "gone"}, {"id": "a", "atts_since": [rev_a1]}]}
        response = requests.post(URL + "/" + db + "/_bulk_get", params={"revs": "true"}, json=request, auth=auth,
                                 headers={"Accept": "multipart/mixed"}, timeout=30)
        self.assertEqual(response.status_code, 200, response.text[:300])
        self.assertTrue(response.headers["Content-Type"].startswith("multipart/mixed"), response.headers["Content-Type"])
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + response.headers["Content-Type"].encode() + b"\r\n\r\n" + response.content)
        parts = list(message.iter_parts())
        self.assertEqual([p.get_content_type() for p in parts],
                         ["multipart/related", "application/json", "application/json", "multipart/related"])
        # "a": every attachment follows, its bytes in the related part's later parts.
        self.assertEqual((parts[0]["X-Doc-Id"], parts[0]["X-Rev-Id"]), ("a", rev_a2))
        inner = list(parts[0].iter_parts())
        doc = json.loads(inner[0].get_payload(decode=True))
        self.assertEqual(doc["_rev"], rev_a2)
        self.assertEqual(doc["_revisions"]["start"], 2)
        self.assertEqual({name: (stub.get("follows"), stub.get("stub"), stub["length"]) for name, stub in doc["_attachments"].items()},
                         {"big.bin": (True, None, len(big)), "small.txt": (True, None, len(small))})
        attached = {p.get_filename(): p.get_payload(decode=True) for p in inner[1:]}
        self.assertEqual(attached, {"big.bin": big, "small.txt": small})
        # "plain": JSON alone; "gone": an error part.
        self.assertEqual(json.loads(parts[1].get_payload(decode=True))["_rev"], rev_p)
        self.assertEqual(parts[2]["Content-Type"], 'application/json; error="true"')
        failure = json.loads(parts[2].get_payload(decode=True))
        self.assertEqual((failure["id"], failure["error"]), ("gone", "not_found"))
        # atts_since the first revision: only the attachment added after it follows.
        since = list(parts[3].iter_parts())
        doc = json.loads(since[0].get_payload(decode=True))
        self.assertEqual(doc["_attachments"]["big.bin"].get("stub"), True)
        self.assertEqual(doc["_attachments"]["small.txt"].get("follows"), True)
        self.assertEqual({p.get_filename(): p.get_payload(decode=True) for p in since[1:]}, {"small.txt": small})
        # A name and a content type the document chose cannot break the part's headers.
        self.admin.post_bulk_docs(db=db, bulk_docs={"docs": [{"_id": "odd", "_attachments": {'q"uote.txt': {
            "content_type": "text/plain\r\nX-Injected: yes", "data": base64.b64encode(small).decode()}}}]})
        odd = requests.post(URL + "/" + db + "/_bulk_get", json={"docs": [{"id": "odd"}, {"id": "plain"}]}, auth=auth,
                            headers={"Accept": "multipart/mixed"}, timeout=30)
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + odd.headers["Content-Type"].encode() + b"\r\n\r\n" + odd.content)
        parts = list(message.iter_parts())
        self.assertEqual([p.get_content_type() for p in parts], ["multipart/related", "application/json"])
        attached = list(parts[0].iter_parts())[1]
        self.assertEqual((attached.get_filename(), attached["X-Injected"], attached.get_payload(decode=True)),
                         ('q"uote.txt', None, small))
        direct = requests.get(URL + "/" + db + "/odd/" + requests.utils.quote('q"uote.txt'), auth=auth, timeout=30)
        self.assertEqual((direct.status_code, direct.content, direct.headers.get("X-Injected")), (200, small, None))
        # JSON stays the answer when the client accepts it too.
        both = requests.post(URL + "/" + db + "/_bulk_get", json={"docs": [{"id": "plain"}]}, auth=auth,
                             headers={"Accept": "application/json, multipart/mixed"}, timeout=30)
        self.assertEqual(both.json()["results"][0]["docs"][0]["ok"]["_rev"], rev_p)

    def test_a_stub_with_a_peers_digest_keeps_the_attachment_and_the_revision(self):
        db = self.new_db()
        data = b"attached once"
        rev1 = self.admin.put_attachment(db=db, doc_id="s", attachment_name="a.txt", attachment=io.BytesIO(data),
                                         content_type="text/plain").get_result()["rev"]
        rev2 = "2-" + "b" * 32
        doc = {"_id": "s", "_rev": rev2, "v": 2,
               "_revisions": {"start": 2, "ids": ["b" * 32, rev1.split("-", 1)[1]]},
               "_attachments": {"a.txt": {"stub": True, "digest": "md5-" + base64.b64encode(b"0123456789abcdef").decode(),
                                          "length": len(data), "revpos": 1, "content_type": "text/plain"}}}
        self.assertEqual(self.admin.post_bulk_docs(db=db, bulk_docs={"docs": [doc], "new_edits": False}).get_result(), [])
        current = self.admin.get_document(db=db, doc_id="s").get_result()
        self.assertEqual(current["_rev"], rev2)
        got = self.admin.get_attachment(db=db, doc_id="s", attachment_name="a.txt")
        self.assertEqual(attachment_bytes(got), data)
        unknown = dict(doc, _id="t", _revisions={"start": 2, "ids": ["b" * 32, "c" * 32]})
        result = self.admin.post_bulk_docs(db=db, bulk_docs={"docs": [unknown], "new_edits": False}).get_result()
        self.assertEqual(result[0]["error"], "missing_stub")


class CORSTests(SofaTestCase):
    """The cluster is started with SOFA_CORS_ORIGINS naming this origin (HTTPAPITests)."""

    ORIGIN = os.environ.get("SOFA_TEST_CORS_ORIGIN", "")

    def test_preflight_and_credentials_for_an_allowed_origin_only(self):
        import requests
        if not self.ORIGIN:
            self.skipTest("SOFA_TEST_CORS_ORIGIN is not set")
        db = self.new_db()
        preflight = requests.options(URL + "/" + db, headers={
            "Origin": self.ORIGIN, "Access-Control-Request-Method": "PUT",
            "Access-Control-Request-Headers": "content-type, authorization"}, timeout=10)
        self.assertEqual(preflight.status_code, 200)
        self.assertEqual(preflight.headers.get("Access-Control-Allow-Origin"), self.ORIGIN)
        self.assertEqual(preflight.headers.get("Access-Control-Allow-Credentials"), "true")
        self.assertIn("PUT", preflight.headers.get("Access-Control-Allow-Methods", ""))
        answer = requests.get(URL + "/" + db, auth=(ADMIN_NAME, ADMIN_PASSWORD), headers={"Origin": self.ORIGIN}, timeout=10)
        self.assertEqual(answer.headers.get("Access-Control-Allow-Origin"), self.ORIGIN)
        other = requests.get(URL + "/" + db, auth=(ADMIN_NAME, ADMIN_PASSWORD), headers={"Origin": "http://evil.example"},
                             timeout=10)
        self.assertIsNone(other.headers.get("Access-Control-Allow-Origin"))


class AttsSinceTests(SofaTestCase):

    def test_atts_since_leaves_what_the_client_has_as_stubs(self):
        import json
        import requests
        db = self.new_db()
        rev1 = self.admin.put_attachment(db=db, doc_id="d", attachment_name="old.txt", attachment=io.BytesIO(b"old"),
                                         content_type="text/plain").get_result()["rev"]
        rev2 = self.admin.put_attachment(db=db, doc_id="d", attachment_name="new.txt", attachment=io.BytesIO(b"new"),
                                         content_type="text/plain", rev=rev1).get_result()["rev"]
        auth = (ADMIN_NAME, ADMIN_PASSWORD)
        full = requests.get(URL + "/" + db + "/d", params={"attachments": "true"}, auth=auth, timeout=10).json()
        self.assertEqual(base64.b64decode(full["_attachments"]["old.txt"]["data"]), b"old")
        since = requests.get(URL + "/" + db + "/d", auth=auth, timeout=10,
                             params={"attachments": "true", "atts_since": json.dumps([rev1]), "rev": rev2}).json()
        self.assertTrue(since["_attachments"]["old.txt"].get("stub"))
        self.assertNotIn("data", since["_attachments"]["old.txt"])
        self.assertEqual(base64.b64decode(since["_attachments"]["new.txt"]["data"]), b"new")


class ListingsTests(SofaTestCase):

    def test_local_docs_and_design_docs_listings(self):
        import requests
        db = self.new_db()
        self.admin.put_local_document(db=db, doc_id="b", document={"v": 2})
        self.admin.put_local_document(db=db, doc_id="a", document={"v": 1})
        self.put_doc(db, "plain", {"v": 0})
        self.admin.put_design_document(db=db, ddoc="d1", design_document={"language": "javascript"})
        auth = (ADMIN_NAME, ADMIN_PASSWORD)
        local = requests.get(URL + "/" + db + "/_local_docs", params={"include_docs": "true"}, auth=auth, timeout=10).json()
        self.assertEqual([row["id"] for row in local["rows"]], ["_local/a", "_local/b"])
        self.assertEqual([row["doc"]["v"] for row in local["rows"]], [1, 2])
        self.assertTrue(all(row["value"]["rev"].startswith("0-") for row in local["rows"]))
        # CouchDB does not count local documents: both are null.
        self.assertEqual((local["total_rows"], local["offset"]), (None, None))
        design = requests.get(URL + "/" + db + "/_design_docs", auth=auth, timeout=10).json()
        self.assertEqual([row["id"] for row in design["rows"]], ["_design/d1"])
        everything = [row["id"] for row in self.admin.post_all_docs(db=db).get_result()["rows"]]
        self.assertEqual(everything, ["_design/d1", "plain"])

    def test_database_maintenance_endpoints(self):
        import requests
        db = self.new_db()
        auth = (ADMIN_NAME, ADMIN_PASSWORD)
        rev = self.put_doc(db, "p", {"v": 1})
        self.assertEqual(requests.post(URL + "/" + db + "/_compact", auth=auth, json={}, timeout=30).status_code, 202)
        self.assertEqual(requests.post(URL + "/" + db + "/_ensure_full_commit", auth=auth, json={}, timeout=10).json()["ok"], True)
        self.assertEqual(requests.get(URL + "/" + db + "/_revs_limit", auth=auth, timeout=10).json(), 1000)
        self.assertEqual(requests.put(URL + "/" + db + "/_revs_limit", auth=auth, data="500", timeout=10).json(), {"ok": True})
        before = requests.get(URL + "/" + db, auth=auth, timeout=10).json()["purge_seq"]
        purged = requests.post(URL + "/" + db + "/_purge", auth=auth, json={"p": [rev]}, timeout=10)
        self.assertEqual(purged.status_code, 201, purged.text)
        self.assertEqual(purged.json()["purged"], {"p": [rev]})
        # purge_seq moves on with a purge (purge.exs).
        self.assertNotEqual(requests.get(URL + "/" + db, auth=auth, timeout=10).json()["purge_seq"], before)
        self.assert_api_error(lambda: self.admin.get_document(db=db, doc_id="p"), 404, "not_found")

    def test_copy_range_and_eventsource(self):
        import requests
        db = self.new_db()
        auth = (ADMIN_NAME, ADMIN_PASSWORD)
        self.put_doc(db, "src", {"v": 7})
        copied = requests.request("COPY", URL + "/" + db + "/src", headers={"Destination": "dst"}, auth=auth, timeout=10)
        self.assertEqual(copied.status_code, 201, copied.text)
        self.assertEqual(self.admin.get_document(db=db, doc_id="dst").get_result()["v"], 7)
        rev = self.admin.put_attachment(db=db, doc_id="r", attachment_name="r.bin", attachment=io.BytesIO(bytes(range(100))),
                                        content_type="application/octet-stream").get_result()["rev"]
        part = requests.get(URL + "/" + db + "/r/r.bin", headers={"Range": "bytes=10-19"}, auth=auth, timeout=10)
        self.assertEqual(part.status_code, 206)
        self.assertEqual(part.content, bytes(range(10, 20)))
        self.assertEqual(part.headers["Content-Range"], "bytes 10-19/100")
        events = requests.get(URL + "/" + db + "/_changes", params={"feed": "eventsource", "since": "0", "timeout": "200"},
                              auth=auth, stream=True, timeout=10)
        self.assertTrue(events.headers["Content-Type"].startswith("text/event-stream"))
        data = [line[6:] for line in events.iter_lines(decode_unicode=True) if line.startswith("data: ")]
        self.assertEqual(sorted(__import__("json").loads(item)["id"] for item in data), ["dst", "r", "src"])

    def test_replication_progress_endpoints(self):
        import requests
        auth = (ADMIN_NAME, ADMIN_PASSWORD)
        source, target = self.new_db(), self.new_db()
        self.put_doc(source, "x", {"v": 1})
        started = requests.post(URL + "/_replicate", auth=auth, json={"source": source, "target": target, "continuous": True},
                                timeout=30)
        self.assertEqual(started.status_code, 202, started.text)
        job = started.json()["_local_id"]
        jobs = requests.get(URL + "/_scheduler/jobs", auth=auth, timeout=10).json()
        self.assertIn(job, [entry["id"] for entry in jobs["jobs"]])
        tasks = requests.get(URL + "/_active_tasks", auth=auth, timeout=10).json()
        self.assertIn(job, [task["replication_id"] for task in tasks])
        cancelled = requests.post(URL + "/_replicate", auth=auth, json={"source": source, "target": target, "cancel": True},
                                  timeout=30)
        self.assertEqual(cancelled.status_code, 200, cancelled.text)


class ViewTests(SofaTestCase):
    """Views: JavaScript map functions in design documents, indexed by the query workers."""

    DESIGN = {
        "language": "javascript",
        "views": {
            "by_type": {"map": "function (doc) { if (doc.type) { emit(doc.type, doc.age || 0); } }", "reduce": "_count"},
            "ages": {"map": "function (doc) { if (doc.born) { emit(doc.born, doc.age); } }", "reduce": "_stats"},
            "total": {"map": "function (doc) { if (doc.age) { emit(doc._id, doc.age); } }",
                      "reduce": "function (keys, values, rereduce) { return sum(values); }"},
            "picky": {"map": "function (doc) { if (doc.type === 'dog') { throw new Error('no dogs'); } emit(doc._id, null); }"},
        },
    }

    def _animals(self):
        db = self.new_db()
        self.admin.post_bulk_docs(db=db, bulk_docs={"docs": [
            {"_id": "a", "type": "cat", "age": 3, "born": [2020, 5]},
            {"_id": "b", "type": "dog", "age": 5, "born": [2019, 1]},
            {"_id": "c", "type": "cat", "age": 7, "born": [2020, 9]},
            {"_id": "d", "type": "bird"}]})
        self.admin.put_design_document(db=db, ddoc="zoo", design_document=self.DESIGN)
        return db

    def view(self, db, name, **params):
        import json
        import requests
        query = {key: (value if key == "update" else json.dumps(value)) for key, value in params.items()}
        response = requests.get(URL + "/" + db + "/_design/zoo/_view/" + name, params=query,
                                auth=(ADMIN_NAME, ADMIN_PASSWORD), timeout=60)
        self.assertEqual(response.status_code, 200, response.text)
        return response.json()

    def test_rows_keys_ranges_and_docs(self):
        db = self._animals()
        rows = self.view(db, "by_type", reduce=False)
        self.assertEqual(rows["total_rows"], 4)
        self.assertEqual([(r["key"], r["id"]) for r in rows["rows"]], [("bird", "d"), ("cat", "a"), ("cat", "c"), ("dog", "b")])
        cats = self.view(db, "by_type", reduce=False, key="cat", include_docs=True)
        self.assertEqual([r["doc"]["age"] for r in cats["rows"]], [3, 7])
        self.assertEqual(cats["offset"], 1)
        ranged = self.view(db, "by_type", reduce=False, startkey="c", endkey="d", inclusive_end=False)
        self.assertEqual([r["id"] for r in ranged["rows"]], ["a", "c"])
        down = self.view(db, "by_type", reduce=False, descending=True, limit=2, skip=1)
        self.assertEqual([r["id"] for r in down["rows"]], ["c", "a"])
        # The same through the client library's view call.
        result = self.admin.post_view(db=db, ddoc="zoo", view="by_type", keys=["dog", "bird"], reduce=False).get_result()
        self.assertEqual([r["id"] for r in result["rows"]], ["b", "d"])

    def test_reductions_and_group_levels(self):
        db = self._animals()
        self.assertEqual(self.view(db, "by_type")["rows"], [{"key": None, "value": 4}])
        self.assertEqual(self.view(db, "by_type", group=True)["rows"],
                         [{"key": "bird", "value": 1}, {"key": "cat", "value": 2}, {"key": "dog", "value": 1}])
        years = self.view(db, "ages", group_level=1)["rows"]
        self.assertEqual([(r["key"], r["value"]["count"], r["value"]["sum"]) for r in years], [([2019], 1, 5), ([2020], 2, 10)])
        self.assertEqual(self.view(db, "total")["rows"], [{"key": None, "value": 15}])

    def test_updates_deletions_and_a_map_that_throws(self):
        db = self._animals()
        self.assertEqual(self.view(db, "by_type", group=True)["rows"][1], {"key": "cat", "value": 2})
        a = self.admin.get_document(db=db, doc_id="a").get_result()
        self.admin.put_document(db=db, doc_id="a", document=dict(a, type="dog"))
        c = self.admin.get_document(db=db, doc_id="c").get_result()
        self.admin.delete_document(db=db, doc_id="c", rev=c["_rev"])
        stale = self.view(db, "by_type", group=True, update="false")["rows"]
        self.assertEqual(stale[1], {"key": "cat", "value": 2})  # not brought up to date
        fresh = self.view(db, "by_type", group=True)["rows"]
        self.assertEqual(fresh, [{"key": "bird", "value": 1}, {"key": "dog", "value": 2}])
        # The map throws on dogs: those documents are left out, the others indexed.
        self.assertEqual([r["id"] for r in self.view(db, "picky")["rows"]], ["d"])
        # Changed code rebuilds the index.
        design = self.admin.get_design_document(db=db, ddoc="zoo").get_result()
        design["views"]["picky"]["map"] = "function (doc) { emit(doc._id, 1); }"
        self.admin.put_design_document(db=db, ddoc="zoo", design_document=design)
        self.assertEqual([r["id"] for r in self.view(db, "picky")["rows"]], ["a", "b", "d"])

    def test_a_map_that_loops_is_bounded_and_other_queries_go_on(self):
        # Another user's requests meanwhile: each HTTP user has a share of the query workers of
        # their own (the cluster runs two), so one user's long view query does not hold them up.
        import threading
        import requests
        db = self.new_db()
        name, password = self.new_user()
        self.admin.put_security(db=db, members={"names": [name], "roles": []}, admins={"names": [], "roles": []})
        other = client_with(BasicAuthenticator(name, password))
        self.put_doc(db, "only", {"v": 1})
        self.admin.put_design_document(db=db, ddoc="zoo", design_document={
            "views": {"spin": {"map": "function (doc) { while (true) {} }"}}})
        answers = {}

        def spin():
            answers["spin"] = requests.get(URL + "/" + db + "/_design/zoo/_view/spin", auth=(ADMIN_NAME, ADMIN_PASSWORD), timeout=60)
        worker = threading.Thread(target=spin)
        worker.start()
        started = time.monotonic()
        # Meanwhile, other requests are answered at once.
        for _ in range(5):
            self.assertEqual(other.get_document(db=db, doc_id="only").get_result()["v"], 1)
            found = requests.post(URL + "/" + db + "/_find", json={"selector": {"v": 1}}, auth=(name, password), timeout=10)
            self.assertEqual(len(found.json()["docs"]), 1)
        self.assertLess(time.monotonic() - started, 4)
        worker.join(timeout=60)
        self.assertFalse(worker.is_alive())
        # A map that runs out of time fails the view's update, as CouchDB's does (its error is
        # "timeout"): the worker is not held by it document after document.
        self.assertEqual((answers["spin"].status_code, answers["spin"].json()["error"]), (504, "timeout"))


    def test_view_upkeep_info_cleanup_and_compaction(self):
        import requests
        db = self._animals()
        auth = (ADMIN_NAME, ADMIN_PASSWORD)
        self.view(db, "by_type")
        info = requests.get(URL + "/" + db + "/_design/zoo/_info", auth=auth, timeout=30).json()
        self.assertEqual(info["name"], "zoo")
        self.assertEqual(info["view_index"]["language"], "javascript")
        self.assertGreater(info["view_index"]["sizes"]["file"], 0)
        missing = requests.get(URL + "/" + db + "/_design/nope/_info", auth=auth, timeout=30)
        self.assertEqual(missing.status_code, 404)
        compacted = requests.post(URL + "/" + db + "/_compact/zoo", auth=auth, json={}, timeout=30)
        self.assertEqual(compacted.status_code, 202, compacted.text)
        self.assertEqual(compacted.json(), {"ok": True})
        # A view dropped from the design document: its index goes at _view_cleanup; the rest stay.
        design = self.admin.get_design_document(db=db, ddoc="zoo").get_result()
        del design["views"]["by_type"]
        self.admin.put_design_document(db=db, ddoc="zoo", design_document=design)
        cleaned = requests.post(URL + "/" + db + "/_view_cleanup", auth=auth, json={}, timeout=30)
        self.assertEqual(cleaned.status_code, 202, cleaned.text)
        self.assertEqual(self.view(db, "total")["rows"], [{"key": None, "value": 15}])
        name, password = self.new_user()
        self.admin.put_security(db=db, members={"names": [name], "roles": []}, admins={"names": [], "roles": []})
        refused = requests.post(URL + "/" + db + "/_view_cleanup", auth=(name, password), json={}, timeout=30)
        self.assertEqual((refused.status_code, refused.json()["reason"]), (401, "You are not a server or db admin."))


class DesignFunctionTests(SofaTestCase):
    """validate_doc_update on writes and JavaScript filters on _changes, as CouchDB runs them."""

    DESIGN = {
        "validate_doc_update": "function (newDoc, oldDoc, userCtx) {"
                               " if (!newDoc._deleted && typeof newDoc.n !== 'number') { throw({forbidden: 'n must be a number'}); }"
                               " if (newDoc._deleted && userCtx.roles.indexOf('_admin') < 0) { throw({unauthorized: 'admins delete'}); } }",
        "filters": {"big": "function (doc, req) { return !doc._deleted && doc.n >= Number(req.query.min || 0); }"},
    }

    def test_validation_refuses_writes_with_couchdb_errors(self):
        import requests
        db = self.new_db()
        self.admin.put_design_document(db=db, ddoc="rules", design_document=self.DESIGN)
        self.assert_api_error(lambda: self.admin.put_document(db=db, doc_id="bad", document={"n": "x"}), 403, "forbidden")
        response = requests.put(URL + "/" + db + "/bad", json={"n": "x"}, auth=(ADMIN_NAME, ADMIN_PASSWORD), timeout=30)
        self.assertEqual(response.json(), {"error": "forbidden", "reason": "n must be a number"})
        rev = self.put_doc(db, "good", {"n": 1})
        results = self.admin.post_bulk_docs(db=db, bulk_docs={"docs": [{"_id": "b1", "n": 2}, {"_id": "b2"}]}).get_result()
        self.assertEqual([r.get("error") for r in results], [None, "forbidden"])
        self.assertEqual(results[1]["reason"], "n must be a number")
        # A replicated write (new_edits=false) is validated too.
        replicated = self.admin.post_bulk_docs(db=db, bulk_docs={"docs": [{"_id": "r1", "_rev": "1-abc", "n": "no"}],
                                                                 "new_edits": False}).get_result()
        self.assertEqual(replicated[0]["error"], "forbidden")
        self.assert_api_error(lambda: self.admin.get_document(db=db, doc_id="r1"), 404, "not_found")
        name, password = self.new_user()
        self.admin.put_security(db=db, members={"names": [name], "roles": []}, admins={"names": [], "roles": []})
        member = client_with(BasicAuthenticator(name, password))
        self.assert_api_error(lambda: member.delete_document(db=db, doc_id="good", rev=rev), 401, "unauthorized")
        self.admin.delete_document(db=db, doc_id="good", rev=rev)

    def test_javascript_filter_on_changes(self):
        import requests
        db = self.new_db()
        self.admin.put_design_document(db=db, ddoc="rules", design_document=self.DESIGN)
        self.admin.post_bulk_docs(db=db, bulk_docs={"docs": [{"_id": "n%d" % n, "n": n} for n in range(10)]})
        auth = (ADMIN_NAME, ADMIN_PASSWORD)
        result = requests.get(URL + "/" + db + "/_changes", params={"filter": "rules/big", "min": "7"}, auth=auth, timeout=30).json()
        self.assertEqual([change["id"] for change in result["results"]], ["n7", "n8", "n9"])
        # Through the client library, with the documents, and limited; then a long poll that waits for a match.
        limited = self.admin.post_changes(db=db, filter="rules/big", include_docs=True, limit=2).get_result()
        self.assertEqual([(c["id"], c["doc"]["n"]) for c in limited["results"]], [("n0", 0), ("n1", 1)])
        later = requests.get(URL + "/" + db + "/_changes", auth=auth, timeout=30,
                             params={"filter": "rules/big", "min": "100", "since": result["last_seq"]}).json()
        self.assertEqual(later["results"], [])
        self.put_doc(db, "small", {"n": 3})
        self.put_doc(db, "huge", {"n": 500})
        found = requests.get(URL + "/" + db + "/_changes", auth=auth, timeout=30,
                             params={"filter": "rules/big", "min": "100", "since": result["last_seq"], "feed": "longpoll"}).json()
        self.assertEqual([c["id"] for c in found["results"]], ["huge"])
        missing = requests.get(URL + "/" + db + "/_changes", params={"filter": "rules/nope"}, auth=auth, timeout=30)
        self.assertEqual(missing.status_code, 404)

    def test_replications_filtered_by_a_design_filter_with_query_params(self):
        # CouchDB's `filter: "ddoc/name"` with `query_params`, on /_replicate and in a _replicator document.
        import time
        import requests
        auth = (ADMIN_NAME, ADMIN_PASSWORD)
        source, target, other = self.new_db(), self.new_db(), self.new_db()
        self.admin.put_design_document(db=source, ddoc="rules", design_document={"filters": self.DESIGN["filters"]})
        self.admin.post_bulk_docs(db=source, bulk_docs={"docs": [{"_id": "n%d" % n, "n": n} for n in range(10)]})
        response = requests.post(URL + "/_replicate", auth=auth, timeout=120, json={
            "source": source, "target": target, "filter": "rules/big", "query_params": {"min": "6"}})
        self.assertEqual(response.status_code, 200, response.text)
        rows = self.admin.post_all_docs(db=target).get_result()["rows"]
        self.assertEqual([row["id"] for row in rows], ["n6", "n7", "n8", "n9"])
        missing = requests.post(URL + "/_replicate", auth=auth, timeout=120, json={
            "source": source, "target": target, "filter": "rules/nope"})
        self.assertEqual((missing.status_code, missing.json()["error"]), (404, "not_found"), missing.text)
        self.assertIn("rules/nope", missing.json()["reason"])
        # A _replicator document: the target's feed is followed (long polls) until the documents arrived.
        created = requests.put(URL + "/_replicator/filtered-" + other, auth=auth, timeout=30, json={
            "source": source, "target": other, "filter": "rules/big", "query_params": {"min": "8"}})
        self.assertIn(created.status_code, (201, 202), created.text)
        deadline, since, seen = time.monotonic() + 60, "0", []
        while sorted(seen) != ["n8", "n9"] and time.monotonic() < deadline:
            feed = requests.get(URL + "/" + other + "/_changes", auth=auth, timeout=30,
                                params={"feed": "longpoll", "since": since, "timeout": "5000"}).json()
            seen += [change["id"] for change in feed["results"]]
            since = feed["last_seq"]
        self.assertEqual(sorted(seen), ["n8", "n9"])
        self.assertEqual([row["id"] for row in self.admin.post_all_docs(db=other).get_result()["rows"]], ["n8", "n9"])


class AttachmentTests(SofaTestCase):

    def _roundtrip(self, db, doc_id, size, content_type):
        data = os.urandom(size)
        rev = self.put_doc(db, doc_id, {"size": size})
        result = self.admin.put_attachment(
            db=db, doc_id=doc_id, attachment_name="blob.bin",
            attachment=io.BytesIO(data), content_type=content_type, rev=rev).get_result()
        self.assertTrue(result["ok"])
        self.assertTrue(result["rev"].startswith("2-"))
        response = self.admin.get_attachment(db=db, doc_id=doc_id, attachment_name="blob.bin")
        got = attachment_bytes(response)
        self.assertEqual(len(got), size)
        self.assertEqual(got, data)
        self.assertEqual(response.get_headers().get("Content-Type"), content_type)
        stub = self.admin.get_document(db=db, doc_id=doc_id).get_result()["_attachments"]["blob.bin"]
        self.assertEqual(stub["content_type"], content_type)
        self.assertEqual(stub["length"], size)
        self.assertTrue(stub["stub"])
        # CouchDB: "starts with prefix which announce hash type (md5-) and continues with
        # Base64-encoded hash digest"
        self.assertRegex(stub["digest"], r"^[a-z0-9]+-[A-Za-z0-9+/]+=*$")
        return data, result["rev"]

    def test_attachment_empty(self):
        db = self.new_db()
        self._roundtrip(db, "empty", 0, "application/octet-stream")

    def test_attachment_10_bytes(self):
        db = self.new_db()
        self._roundtrip(db, "small", 10, "image/png")

    def test_attachment_1_mib(self):
        db = self.new_db()
        self._roundtrip(db, "big", 1024 * 1024, "application/x-sofa-test")

    def test_get_document_with_inline_attachments(self):
        db = self.new_db()
        data, rev = self._roundtrip(db, "inl", 10, "text/plain")
        doc = self.admin.get_document(db=db, doc_id="inl", attachments=True).get_result()
        att = doc["_attachments"]["blob.bin"]
        self.assertEqual(doc["_rev"], rev)
        self.assertEqual(att["content_type"], "text/plain")
        self.assertNotIn("stub", att)
        self.assertEqual(base64.b64decode(att["data"]), data)

    def test_inline_attachment_in_document_body(self):
        db = self.new_db()
        data = os.urandom(300)
        text = "hello, sofa".encode()
        rev = self.put_doc(db, "body", {"kind": "inline", "_attachments": {
            "raw.bin": {"content_type": "application/octet-stream", "data": base64.b64encode(data).decode()},
            "hello.txt": {"content_type": "text/plain", "data": base64.b64encode(text).decode()},
        }})
        self.assertTrue(rev.startswith("1-"))
        got = self.admin.get_attachment(db=db, doc_id="body", attachment_name="raw.bin")
        self.assertEqual(attachment_bytes(got), data)
        self.assertEqual(got.get_headers().get("Content-Type"), "application/octet-stream")
        got = self.admin.get_attachment(db=db, doc_id="body", attachment_name="hello.txt")
        self.assertEqual(attachment_bytes(got), text)
        self.assertTrue(got.get_headers().get("Content-Type").startswith("text/plain"))
        doc = self.admin.get_document(db=db, doc_id="body").get_result()
        self.assertEqual(doc["kind"], "inline")
        self.assertEqual(doc["_attachments"]["raw.bin"]["length"], 300)
        self.assertTrue(doc["_attachments"]["raw.bin"]["stub"])

        # an update that keeps the stub keeps the attachment
        stubs = doc["_attachments"]
        rev2 = self.put_doc(db, "body", {"_rev": rev, "kind": "updated", "_attachments": stubs})
        self.assertEqual(
            self.admin.get_attachment(db=db, doc_id="body", attachment_name="raw.bin", rev=rev2)
            .get_result().content, data)
        self.assert_api_error(
            lambda: self.admin.get_attachment(db=db, doc_id="body", attachment_name="nope.bin"),
            404, "not_found")


# ================================================================================================
# The client's default configuration: gzip-compressed request bodies
# ================================================================================================

class GzipTests(SofaTestCase):

    def test_gzip_request_body(self):
        db = self.new_db()
        gzip_client = client_with(BasicAuthenticator(ADMIN_NAME, ADMIN_PASSWORD), gzip=True)
        self.assertTrue(gzip_client.get_enable_gzip_compression())
        result = gzip_client.put_document(db=db, doc_id="gz", document={"v": "compressed"}).get_result()
        self.assertTrue(result["ok"])
        doc = self.admin.get_document(db=db, doc_id="gz").get_result()
        self.assertEqual(doc, {"_id": "gz", "_rev": result["rev"], "v": "compressed"})
        results = gzip_client.post_bulk_docs(db=db, bulk_docs={"docs": [{"_id": "g2", "n": 2}]}).get_result()
        self.assertTrue(results[0]["ok"])
        self.assertEqual(self.admin.get_document(db=db, doc_id="g2").get_result()["n"], 2)


# ================================================================================================
# Security objects
# ================================================================================================

class SecurityTests(SofaTestCase):

    def test_security_roundtrip(self):
        db = self.new_db()
        initial = self.admin.get_security(db=db).get_result()
        self.assertFalse(initial.get("members", {}).get("names"))
        self.assertFalse(initial.get("admins", {}).get("names"))
        result = self.admin.put_security(
            db=db,
            admins={"names": ["boss"], "roles": ["bosses"]},
            members={"names": ["alice", "bob"], "roles": ["readers"]},
        ).get_result()
        self.assertEqual(result, {"ok": True})
        security = self.admin.get_security(db=db).get_result()
        self.assertEqual(security["admins"], {"names": ["boss"], "roles": ["bosses"]})
        self.assertEqual(security["members"], {"names": ["alice", "bob"], "roles": ["readers"]})
        # replace it
        self.admin.put_security(db=db, admins={"names": [], "roles": []}, members={"names": ["carol"], "roles": []})
        security = self.admin.get_security(db=db).get_result()
        self.assertEqual(security["members"]["names"], ["carol"])
        self.assertEqual(security["admins"]["names"], [])


# ================================================================================================
# Mango: _index, _find, _explain
# ================================================================================================

class MangoTests(SofaTestCase):

    def _people(self):
        db = self.new_db()
        people = [
            {"_id": "ann", "age": 31, "city": "Oslo", "tags": ["a", "b"], "pet": {"kind": "cat"}},
            {"_id": "bob", "age": 25, "city": "Rome", "tags": ["b"], "pet": {"kind": "dog"}},
            {"_id": "cid", "age": 42, "tags": [], "pet": {"kind": "cat"}},
            {"_id": "dee", "age": 19, "city": "Oslo", "tags": ["c", "a"]},
        ]
        self.admin.post_bulk_docs(db=db, bulk_docs={"docs": people})
        return db

    def find_ids(self, db, selector, **options):
        result = self.admin.post_find(db=db, selector=selector, fields=["_id"], sort=[{"_id": "asc"}], **options)
        return [doc["_id"] for doc in result.get_result()["docs"]]

    def test_a_large_result_streams_in_pages(self):
        # More documents than one page of the query workers: all of them, in order, with fields.
        import requests
        db = self.new_db()
        for start in range(0, 1200, 400):
            self.admin.post_bulk_docs(db=db, bulk_docs={"docs": [{"_id": "p%05d" % n, "n": n, "pad": "x" * 50}
                                                                 for n in range(start, start + 400)]})
        result = self.admin.post_find(db=db, selector={"n": {"$gte": 100}}, fields=["_id", "n"], sort=[{"_id": "asc"}],
                                      limit=5000).get_result()
        self.assertEqual([doc["n"] for doc in result["docs"]], list(range(100, 1200)))
        self.assertEqual(set(result["docs"][0].keys()), {"_id", "n"})
        self.assertEqual(result["bookmark"], requests.post(URL + "/" + db + "/_find", auth=(ADMIN_NAME, ADMIN_PASSWORD), timeout=30,
                                                           json={"selector": {"n": {"$gte": 100}}, "limit": 5000}).json()["bookmark"])

    def test_operators(self):
        db = self._people()
        cases = [
            ({"age": {"$gt": 30}}, ["ann", "cid"]),
            ({"age": {"$gte": 25, "$lt": 42}}, ["ann", "bob"]),
            ({"city": "Oslo"}, ["ann", "dee"]),
            ({"city": {"$ne": "Oslo"}}, ["bob"]),
            ({"city": {"$exists": False}}, ["cid"]),
            ({"pet.kind": "cat"}, ["ann", "cid"]),
            ({"pet": {"kind": "dog"}}, ["bob"]),
            ({"age": {"$in": [19, 42]}}, ["cid", "dee"]),
            ({"age": {"$nin": [19, 42]}}, ["ann", "bob"]),
            ({"tags": {"$size": 0}}, ["cid"]),
            ({"tags": {"$all": ["a", "b"]}}, ["ann"]),
            ({"tags": {"$elemMatch": {"$eq": "c"}}}, ["dee"]),
            ({"tags": {"$allMatch": {"$eq": "b"}}}, ["bob"]),
            ({"age": {"$mod": [2, 1]}}, ["ann", "bob", "dee"]),
            ({"city": {"$regex": "^R"}}, ["bob"]),
            ({"city": {"$type": "string"}}, ["ann", "bob", "dee"]),
            ({"$or": [{"age": 19}, {"city": "Rome"}]}, ["bob", "dee"]),
            ({"$and": [{"city": "Oslo"}, {"age": {"$gt": 20}}]}, ["ann"]),
            ({"$nor": [{"city": "Oslo"}, {"age": 42}]}, ["bob"]),
            ({"age": {"$not": {"$gt": 30}}}, ["bob", "dee"]),
        ]
        for selector, expected in cases:
            with self.subTest(selector=selector):
                self.assertEqual(self.find_ids(db, selector), expected)

    def test_fields_sort_limit_skip_bookmark(self):
        db = self._people()
        # A sort needs an index whose fields begin with the sort's (CouchDB's rule).
        self.assert_api_error(lambda: self.admin.post_find(db=db, selector={"age": {"$gt": 0}}, sort=[{"age": "desc"}]),
                              400, "no_usable_index")
        self.admin.post_index(db=db, index={"fields": ["age"]})
        result = self.admin.post_find(db=db, selector={"age": {"$gt": 0}}, fields=["_id", "pet.kind"],
                                      sort=[{"age": "desc"}], limit=2).get_result()
        self.assertEqual(result["docs"], [{"_id": "cid", "pet": {"kind": "cat"}}, {"_id": "ann", "pet": {"kind": "cat"}}])
        following = self.admin.post_find(db=db, selector={"age": {"$gt": 0}}, fields=["_id"], sort=[{"age": "desc"}],
                                         limit=2, bookmark=result["bookmark"]).get_result()
        self.assertEqual([d["_id"] for d in following["docs"]], ["bob", "dee"])
        skipped = self.admin.post_find(db=db, selector={"age": {"$gt": 0}}, fields=["_id"], sort=[{"age": "asc"}],
                                       skip=3).get_result()
        self.assertEqual([d["_id"] for d in skipped["docs"]], ["cid"])
        whole = self.admin.post_find(db=db, selector={"_id": "bob"}).get_result()["docs"][0]
        self.assertEqual(whole["city"], "Rome")
        self.assertRegex(whole["_rev"], REV_PATTERN)

    def test_index_lifecycle_and_explain(self):
        db = self._people()
        created = self.admin.post_index(db=db, index={"fields": ["age"]}, name="by-age", ddoc="people").get_result()
        self.assertEqual(created["result"], "created")
        self.assertEqual(created["name"], "by-age")
        again = self.admin.post_index(db=db, index={"fields": ["age"]}, name="by-age", ddoc="people").get_result()
        self.assertEqual(again["result"], "exists")
        names = [index["name"] for index in self.admin.get_indexes_information(db=db).get_result()["indexes"]]
        self.assertIn("_all_docs", names)
        self.assertIn("by-age", names)
        explained = self.admin.post_explain(db=db, selector={"age": {"$gt": 30}}).get_result()
        self.assertEqual(explained["index"]["name"], "by-age")
        self.assertEqual(self.find_ids(db, {"age": {"$gt": 30}}), ["ann", "cid"])
        self.admin.delete_index(db=db, ddoc="people", type="json", index="by-age")
        names = [index["name"] for index in self.admin.get_indexes_information(db=db).get_result()["indexes"]]
        self.assertNotIn("by-age", names)

    def test_bad_selectors_are_400(self):
        db = self._people()
        self.assert_api_error(lambda: self.admin.post_find(db=db, selector={"age": {"$bogus": 1}}), 400)
        self.assert_api_error(lambda: self.admin.post_find(db=db, selector={"age": {"$size": "x"}}), 400)


# ================================================================================================
# Users, design documents, replication, continuous changes, a 64 MiB attachment
# ================================================================================================

class MoreTests(SofaTestCase):

    def test_a_user_reads_and_changes_their_own_document_but_not_their_roles(self):
        name, password = self.new_user()
        user = client_with(BasicAuthenticator(name, password))
        doc_id = "org.couchdb.user:" + name
        own = user.get_document(db="_users", doc_id=doc_id).get_result()
        self.assertEqual(own["name"], name)
        for secret in ("password", "derived_key"):
            self.assertNotIn(secret, own)
        # Their roles: refused. Their password: taken, and the old one stops working.
        self.assert_api_error(lambda: user.put_document(
            db="_users", doc_id=doc_id, document=dict(own, roles=["boss"])), 403, "forbidden")
        new_password = uuid.uuid4().hex
        user.put_document(db="_users", doc_id=doc_id, document={
            "_rev": own["_rev"], "name": name, "type": "user", "roles": [], "password": new_password})
        self.assert_api_error(lambda: client_with(BasicAuthenticator(name, password)).get_session_information(), 401)
        renamed = client_with(BasicAuthenticator(name, new_password))
        self.assertEqual(renamed.get_session_information().get_result()["userCtx"]["name"], name)
        # Another user's document is not theirs to read.
        other, _ = self.new_user()
        self.assert_api_error(lambda: renamed.get_document(db="_users", doc_id="org.couchdb.user:" + other), (403, 404))

    def test_a_removed_role_loses_access_on_the_next_request(self):
        db = self.new_db()
        name, password = self.new_user(roles=["readers"])
        self.admin.put_security(db=db, members={"names": [], "roles": ["readers"]}, admins={"names": [], "roles": []})
        self.put_doc(db, "d", {"v": 1})
        user = client_with(BasicAuthenticator(name, password))
        self.assertEqual(user.get_document(db=db, doc_id="d").get_result()["v"], 1)
        doc_id = "org.couchdb.user:" + name
        record = self.admin.get_document(db="_users", doc_id=doc_id).get_result()
        self.admin.put_document(db="_users", doc_id=doc_id, document=dict(record, roles=[]))
        self.assert_api_error(lambda: user.get_document(db=db, doc_id="d"), 403, "forbidden")

    def test_design_documents_are_stored_and_written_only_by_database_admins(self):
        db = self.new_db()
        name, password = self.new_user()
        self.admin.put_security(db=db, members={"names": [name], "roles": []}, admins={"names": [], "roles": []})
        design = {"views": {"all": {"map": "function (doc) { emit(doc._id, null); }"}}, "language": "javascript"}
        rev = self.admin.put_design_document(db=db, ddoc="app", design_document=design).get_result()["rev"]
        stored = self.admin.get_design_document(db=db, ddoc="app").get_result()
        self.assertEqual(stored["_id"], "_design/app")
        self.assertEqual(stored["_rev"], rev)
        self.assertEqual(stored["views"], design["views"])
        member = client_with(BasicAuthenticator(name, password))
        self.assert_api_error(lambda: member.put_design_document(db=db, ddoc="mine", design_document=design), 403, "forbidden")
        self.assertEqual(member.get_design_document(db=db, ddoc="app").get_result()["_rev"], rev)

    def test_replicate_between_two_databases(self):
        import requests
        source, target = self.new_db(), self.new_db()
        for index in range(20):
            self.put_doc(source, "doc%02d" % index, {"n": index})
        response = requests.post(URL + "/_replicate", auth=(ADMIN_NAME, ADMIN_PASSWORD),
                                 json={"source": source, "target": target}, timeout=120)
        self.assertEqual(response.status_code, 200, response.text)
        self.assertTrue(response.json()["ok"])
        rows = self.admin.post_all_docs(db=target).get_result()["rows"]
        self.assertEqual([row["id"] for row in rows], ["doc%02d" % i for i in range(20)])

    def test_continuous_changes_stream(self):
        import json
        import requests
        db = self.new_db()
        for index in range(3):
            self.put_doc(db, "c%d" % index, {"n": index})
        response = requests.get(URL + "/" + db + "/_changes", auth=(ADMIN_NAME, ADMIN_PASSWORD), stream=True,
                                params={"feed": "continuous", "since": "0", "heartbeat": "200", "include_docs": "true"},
                                timeout=30)
        self.assertEqual(response.status_code, 200)
        seen = []
        lines = response.iter_lines()
        while len(seen) < 4:
            line = next(lines)
            if not line:
                continue  # a heartbeat
            change = json.loads(line)
            seen.append(change["id"])
            if len(seen) == 3:
                self.put_doc(db, "late", {"late": True})  # arrives on the open feed
        response.close()
        self.assertEqual(seen, ["c0", "c1", "c2", "late"])

    def test_attachment_64_mib(self):
        db = self.new_db()
        data = os.urandom(64 << 20)
        rev = self.admin.put_attachment(db=db, doc_id="big", attachment_name="big.bin", attachment=io.BytesIO(data),
                                        content_type="application/octet-stream").get_result()["rev"]
        got = self.admin.get_attachment(db=db, doc_id="big", attachment_name="big.bin", rev=rev)
        self.assertEqual(attachment_bytes(got), data)
        stub = self.admin.get_document(db=db, doc_id="big").get_result()["_attachments"]["big.bin"]
        self.assertEqual(stub["length"], 64 << 20)
        self.assertTrue(stub["stub"])


def main():
    missing = [n for n, v in (("SOFA_HTTP_URL", URL), ("SOFA_ADMIN_NAME", ADMIN_NAME),
                              ("SOFA_ADMIN_PASSWORD", ADMIN_PASSWORD)) if not v]
    if missing:
        print("missing environment: " + ", ".join(missing), file=sys.stderr)
        return 2
    program = unittest.main(exit=False, verbosity=2)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
