import Foundation
import SofaCluster
import SofaClient
import SofaWire
import Synchronization
import Testing

/// End to end through real processes: SDK and CLI → gateway → storage → SQLite.
@Suite(.serialized) struct ClusterTests {
    struct Point: Codable, Equatable {
        var x: Int
        var label: String
    }

    @Test func documentsThroughTheGateway() async throws {
        try await Cluster.with { cluster in
            let client = cluster.client
            let app = try await client.createDatabase("app")
            #expect(try await client.databases() == ["app"])
            let first = try await app.put(id: "a", json: #"{"x":1}"#)
            #expect(first.rev == "1-6f9a1fe5dfad0377e089c5e8e0afab815938295d")
            let read = try await app.get(id: "a")
            #expect(read.rev == first.rev)
            #expect(try read.json() == ["x": 1])
            let second = try await app.put(Point(x: 2, label: "two"), id: "a", rev: first.rev)
            #expect(second.rev.hasPrefix("2-"))
            #expect(try await app.get(Point.self, id: "a") == Point(x: 2, label: "two"))
            let generated = try await app.put(json: #"{"y":true}"#)
            #expect(generated.id.hasPrefix("~"))
            let deleted = try await app.delete(id: "a", rev: second.rev)
            #expect(deleted.rev.hasPrefix("3-"))
            await #expect(throws: SofaError.self) { try await app.get(id: "a") }
            let tombstone = try await app.get(id: "a", rev: deleted.rev)
            #expect(tombstone.deleted)
            let again = try await app.put(id: "a", json: #"{"x":4}"#)
            #expect(again.rev.hasPrefix("4-"))
            try await client.deleteDatabase("app")
            #expect(try await client.databases() == [])
            #expect(!FileManager.default.fileExists(atPath: cluster.directory.appendingPathComponent("data/app.sofa").path))
        }
    }

    /// Each bad input gets its own clear error, and the document already stored is untouched.
    @Test func badInputIsRefusedAndLosesNothing() async throws {
        try await Cluster.with { cluster in
            let app = try await cluster.client.createDatabase("app")
            let saved = try await app.put(id: "a", json: #"{"x":1}"#)
            let cases: [(String, SofaError.Code, () async throws -> Void)] = [
                ("invalid JSON", .badJSON, { _ = try await app.put(id: "a", json: #"{"x":"#, rev: saved.rev) }),
                ("array body", .badJSON, { _ = try await app.put(id: "a", json: "[1,2]", rev: saved.rev) }),
                ("string body", .badJSON, { _ = try await app.put(id: "a", json: #""text""#, rev: saved.rev) }),
                ("empty ID", .badDocID, { _ = try await app.put(id: "", json: "{}") }),
                ("over-long ID", .badDocID, { _ = try await app.put(id: String(repeating: "i", count: 241), json: "{}") }),
                ("control character in ID", .badDocID, { _ = try await app.put(id: "a\u{1}b", json: "{}") }),
                ("stale _rev", .conflict, { _ = try await app.put(id: "a", json: #"{"x":9}"#, rev: "1-0000") }),
                ("missing _rev", .conflict, { _ = try await app.put(id: "a", json: #"{"x":9}"#) }),
                ("malformed _rev", .badRevisionID, { _ = try await app.put(id: "a", json: #"{"x":9}"#, rev: "one") }),
                ("unknown database", .notFound, { _ = try await cluster.client.database("nope").get(id: "a") }),
                ("write to unknown database", .notFound, { _ = try await cluster.client.database("nope").put(id: "a", json: "{}") }),
                ("bad database name", .badDatabaseName, { _ = try await cluster.client.createDatabase("Bad/Name") }),
                ("existing database", .databaseExists, { _ = try await cluster.client.createDatabase("app") }),
                ("delete without rev", .conflict, { _ = try await app.delete(id: "a", rev: "") }),
            ]
            for (name, code, attempt) in cases {
                do {
                    try await attempt()
                    Issue.record("\(name): accepted")
                } catch let error as SofaError {
                    #expect(error.sofaCode == code, "\(name): \(error)")
                    #expect(!error.message.isEmpty)
                }
                let current = try await app.get(id: "a")
                #expect(current.rev == saved.rev, "\(name) changed the document")
                #expect(try current.json() == ["x": 1])
            }
        }
    }

    /// Garbage straight to the gateway's and storage's sockets: an error response each time, and
    /// both keep serving.
    @Test func garbageFramesAreAnsweredAndServiceGoesOn() async throws {
        try await Cluster.with { cluster in
            let app = try await cluster.client.createDatabase("app")
            for target in ["gateway", "storage"] {
                let raw = RawDealer(try #require(cluster.supervisor.endpoints[target]))
                let probes: [(String, [[UInt8]], SofaError.Code)] = [
                    ("random bytes", [[0xFF, 0x00, 0x13, 0x37, 0xDE, 0xAD, 0xBE, 0xEF]], .malformedMessage),
                    ("empty frame", [[]], .malformedMessage),
                    ("text", [Array("GET / HTTP/1.1\r\n\r\n".utf8)], .malformedMessage),
                    ("three frames", [[1], [2], [3]], .malformedMessage),
                    ("oversized", [[UInt8](repeating: 0x41, count: (16 << 20) + 1)], .messageTooLarge),
                ]
                for (name, frames, code) in probes {
                    raw.send(frames)
                    let reply = try #require(raw.receive(), "\(target) did not answer \(name)")
                    let response = try Response.decode(reply)
                    guard case .failure(let error) = response.outcome else {
                        Issue.record("\(target) accepted \(name)")
                        continue
                    }
                    #expect(error.sofaCode == code, "\(target), \(name): \(error)")
                }
                let saved = try await app.put(id: "after-\(target)", json: #"{"ok":true}"#)
                #expect(try await app.get(id: saved.id).rev == saved.rev)
            }
        }
    }

    @Test func cliPrintsJSONAndErrors() async throws {
        try await Cluster.with { cluster in
            let gateway = cluster.supervisor.gatewayEndpoint
            #expect(try await runSofa(["db", "create", "app"], gateway: gateway).status == 0)
            let put = try await runSofa(["put", "app", "a", #"{"x":1}"#], gateway: gateway)
            #expect(put.status == 0)
            let written = try JSON.parse(put.out.trimmingCharacters(in: .whitespacesAndNewlines))
            let rev = try #require(written["rev"]?.stringValue)
            #expect(written["id"] == "a")
            let get = try await runSofa(["get", "app", "a"], gateway: gateway)
            #expect(get.status == 0)
            #expect(try JSON.parse(get.out.trimmingCharacters(in: .whitespacesAndNewlines))
                == .object(JSONObject([("_id", "a"), ("_rev", .string(rev)), ("x", 1)])))
            let update = try await runSofa(["put", "app", "a", "-"], gateway: gateway, stdin: #"{"x":2,"_rev":"\#(rev)"}"#)
            #expect(update.status == 0, "\(update.err)")
            let stale = try await runSofa(["put", "app", "a", #"{"x":3}"#, "--rev", rev], gateway: gateway)
            #expect(stale.status != 0)
            #expect(stale.out.isEmpty)
            expectErrorLine(stale.err, .conflict)
            let missing = try await runSofa(["get", "app", "zz"], gateway: gateway)
            #expect(missing.status != 0)
            expectErrorLine(missing.err, .notFound)
            let missingJSON = try await runSofa(["get", "app", "zz", "--json"], gateway: gateway)
            #expect(missingJSON.status != 0 && missingJSON.err.split(separator: "\n").count == 1, "\(missingJSON.err)")
            let error = try parseOutput(missingJSON.err)["error"]
            #expect(error?["code"] == 7 && error?["name"] == "not_found" && error?["domain"] == "sofa", "\(missingJSON.err)")
            let list = try await runSofa(["db", "list"], gateway: gateway)
            #expect(try JSON.parse(list.out.trimmingCharacters(in: .whitespacesAndNewlines)) == ["app"])
            let status = try await runSofa(["status"], gateway: gateway)
            #expect(status.status == 0)
            #expect(try JSON.parse(status.out.trimmingCharacters(in: .whitespacesAndNewlines))["healthy"] == true)
        }
    }

    @Test func everyServiceAnswersHealthThroughTheGateway() async throws {
        try await Cluster.with(queryWorkers: 2) { cluster in
            for service in ["", "storage", "blob", "replicator", "query"] {
                let info = try await cluster.client.health(service: service)
                #expect(info.service == (service.isEmpty ? "gateway" : service))
                #expect(info.pid > 0)
            }
            let status = try await cluster.client.clusterStatus()
            #expect(status.map(\.name) == ["gateway", "storage", "blob", "replicator", "query"])
            #expect(status.allSatisfy { $0.healthy })
            #expect(status.last?.instances == 2)
            let echo = try await cluster.client.echo([1, 2, 3], service: "query")
            #expect(echo.payload == [1, 2, 3])
            #expect(echo.instance.hasPrefix("query-"))
        }
    }

    /// `waitForRestart` answers with the new pid once a killed child runs again, and with nil at
    /// its deadline when the child was never replaced.
    @Test func waitingForARestart() async throws {
        try await Cluster.with { cluster in
            let blob = try #require(cluster.supervisor.pid(of: "blob"))
            #expect(await cluster.supervisor.waitForRestart(of: "blob", replacing: blob, timeout: .milliseconds(300)) == nil)
            kill(blob, SIGKILL)
            let next = await cluster.supervisor.waitForRestart(of: "blob", replacing: blob)
            #expect(next != nil && next != blob && next == cluster.supervisor.pid(of: "blob"))
            #expect(cluster.supervisor.restartCount(of: "blob") == 1)
            try await cluster.supervisor.waitUntilHealthy()
        }
    }

    /// The supervisor's children hold none of its descriptors, even one not marked close-on-exec:
    /// only stdin (/dev/null), and stdout and stderr (its log pipe), then their own. A descriptor
    /// leaked into a long-lived child kept another child's death from being seen.
    @Test func childrenInheritNoDescriptor() async throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let fm = FileManager.default
        let leaked = try [fds[0], fds[1]].map { try fm.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)") }
        try await Cluster.with { cluster in
            for name in cluster.supervisor.childNames {
                let pid = try #require(cluster.supervisor.pid(of: name))
                let folder = "/proc/\(pid)/fd"
                let links = try fm.contentsOfDirectory(atPath: folder).reduce(into: [Int: String]()) { links, fd in
                    links[Int(fd) ?? -1] = try? fm.destinationOfSymbolicLink(atPath: "\(folder)/\(fd)")
                }
                #expect(links[0] == "/dev/null", "\(name): stdin is \(links[0] ?? "closed")")
                #expect(links[1] != nil && links[1] == links[2] && links[1]?.hasPrefix("pipe:") == true, "\(name): \(links)")
                for target in leaked {
                    #expect(!links.values.contains(target), "\(name) holds the test's \(target)")
                }
            }
        }
    }

    /// Each executable sets its allocator up before main, by its name: the two that stream blob
    /// chunks for large buffers, the others generally. Each says which when ready.
    @Test func everyServiceLogsItsAllocatorProfile() async throws {
        let expected = ["sofa-gateway": "large buffers", "sofa-blob": "large buffers", "sofa-storage": "general",
                        "sofa-query": "general", "sofa-replicator": "general"]
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-it-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (lines, output) = AsyncStream.makeStream(of: String.self)
        let supervisor = try Supervisor(.init(dataDirectory: directory, gatewayPort: try freePort(), queryWorkers: 1,
                                              logLevel: "info")) { output.yield($0) }
        do { try await supervisor.start(timeout: .seconds(60)) } catch {
            await supervisor.stop()
            throw error
        }
        // A service answers health as soon as its parts are up, and logs "ready" just after:
        // read the log as it comes until every service has said it.
        let found = try? await withDeadline(.seconds(20)) { () -> [String: String] in
            var found: [String: String] = [:]
            for await line in lines where line.hasSuffix(" ready") {
                guard let name = expected.keys.first(where: { line.contains(" \($0): ") }),
                      let value = line.split(separator: " ").first(where: { $0.hasPrefix("allocator=") }) else { continue }
                // "allocator=large buffers pid=…": the value runs to the next `key=`.
                let after = line[value.startIndex...].dropFirst("allocator=".count)
                found[name] = after.split(separator: " ").prefix { !$0.contains("=") }.joined(separator: " ")
                if found.count == expected.count { break }
            }
            return found
        }
        await supervisor.stop()
        output.finish()
        #expect(found == expected)
    }
}

/// `sofa compact`: old revisions stay readable until compaction drops their bodies; current
/// revisions are untouched.
@Suite struct CompactCommandTests {
    @Test func compactionDropsOldBodiesAndKeepsCurrentOnes() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("app")
            let first = try await db.put(id: "a", json: #"{"v":1}"#)
            let second = try await db.put(id: "a", json: #"{"v":2}"#, rev: first.rev)
            #expect(try await db.get(id: "a", rev: first.rev).rev == first.rev)
            let run = try await runSofa(["compact", "app"], gateway: cluster.supervisor.gatewayEndpoint)
            #expect(run.status == 0, "\(run.err)")
            #expect(try JSON.parse(run.out.trimmingCharacters(in: .whitespacesAndNewlines))["ok"] == true)
            await #expect(throws: SofaError.self) { try await db.get(id: "a", rev: first.rev) }
            let current = try await db.get(id: "a")
            #expect(current.rev == second.rev)
            #expect(try current.json() == ["v": 2])
        }
    }
}

/// `sofa query --to-json`: N1QL translated to the JSON tree without running it (no cluster needed).
@Suite struct QueryCommandTests {
    @Test func toJSONPrintsCanonicalTree() async throws {
        let run = try await runSofa(["query", "--to-json", "SELECT name, age FROM _ WHERE age >= 21 ORDER BY age DESC LIMIT 3"],
                                    gateway: "tcp://127.0.0.1:1")
        #expect(run.status == 0, "\(run.err)")
        let expected = #"{"FROM":[{"COLLECTION":"_"}],"LIMIT":3,"ORDER_BY":[["DESC",[".age"]]],"WHAT":[[".name"],[".age"]],"WHERE":[">=",[".age"],21]}"#
        #expect(run.out.trimmingCharacters(in: .whitespacesAndNewlines) == expected)
    }

    @Test func syntaxErrorsAreClearErrors() async throws {
        let bad = try await runSofa(["query", "--to-json", "SELECT FROM WHERE"], gateway: "tcp://127.0.0.1:1")
        #expect(bad.status != 0)
        expectErrorLine(bad.err, .invalidQuery)
        let missing = try await runSofa(["query", "--to-json"], gateway: "tcp://127.0.0.1:1")
        #expect(missing.status != 0)
    }
}
