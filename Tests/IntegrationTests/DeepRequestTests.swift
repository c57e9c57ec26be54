import Foundation
import SofaClient
import SofaCore
import Testing

/// Requests whose structure nests without end (a chain of 40,000 operators, JSON nested past its
/// bound) are errors that name the limit, through every entry point that reads them: the query
/// workers, the index DDL, a replication's filter and the CLI. No process dies, so none restarts.
@Suite(.serialized) struct DeepRequestTests {
    static let chain = "SELECT 1" + String(repeating: " + 1", count: 40_000) + " FROM _"

    static func isDepthError(_ error: SofaError) -> Bool {
        error.message.contains("at most 256 levels deep") || error.message.contains("nesting deeper than 512")
    }

    @Test func deepQueriesAreRefusedAndNoWorkerDies() async throws {
        try await Cluster.with(queryWorkers: 2) { cluster in
            let db = try await cluster.client.createDatabase("deep")
            try await db.put(id: "a", json: #"{"n":1}"#)
            for _ in 0..<3 {
                await #expect { _ = try await db.query(n1ql: Self.chain) } throws: { error in
                    guard let error = error as? SofaError else { return false }
                    return error.sofaCode == .invalidQuery && Self.isDepthError(error)
                }
            }
            // The JSON query schema: nested past the JSON bound.
            var tree: JSON = 1
            for _ in 0..<600 { tree = ["+", tree, 1] }
            await #expect { _ = try await db.query(json: ["WHAT": [tree]]) } throws: { error in
                (error as? SofaError).map(Self.isDepthError) ?? false
            }
            // An index over a deep expression: the reason, not "must be JSON".
            await #expect { try await db.createIndex("deep", kind: .value, expressions: [tree]) } throws: { error in
                (error as? SofaError).map(Self.isDepthError) ?? false
            }
            // The longest chain the parser takes runs, or is refused by SQLite, cleanly.
            let long = "SELECT 1" + String(repeating: " + 1", count: 250) + " AS n FROM _"
            do throws(SofaError) {
                #expect(try await db.query(n1ql: long).rows == [[.int(251)]])
            } catch {
                #expect(error.sofaCode == .invalidQuery, "\(error)")
            }
            #expect(try await db.query(n1ql: "SELECT n FROM _").rows == [[.int(1)]])
            for name in cluster.supervisor.childNames {
                #expect(cluster.supervisor.restartCount(of: name) == 0, "\(name) restarted")
            }
        }
    }

    @Test func deepReplicationFilterFailsTheReplicationOnly() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("src")
            _ = try await cluster.client.createDatabase("dst")
            try await db.put(id: "a", json: #"{"n":1}"#)
            let filter = "n = 1" + String(repeating: " + 1", count: 40_000)
            let handle = try await cluster.client.replicate(from: "src", to: "dst", filter: .query(filter))
            let ended = try await handle.wait(timeout: .seconds(30)) { $0.state.isFinal || !$0.lastError.isEmpty }
            #expect(ended.allSatisfy { $0.lastError.contains("at most 256 levels deep") }, "\(ended)")
            try? await handle.stop()
            for name in cluster.supervisor.childNames {
                #expect(cluster.supervisor.restartCount(of: name) == 0, "\(name) restarted")
            }
        }
    }

    @Test func cliRefusesDeepExpressions() async throws {
        // One argument may hold at most 128 KiB, so 20,000 links (the parser stops at 256).
        let chain = "SELECT 1" + String(repeating: " + 1", count: 20_000)
        let translated = try await runSofa(["query", "--to-json", chain], gateway: "tcp://127.0.0.1:1")
        #expect(translated.status == 1, "exit \(translated.status)")
        #expect(translated.err.contains("at most 256 levels deep"), "\(translated.err)")
        let index = try await runSofa(["index", "create", "db", "deep", "a" + String(repeating: " + 1", count: 20_000)],
                                      gateway: "tcp://127.0.0.1:1")
        #expect(index.status == 1, "exit \(index.status)")
        #expect(index.err.contains("at most 256 levels deep"), "\(index.err)")
    }
}
