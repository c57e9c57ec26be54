import Foundation
import SofaClient
import SofaCluster
import SofaCore
import SofaTestSupport
import Testing

/// Replications run as the user who started them, and reach another cluster with a key of its own
/// as a user of it, with credentials stored in the replication's record and never shown.
@Suite(.serialized) struct ReplicationAccessTests {
    /// Waits (up to a deadline) until `db` holds `count` documents, following its changes feed.
    static func waitForDocuments(_ db: Database, _ count: Int, timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        var since: UInt64 = 0
        var seen = Set<String>()
        while seen.count < count {
            try #require(ContinuousClock.now < deadline, "\(seen.count) of \(count) documents arrived")
            let batch = try await db.changes(ChangesQuery(since: since, limit: 1000, waitMs: 2000))
            for change in batch.changes where !change.deleted { seen.insert(change.id) }
            since = max(since, batch.lastSequence)
        }
    }

    @Test func aReplicationWithStoredCredentialsReachesAnotherClusterAndNeverShowsThem() async throws {
        try await withTemporaryDirectory { folder in
            // Cluster B has its own key and its own users: A reaches it only as B's user "bob".
            let otherKeys = folder.appendingPathComponent("keys").path
            try await Cluster.with(settings: [Setting.keysDir.variable: otherKeys]) { b in
                let bobPassword = "bob-\(UUID().uuidString)"
                try await b.client.users.create("bob", password: bobPassword)
                let inbox = try await b.client.createDatabase("inbox")
                try await inbox.setSecurityObject(json: try JSON.parse(#"{"members":{"names":["bob"]}}"#))
                try await Cluster.with { a in
                    #expect(a.supervisor.serverKey != b.supervisor.serverKey)
                    let outbox = try await a.client.createDatabase("outbox")
                    for index in 0..<25 { _ = try await outbox.put(id: "m\(index)", json: #"{"n":\#(index)}"#) }
                    let target = "\(b.supervisor.gatewayEndpoint)/inbox"
                    let record = try JSON.parse("""
                        {"source": "outbox", "continuous": true, "target": {"url": "\(target)",
                         "server_key": "\(b.supervisor.serverKey ?? "")",
                         "auth": {"basic": {"username": "bob", "password": "\(bobPassword)"}}}}
                        """)
                    let replicator = a.client.database("_replicator")
                    _ = try? await a.client.createDatabase("_replicator")  // or the replicator made it already
                    _ = try await replicator.put(id: "to-b", body: record.compactBytes())
                    try await Self.waitForDocuments(inbox, 25)

                    // The record read back, by a server admin: the target without its credentials.
                    let stored = try await replicator.get(id: "to-b")
                    let text = String(decoding: stored.body, as: UTF8.self)
                    #expect(!text.contains(bobPassword), "\(text)")
                    #expect(try stored.json()["target"]?["url"]?.stringValue == target)
                    #expect(try stored.json()["target"]?["auth"] == nil)
                    for listed in try await replicator.allDocs(includeBodies: true) {
                        #expect(!String(decoding: listed.body, as: UTF8.self).contains(bobPassword))
                    }
                    // Nor in any process's log.
                    let log = try String(contentsOf: a.directory.appendingPathComponent("cluster.log"), encoding: .utf8)
                    #expect(!log.contains(bobPassword))
                    #expect(!(try await a.client.replications().description.contains(bobPassword)))
                }
            }
        }
    }

    @Test func aUsersReplicationRunsWithThatUsersRights() async throws {
        try await Cluster.with { cluster in
            let admin = cluster.client
            try await admin.users.create("ann", password: "ann-pw")
            let members = try JSON.parse(#"{"members":{"names":["ann"]}}"#)
            let source = try await admin.createDatabase("src"), target = try await admin.createDatabase("dst")
            try await source.setSecurityObject(json: members)
            try await target.setSecurityObject(json: members)
            for index in 0..<5 { _ = try await source.put(id: "a\(index)", json: "{}") }
            let ann = try await SofaClient.connect(cluster.supervisor.gatewayEndpoint, serverKey: cluster.supervisor.serverKey,
                                                   credentials: .init(name: "ann", password: "ann-pw"))
            defer { ann.close() }
            let handle = try await ann.replicate(from: "src", to: "dst", mode: .continuous)
            try await Self.waitForDocuments(target, 5)
            // Ann loses the target: the replication's next write is hers, and refused.
            try await target.setSecurityObject(json: try JSON.parse(#"{"members":{"names":["someone-else"]}}"#))
            _ = try await source.put(id: "after", json: "{}")
            let deadline = ContinuousClock.now + .seconds(60)
            var status = try await admin.replicationStatus(try #require(handle.ids.first))
            while !status.lastError.contains("forbidden") && !status.lastError.contains("may not") {
                try #require(ContinuousClock.now < deadline, "the replication went on writing: \(status)")
                status = try await admin.replicationStatus(status.id, afterVersion: status.version, wait: .seconds(5))
            }
            #expect((try? await target.get(id: "after")) == nil)
            try await admin.stopReplication(status.id)
        }
    }

    @Test func replicationDocumentsAreTheirOwnersAlone() async throws {
        try await Cluster.with { cluster in
            let admin = cluster.client
            for name in ["ann", "bob"] { try await admin.users.create(name, password: "\(name)-pw", roles: ["replicators"]) }
            _ = try? await admin.createDatabase(ReplicationDocument.database)
            let documents = admin.database(ReplicationDocument.database)
            try await documents.setSecurityObject(json: try JSON.parse(#"{"members":{"roles":["replicators"]}}"#))
            func connect(_ name: String) async throws -> SofaClient {
                try await SofaClient.connect(cluster.supervisor.gatewayEndpoint, serverKey: cluster.supervisor.serverKey,
                                             credentials: .init(name: name, password: "\(name)-pw"))
            }
            let ann = try await connect("ann"), bob = try await connect("bob")
            defer { ann.close(); bob.close() }
            // Ann's document says it is the admin's: the gateway makes it hers.
            _ = try await ann.database(ReplicationDocument.database)
                .put(id: "anns", json: #"{"source":"nowhere-a","target":"nowhere-b","owner":"admin"}"#)
            #expect(try await documents.get(id: "anns").json()["owner"]?.stringValue == "ann")
            let refused = await #expect(throws: SofaError.self) { _ = try await bob.database(ReplicationDocument.database).get(id: "anns") }
            #expect(refused?.is(.forbidden) == true)
            #expect(try await bob.database(ReplicationDocument.database).allDocs(includeBodies: true).isEmpty)
            #expect(try await ann.database(ReplicationDocument.database).allDocs(includeBodies: true).map(\.id) == ["anns"])
        }
    }
}
