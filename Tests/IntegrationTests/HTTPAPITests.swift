import Foundation
import SofaCluster
import SofaCore
import SofaTestSupport
import Testing

/// CouchDB's HTTP API (sofa-http) through real processes, driven from Python: by a real CouchDB
/// client library (IBM's `ibmcloudant`, from PyPI, installed by `scripts/dev.sh test`), by a small
/// CouchDB-protocol replicator between two clusters, and by raw sockets sending bad input. Each
/// script is a unittest program in Tests/HTTP; its output is shown when it fails.
@Suite("HTTP API (sofa-http)", .serialized)
struct HTTPAPITests {
    @Test("a CouchDB client library drives every endpoint group: server, auth, databases, documents, bulk, changes, attachments, Mango, security, CORS; what a replicator relies on and CouchDB's own test suite's rules hold")
    func couchClientLibrary() async throws {
        let origin = "http://app.example"
        try await Cluster.with(queryWorkers: 2, http: true, settings: [Setting.corsOrigins.variable: origin]) { cluster in
            try await Self.python("couch_client_test.py", cluster, ["SOFA_TEST_CORS_ORIGIN": origin])
            try await Self.python("http_replication_rules_test.py", cluster, [:])
            try await Self.python("http_couch_rules_test.py", cluster, [:])
            try await Self.python("http_couch_view_rules_test.py", cluster, [:])
            try await Self.python("http_couch_document_rules_test.py", cluster, [:])
            try await Self.python("http_client_library_rules_test.py", cluster, [:])
        }
    }

    @Test("two clusters sync through the HTTP API only: documents, revisions, conflicts, deletions and attachments arrive identical")
    func syncBetweenClustersOverHTTP() async throws {
        try await Cluster.with(http: true) { source in
            try await Cluster.with(http: true) { target in
                try await Self.python("http_sync_test.py", source, [
                    "SOFA_SOURCE_URL": try #require(source.supervisor.httpURL),
                    "SOFA_TARGET_URL": try #require(target.supervisor.httpURL),
                ])
            }
        }
    }

    @Test("bad input gets CouchDB's errors or a closed connection; slow clients and an unread feed stall nothing, memory stays bounded; plain gets answered without the router are its answers, in order")
    func badInput() async throws {
        try await Cluster.with(http: true) { cluster in
            let pid = try #require(cluster.supervisor.pid(of: "http"))
            // First: the bad input's failed sign-ins delay later ones from the same address.
            try await Self.python("http_direct_gets_test.py", cluster, ["SOFA_HTTP_PID": "\(pid)"])
            try await Self.python("http_bad_input_test.py", cluster, ["SOFA_HTTP_PID": "\(pid)"])
        }
    }

    @Test("HTTPS with a configured certificate and key: a client that trusts the certificate is served, a plain HTTP one is not")
    func https() async throws {
        try await withTemporaryDirectory { folder in
            let openssl = try #require(DeployTests.executableOnPath("openssl"), "openssl is not on PATH")
            let cert = folder.appendingPathComponent("cert.pem").path, key = folder.appendingPathComponent("key.pem").path
            let made = try await DeployTests.run(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                                                           "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"])
            try #require(made.status == 0, "openssl failed: \(made.stderr)")
            try await Cluster.with(http: true, settings: [Setting.httpTLSCert.variable: cert, Setting.httpTLSKey.variable: key]) { cluster in
                let python = try #require(DeployTests.executableOnPath("python3"))
                let url = try #require(cluster.supervisor.httpURL)
                let admin = try #require(cluster.supervisor.localAdmin)
                let script = """
                    import sys, requests
                    secure = "\(url)".replace("http://", "https://")
                    answer = requests.get(secure + "/_session", auth=("\(admin.user)", sys.argv[1]), verify="\(cert)", timeout=10)
                    assert answer.status_code == 200 and answer.json()["userCtx"]["name"] == "\(admin.user)", answer.text
                    with requests.Session() as session:
                        session.auth = ("\(admin.user)", sys.argv[1])
                        assert session.put(secure + "/tls", verify="\(cert)").status_code == 201
                        assert session.put(secure + "/tls/doc", json={"a": 1}, verify="\(cert)").status_code == 201
                        for _ in range(3):
                            got = session.get(secure + "/tls/doc", verify="\(cert)", timeout=10)
                            assert got.status_code == 200 and got.json()["a"] == 1, got.text
                    try:
                        requests.get("\(url)/", timeout=5)
                        raise SystemExit("plain HTTP was answered on the HTTPS port")
                    except requests.exceptions.ConnectionError:
                        pass
                    print("ok")
                    """
                let result = try await DeployTests.run(python, ["-c", script, admin.password])
                #expect(result.status == 0 && result.stdout.contains("ok"), "\(result.stderr)\n\(result.stdout)")
            }
        }
    }

    /// Runs `Tests/HTTP/<script>` against the cluster's HTTP API as its first server admin (only
    /// the test classes or methods named in `SOFA_HTTP_TESTS`, space-separated, when it is set).
    static func python(_ script: String, _ cluster: Cluster, _ environment: [String: String]) async throws {
        let python = try #require(DeployTests.executableOnPath("python3"), "python3 is not on PATH")
        let path = try DeployTests.repoRoot().appendingPathComponent("Tests/HTTP/\(script)").path
        let admin = try #require(cluster.supervisor.localAdmin)
        let given = ["SOFA_HTTP_URL": try #require(cluster.supervisor.httpURL), "SOFA_ADMIN_NAME": admin.user,
                     "SOFA_ADMIN_PASSWORD": admin.password].merging(environment) { $1 }
        let only = (ProcessInfo.processInfo.environment["SOFA_HTTP_TESTS"] ?? "").split(separator: " ").map(String.init)
        let result = try await DeployTests.run(python, [path] + only, environment: given)
        #expect(result.status == 0, "\(script) failed (exit \(result.status)):\n\(result.stderr)\n\(result.stdout)")
    }
}
