import Foundation
import SofaClient
import Testing

/// `sofa import` as a round trip: IDs from the documents' `_id`, a second import that fails,
/// skips or updates (`--on-conflict`, `--upsert`), and its progress only on a terminal.
@Suite(.serialized) struct CLIImportTests {
    private func imported(_ arguments: [String], _ gateway: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> JSON {
        let run = try await runSofa(["import"] + arguments, gateway: gateway)
        try #require(run.status == 0, "sofa import \(arguments.joined(separator: " ")): \(run.err)", sourceLocation: sourceLocation)
        #expect(!run.err.contains("\r"), "progress printed to a pipe: \(run.err)", sourceLocation: sourceLocation)
        return try parseOutput(run.out)
    }

    private func counts(_ summary: JSON) -> [Int64?] {
        ["created", "updated", "skipped", "failed"].map { summary[$0]?.intValue }
    }

    @Test func idsFromDocumentsAndASecondImport() async throws {
        try await Cluster.with { cluster in
            let gw = cluster.supervisor.gatewayEndpoint
            let db = try await cluster.client.createDatabase("app")
            let file = cluster.directory.appendingPathComponent("docs.jsonl")
            // Two with an _id (one with a stale _rev, which an import drops), one without.
            try Data(#"""
                {"_id":"alice","age":30}
                {"_id":"bob","_rev":"7-abc","age":40}
                {"age":50}

                """#.utf8).write(to: file)
            let first = try await imported(["app", file.path], gw)
            #expect(counts(first) == [3, 0, 0, 0])
            #expect(first["imported"] == 3)
            #expect(try await db.allDocs().map(\.id) == ["0000003", "alice", "bob"])
            let bob = try await db.get(id: "bob")
            #expect(bob.rev.hasPrefix("1-"))
            #expect(try bob.json() == ["age": 40])

            // Again, by default: each document fails with a conflict, reported; exit 1.
            let again = try await runSofa(["import", "app", file.path], gateway: gw)
            #expect(again.status == 1)
            #expect(counts(try parseOutput(again.out)) == [0, 0, 0, 3])
            #expect(again.err.split(separator: "\n").count == 3)
            #expect(again.err.contains(#""id":"alice""#) && again.err.contains(#""code":8"#))
            #expect(try await runSofa(["import", "app", file.path, "--on-conflict", "fail"], gateway: gw).status == 1)

            // --on-conflict skip leaves them as they are.
            #expect(counts(try await imported(["app", file.path, "--on-conflict", "skip"], gw)) == [0, 0, 3, 0])
            #expect(try await db.get(id: "bob").rev == bob.rev)

            // --upsert updates them from their current revision; a new one is created.
            try Data(#"""
                {"_id":"alice","age":31}
                {"_id":"bob","_rev":"1-stale","age":41}
                {"_id":"carol","age":60}

                """#.utf8).write(to: file)
            #expect(counts(try await imported(["app", file.path, "--upsert"], gw)) == [1, 2, 0, 0])
            let updated = try await db.get(id: "bob", history: true)
            #expect(updated.rev.hasPrefix("2-"))
            #expect(try updated.json() == ["age": 41])
            #expect(try await db.get(id: "alice").json() == ["age": 31])
            #expect(try await db.get(id: "carol").rev.hasPrefix("1-"))
            #expect(try await db.conflicts(id: "bob").isEmpty)

            // A deleted document is created again by an upsert.
            _ = try await db.delete(id: "carol", rev: try await db.get(id: "carol").rev)
            let revived = try await imported(["app", file.path, "--upsert"], gw)
            #expect(counts(revived) == [1, 2, 0, 0])
            #expect(try await db.get(id: "carol").json() == ["age": 60])

            // Options that contradict each other are refused before anything is read.
            let both = try await runSofa(["import", "app", file.path, "--upsert", "--on-conflict", "skip"], gateway: gw)
            #expect(both.status != 0 && both.err.contains("--upsert"))
            #expect(try await runSofa(["import", "app", file.path, "--on-conflict", "replace"], gateway: gw).status != 0)
            // An _id that is not a string fails that document alone.
            try Data("{\"_id\":5}\n{\"_id\":\"dave\"}\n".utf8).write(to: file)
            let bad = try await runSofa(["import", "app", file.path], gateway: gw)
            #expect(bad.status == 1)
            #expect(counts(try parseOutput(bad.out)) == [1, 0, 0, 1])
            #expect(bad.err.contains("_id"))
        }
    }

    @Test func progressOnlyOnATerminal() async throws {
        try await Cluster.with { cluster in
            let gw = cluster.supervisor.gatewayEndpoint
            _ = try await cluster.client.createDatabase("people")
            let names = litecoreData.appendingPathComponent("names_100.json").path
            // Through pipes (as above): the summary alone, no progress line.
            let piped = try await runSofa(["import", "people", names, "--batch", "10"], gateway: gw)
            #expect(piped.status == 0)
            #expect(piped.err.isEmpty, "\(piped.err)")
            // At a terminal: a line rewritten in place, with done/total and the rate, then erased.
            let shown = try await runInTerminal(["import", "people", names, "--batch", "10", "--upsert"], gateway: gw)
            #expect(shown.status == 0, "\(shown.output)")
            #expect(shown.output.contains("\rimport  "), "\(shown.output)")
            #expect(shown.output.contains("/100 docs"), "\(shown.output)")
            #expect(shown.output.contains(" docs/s  ETA "), "\(shown.output)")
            #expect(shown.output.contains("\r\u{1B}[K"), "\(shown.output)")
            #expect(shown.output.contains(#""updated":100"#), "\(shown.output)")
        }
    }
}
