@testable import SofaCore
import Testing

/// Replication sides written as CouchDB 3 writes them: URLs of this cluster's HTTP API name its
/// databases, and credentials in a URL never leave the replicator.
@Suite struct ReplicationDocumentTests {
    @Test(arguments: [
        ("http://admin:pw@127.0.0.1:5984/db", "db"),
        ("http://localhost:5984/db/", "db"),
        ("HTTP://[::1]:5984/a%2Fb", "a/b"),
        ("http://sofa.example:5984/db", "db"),
    ])
    func aURLOfThisServerNamesADatabase(_ url: String, _ name: String) {
        #expect(ReplicationDocument.localDatabase(inURL: url, httpAddress: "sofa.example:5984") == name, "\(url)")
    }

    @Test(arguments: ["http://127.0.0.1:5985/db", "http://other.example:5984/db", "http://localhost:5984/a/b",
                      "http://localhost:5984/", "http://localhost:5984", "tcp://127.0.0.1:5984/db", "db", "https://localhost/db"])
    func anyOtherURLNamesNone(_ url: String) {
        #expect(ReplicationDocument.localDatabase(inURL: url, httpAddress: "sofa.example:5984") == nil, "\(url)")
    }

    @Test func httpURLsAreTakenApart() throws {
        let parts = try #require(ReplicationDocument.httpDatabaseURL("https://u:p@Host.Example/x%24y"))
        #expect(parts.host == "host.example" && parts.port == "443" && parts.database == "x$y")
        #expect(ReplicationDocument.httpDatabaseURL("http://h:1/x%ZZ") == nil)
    }

    @Test func credentialsInURLsAreLeftOut() throws {
        #expect(ReplicationEndpoint.redacted("http://admin:secret@h:5984/db") == "http://h:5984/db")
        #expect(ReplicationEndpoint.redacted("http://h:5984/db@x") == "http://h:5984/db@x")
        #expect(ReplicationEndpoint.redacted("db") == "db")
        let body = JSON.object([
            "source": "http://admin:secret@127.0.0.1:5984/a",
            "target": ["url": "http://bob:hunter2@127.0.0.1:5984/b", "auth": ["basic": ["username": "bob", "password": "hunter2"]]],
        ]).compactBytes()
        let shown = try #require(JSON.tryParse(ReplicationDocument.withoutCredentials(body)))
        #expect(shown["source"] == "http://127.0.0.1:5984/a")
        #expect(shown["target"] == ["url": "http://127.0.0.1:5984/b"])
    }

    /// CouchDB's `{"url": "http://…", "auth": {"basic": …}}` is a URL that may be this server's,
    /// not another cluster's endpoint (which needs its `server_key`).
    @Test func basicAuthWithAnHTTPURLIsNoRemoteAccess() throws {
        let side = try #require(ReplicationDocument.side(["url": "http://127.0.0.1:5984/db",
                                                         "auth": ["basic": ["username": "u", "password": "p"]]]))
        #expect(side.endpoint == "http://127.0.0.1:5984/db" && side.access == nil)
    }
}
