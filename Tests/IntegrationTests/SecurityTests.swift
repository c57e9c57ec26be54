import Foundation
import SofaBus
import SofaClient
import SofaCluster
import SofaCore
import SofaWire
import Testing

/// Users, roles and security objects through real processes, over CURVE: who may do what
/// (CouchDB 3's rules), sign-in errors that do not tell an unknown user from a wrong password,
/// pinned server keys, and services that admit only the cluster's key.
@Suite(.serialized) struct SecurityTests {
    static func connect(_ cluster: Cluster, _ name: String?, _ password: String = "") async throws -> SofaClient {
        try await SofaClient.connect(cluster.supervisor.gatewayEndpoint, serverKey: cluster.supervisor.serverKey,
                                     credentials: name.map { .init(name: $0, password: password) })
    }

    @Test func usersMembersAndAdminsAreKeptApart() async throws {
        try await Cluster.with { cluster in
            let admin = cluster.client
            #expect(try await admin.session().isServerAdmin)
            let app = try await admin.createDatabase("app")
            _ = try await app.put(id: "a", json: #"{"x":1}"#)
            try await admin.users.create("ann", password: "ann-pw", roles: ["staff"])
            try await admin.users.create("bob", password: "bob-pw")
            try await admin.users.create("dan", password: "dan-pw")

            // Nobody signed in: unauthorized, on the admin-only database and on server tasks.
            let anonymous = try await Self.connect(cluster, nil)
            defer { anonymous.close() }
            #expect(try await anonymous.session().name == "")
            for attempt in [{ _ = try await anonymous.database("app").get(id: "a") },
                            { _ = try await anonymous.createDatabase("nope") }] as [@Sendable () async throws -> Void] {
                let error = await #expect(throws: SofaError.self) { try await attempt() }
                #expect(error?.is(.unauthorized) == true, "\(String(describing: error))")
            }

            // A wrong password and an unknown user: the same refusal.
            let wrong = await #expect(throws: SofaError.self) { _ = try await Self.connect(cluster, "ann", "nope") }
            let unknown = await #expect(throws: SofaError.self) { _ = try await Self.connect(cluster, "zed", "nope") }
            #expect(wrong?.is(.unauthorized) == true && wrong == unknown, "\(String(describing: wrong)) / \(String(describing: unknown))")

            let ann = try await Self.connect(cluster, "ann", "ann-pw")
            let bob = try await Self.connect(cluster, "bob", "bob-pw")
            let dan = try await Self.connect(cluster, "dan", "dan-pw")
            defer { ann.close(); bob.close(); dan.close() }
            #expect(try await ann.session() == SofaClient.Session(name: "ann", roles: ["staff"]))

            // A new database is admin-only: users are forbidden until they are members.
            let forbidden = await #expect(throws: SofaError.self) { _ = try await ann.database("app").get(id: "a") }
            #expect(forbidden?.is(.forbidden) == true, "\(String(describing: forbidden))")
            #expect(try await app.securityObject() == SecurityObject(admins: .init(roles: ["_admin"]),
                                                                      members: .init(roles: ["_admin"])))
            try await app.setSecurityObject(SecurityObject(admins: .init(names: ["dan"]), members: .init(roles: ["staff"])))

            // Members (by role) read and write documents, local documents and queries.
            #expect(try await ann.database("app").get(id: "a").body == Array(#"{"x":1}"#.utf8))
            _ = try await ann.database("app").put(id: "b", json: #"{"x":2}"#)
            _ = try await ann.database("app").putLocal(id: "mine", json: #"{"y":1}"#)
            #expect(try await ann.database("app").query(n1ql: "SELECT x FROM _ ORDER BY x").rows.count == 2)
            // …but not design documents or the security object.
            let design = await #expect(throws: SofaError.self) {
                _ = try await ann.database("app").put(id: "_design/v", json: #"{"views":{}}"#)
            }
            #expect(design?.is(.forbidden) == true, "\(String(describing: design))")
            // In a bulk, the design document is refused in its place and the rest is written (as
            // CouchDB answers a bulk); one of only design documents likewise.
            let results = try await ann.database("app").bulk([.put(id: "c", rev: "", body: Array("{}".utf8), deleted: false),
                                                              .put(id: "_design/w", rev: "", body: Array("{}".utf8), deleted: false)])
            #expect(results.map(\.id) == ["c", "_design/w"])
            #expect(results[0].error == nil && results[1].error?.is(.forbidden) == true, "\(results)")
            #expect(try await ann.database("app").get(id: "c").body == Array("{}".utf8))
            let onlyDesign = try await ann.database("app").bulk([.put(id: "_design/w", rev: "", body: Array("{}".utf8), deleted: false)])
            #expect(onlyDesign.first?.error?.is(.forbidden) == true)
            await #expect(throws: SofaError.self) { _ = try await ann.database("app").get(id: "_design/w") }
            let security = await #expect(throws: SofaError.self) {
                try await ann.database("app").setSecurityObject(SecurityObject())
            }
            #expect(security?.is(.forbidden) == true, "\(String(describing: security))")
            // A database admin (by name) writes both; creating a database is a server admin's.
            _ = try await dan.database("app").put(id: "_design/v", json: #"{"views":{}}"#)
            try await dan.database("app").setSecurityObject(SecurityObject(admins: .init(names: ["dan"]),
                                                                            members: .init(roles: ["staff"])))
            let create = await #expect(throws: SofaError.self) { _ = try await dan.createDatabase("mine") }
            #expect(create?.is(.forbidden) == true, "\(String(describing: create))")
            // Not a member: forbidden.
            let outsider = await #expect(throws: SofaError.self) { _ = try await bob.database("app").get(id: "a") }
            #expect(outsider?.is(.forbidden) == true, "\(String(describing: outsider))")

            // A user changes their own password, not their roles, and reads no one else's document.
            try await bob.users.setPassword("bob", "bob-pw-2")
            let roles = await #expect(throws: SofaError.self) { try await bob.users.setRoles("bob", ["staff"]) }
            #expect(roles?.is(.forbidden) == true, "\(String(describing: roles))")
            // To a user, nobody else's document exists (CouchDB's 404: it tells no one who the users are).
            let others = await #expect(throws: SofaError.self) { _ = try await bob.users.get("ann") }
            #expect(others?.is(.notFound) == true, "\(String(describing: others))")
            let old = await #expect(throws: SofaError.self) { _ = try await Self.connect(cluster, "bob", "bob-pw") }
            #expect(old?.is(.unauthorized) == true)
            let renewed = try await Self.connect(cluster, "bob", "bob-pw-2")
            renewed.close()

            // A removed role, then a removed user, count from the next request on.
            try await admin.users.setRoles("ann", [])
            let dropped = await #expect(throws: SofaError.self) { _ = try await ann.database("app").get(id: "a") }
            #expect(dropped?.is(.forbidden) == true, "\(String(describing: dropped))")
            try await admin.users.delete("dan")
            let gone = await #expect(throws: SofaError.self) { _ = try await dan.database("app").get(id: "a") }
            #expect(gone?.is(.unauthorized) == true, "\(String(describing: gone))")

            // Stored credentials are never returned, to the user or to an admin.
            for client in [admin, bob] {
                let document = try await client.database("_users").get(id: "org.couchdb.user:bob")
                let fields = try #require(JSON.tryParse(document.body)?.objectValue)
                #expect(fields["name"] == "bob")
                for hidden in ["password", "salt", "derived_key", "iterations", "password_scheme"] {
                    #expect(fields[hidden] == nil, "\(hidden) was returned")
                }
            }
            #expect(try await admin.users.list().map(\.name).sorted() == ["ann", "bob"])
        }
    }

    /// The cluster's follower of `_users` (sofa-http forgets the users whose documents change)
    /// long-polls it: the poll is held until a user's document is written, not answered empty at
    /// once (a follower answered at once asks again at once, without end).
    @Test func aLongPollOnUsersWaitsForAChange() async throws {
        try await Cluster.with { cluster in
            try await cluster.client.users.create("ann", password: "ann-pw")
            let bus = try await connectedBus(cluster.supervisor.gatewayEndpoint)
            defer { bus.close() }
            guard case .changes(let before) = try await bus.call(.changes(ChangesQuery()), database: "_users") else {
                throw SofaError(.unexpectedError, "no changes")
            }
            let poll = Task {
                try await bus.call(.changes(ChangesQuery(since: before.lastSequence, limit: 10, waitMs: 30_000)),
                                   database: "_users", timeout: .seconds(40))
            }
            try await cluster.client.users.create("bob", password: "bob-pw")
            guard case .changes(let batch) = try await poll.value else { throw SofaError(.unexpectedError, "no changes") }
            #expect(batch.changes.map(\.id) == ["org.couchdb.user:bob"])
        }
    }

    /// A user replicates the databases they are a member of, sees and stops only those, and
    /// reaches no other cluster unless it is an allowed peer.
    @Test func usersReplicateOnlyTheirOwnDatabases() async throws {
        try await Cluster.with { cluster in
            let admin = cluster.client
            for name in ["notes", "backup", "secret"] {
                let db = try await admin.createDatabase(name)
                _ = try await db.put(id: "\(name)-1", json: #"{"by":"\#(name)"}"#)
            }
            try await admin.users.create("ann", password: "ann-pw")
            try await admin.users.create("bob", password: "bob-pw")
            try await admin.database("notes").setSecurityObject(SecurityObject(members: .init(names: ["ann"])))
            let ann = try await Self.connect(cluster, "ann", "ann-pw")
            let bob = try await Self.connect(cluster, "bob", "bob-pw")
            defer { ann.close(); bob.close() }

            // Not a member of the target: refused, nothing started.
            let refused = await #expect(throws: SofaError.self) { _ = try await ann.replicate(from: "notes", to: "backup") }
            #expect(refused?.is(.forbidden) == true && refused?.message.contains("backup") == true, "\(String(describing: refused))")
            let stolen = await #expect(throws: SofaError.self) { _ = try await ann.replicate(from: "secret", to: "notes") }
            #expect(stolen?.is(.forbidden) == true, "\(String(describing: stolen))")
            let remote = await #expect(throws: SofaError.self) {
                _ = try await ann.replicate(from: "notes", to: "tcp://127.0.0.1:9/notes")
            }
            #expect(remote?.is(.forbidden) == true && remote?.message.contains("SOFA_REPLICATION_PEERS") == true,
                    "\(String(describing: remote))")

            // A member of both: it runs.
            try await admin.database("backup").setSecurityObject(SecurityObject(members: .init(names: ["ann"])))
            let handle = try await ann.replicate(from: "notes", to: "backup")
            let done = try await handle.wait()
            #expect(done.allSatisfy { $0.state == .completed }, "\(done)")
            #expect(try await ann.database("backup").get(id: "notes-1").body == Array(#"{"by":"notes"}"#.utf8))
            #expect(try await ann.replications().map(\.id).contains(handle.ids[0]))
            // Someone else neither sees it nor stops it.
            #expect(try await bob.replications().isEmpty)
            let stop = await #expect(throws: SofaError.self) { try await bob.stopReplication(handle.ids[0]) }
            #expect(stop?.is(.forbidden) == true, "\(String(describing: stop))")
            let peek = await #expect(throws: SofaError.self) { _ = try await bob.replicationStatus(handle.ids[0]) }
            #expect(peek?.is(.forbidden) == true, "\(String(describing: peek))")
        }
    }

    @Test func aClientPinningAnotherKeyCannotConnect() async throws {
        try await Cluster.with { cluster in
            let other = try CurveKeyPair.generate().publicKey
            let error = await #expect(throws: SofaError.self) {
                _ = try await SofaClient.connect(cluster.supervisor.gatewayEndpoint, serverKey: other,
                                                 credentials: cluster.supervisor.adminCredentials, timeout: .seconds(3))
            }
            #expect(error?.is(.unauthorized) == true && error?.message.contains("does not hold the server key") == true,
                    "\(String(describing: error))")
            let plain = await #expect(throws: SofaError.self) {
                _ = try await SofaClient.connect(cluster.supervisor.gatewayEndpoint, timeout: .seconds(3))
            }
            #expect(plain?.is(.unauthorized) == true && plain?.message.contains("speaks CURVE") == true,
                    "\(String(describing: plain))")
        }
    }

    /// Storage, sofa-blob and the replicator on TCP: a client with the cluster's key is served,
    /// one with any other key is refused at the handshake, before a single request.
    @Test func servicesAdmitOnlyTheClustersKey() async throws {
        var settings: [String: String] = [:]
        for setting in [Setting.storageEndpoint, .blobEndpoint, .replicatorEndpoint] {
            settings[setting.variable] = "tcp://127.0.0.1:\(try freePort())"
        }
        try await Cluster.with(settings: settings) { cluster in
            for name in ["storage", "blob", "replicator"] {
                let endpoint = try #require(cluster.supervisor.endpoints[name])
                #expect(endpoint.hasPrefix("tcp://"))
                let member = try await connectedBus(endpoint, peerName: name)
                #expect(try await member.call(.health(service: "")) != .none)
                member.close()
                let stranger = try await BusClient.connect(endpoint, peerName: name,
                                                           curve: try ClientKeys.pinning(TestSecrets.cluster.publicKey))
                defer { stranger.close() }
                #expect(await stranger.waitUntilConnected(timeout: .seconds(2)) == false, "\(name) admitted a stranger")
                #expect(stranger.handshakeFailed, "\(name): no failed handshake was seen")
            }
        }
    }

    /// `SOFA_MAX_CONNECTIONS`: beyond it a new client's handshake is refused (the cluster's own
    /// services still get in); once clients leave, new ones are admitted again.
    @Test func theGatewayHoldsAtMostItsConnections() async throws {
        try await Cluster.with(settings: [Setting.maxConnections.variable: "3"]) { cluster in
            func connect() async throws -> SofaClient {
                try await SofaClient.connect(cluster.supervisor.gatewayEndpoint, serverKey: cluster.supervisor.serverKey,
                                             timeout: .seconds(5), handshakeTimeout: .seconds(2))
            }
            var admitted: [SofaClient] = []
            var refusal: SofaError?
            for _ in 0..<6 {
                do { admitted.append(try await connect()) } catch {
                    refusal = error as? SofaError
                    break
                }
            }
            // The fixture's own client is one of the three (one more may pass while its accept is
            // being counted).
            #expect(admitted.count <= 3, "\(admitted.count) more clients were admitted")
            #expect(refusal?.is(.unauthorized) == true, "\(String(describing: refusal))")
            for client in admitted { client.close() }
            let deadline = ContinuousClock.now + .seconds(20)
            var again: SofaClient?
            while again == nil {
                try #require(ContinuousClock.now < deadline, "no client was admitted after the others left")
                again = try? await connect()
            }
            again?.close()
            // The fixture's client (admitted before the limit was reached) still works.
            #expect(try await cluster.client.session().isServerAdmin)
        }
    }
}
