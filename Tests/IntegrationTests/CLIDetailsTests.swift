import Foundation
import SofaBench
import SofaClient
import Testing

/// The small things of the CLI a first hour runs into, through the real executables: index
/// kinds by name, `conflicts`'s current rev, `changes --since now`, `all-docs`'s total_rows,
/// `blob put`'s note on unreferenced blobs, progress only on a terminal, and `sofa-bench`
/// saying when its build is not a release build.
@Suite(.serialized) struct CLIDetailsTests {
    private func sofa(_ arguments: [String], _ gateway: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> JSON {
        let run = try await runSofa(arguments, gateway: gateway)
        try #require(run.status == 0, "sofa \(arguments.joined(separator: " ")): \(run.err)", sourceLocation: sourceLocation)
        return try parseOutput(run.out)
    }

    @Test func listingsAndFeeds() async throws {
        try await Cluster.with { cluster in
            let gw = cluster.supervisor.gatewayEndpoint
            let db = try await cluster.client.createDatabase("app")
            // index list: kinds by name.
            _ = try await sofa(["index", "create", "app", "byV", "v"], gw)
            _ = try await sofa(["index", "create", "app", "byText", "--fts", "t"], gw)
            _ = try await sofa(["index", "create", "app", "byTag", "--array", "tags"], gw)
            let listed = try await runSofa(["index", "list", "app"], gateway: gw)
            let kinds = try listed.out.split(separator: "\n").map { try JSON.parse(Array($0.utf8)) }
                .map { [$0["name"]?.stringValue ?? "", $0["kind"]?.stringValue ?? "?"] }
            #expect(Set(kinds) == [["byV", "value"], ["byText", "full-text"], ["byTag", "array"]])

            // conflicts: the current revision beside the conflicting ones.
            let base = try await db.put(id: "d", body: Array(#"{"v":1}"#.utf8)).rev
            _ = try await db.insert(id: "d", history: ["2-bb", base], body: Array(#"{"v":2}"#.utf8))
            _ = try await db.insert(id: "d", history: ["2-aa", base], body: Array(#"{"v":3}"#.utf8))
            let conflicts = try await sofa(["conflicts", "app", "d"], gw)
            #expect(conflicts == ["id": "d", "rev": "2-bb", "conflicts": ["2-aa"]])

            // all-docs: total_rows counts the collection's live documents, whatever is selected.
            for id in ["a", "b", "c"] { _ = try await db.put(id: id, body: Array("{}".utf8)) }
            _ = try await db.delete(id: "c", rev: try await db.get(id: "c").rev)
            let page = try await sofa(["all-docs", "app", "--limit", "1", "--skip", "1"], gw)
            #expect(page["total_rows"] == 3)
            #expect(page["offset"] == 1)
            #expect(page["rows"]?.arrayValue?.map { $0["id"] } == ["b"])
            _ = try await sofa(["collection", "create", "app", "other"], gw)
            #expect(try await sofa(["all-docs", "app", "--collection", "other"], gw)["total_rows"] == 0)

            // changes --since now: nothing yet, at the last sequence; later changes come after it.
            let last = try await db.changes(since: 0, limit: 0).lastSequence
            let now = try await sofa(["changes", "app", "--since", "now"], gw)
            #expect(now["results"] == [])
            #expect(now["last_seq"]?.intValue == Int64(last))
            _ = try await db.put(id: "e", body: Array("{}".utf8))
            let after = try await sofa(["changes", "app", "--since", "\(last)"], gw)
            #expect(after["results"]?.arrayValue?.map { $0["id"] } == ["e"])
            let bad = try await runSofa(["changes", "app", "--since", "later"], gateway: gw)
            #expect(bad.status != 0 && bad.err.contains("--since"))
        }
    }

    @Test func blobNoteAndNoProgressWhenPiped() async throws {
        try await Cluster.with { cluster in
            let gw = cluster.supervisor.gatewayEndpoint
            _ = try await cluster.client.createDatabase("app")
            let file = cluster.directory.appendingPathComponent("blob.bin")
            try Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: file)
            let put = try await runSofa(["blob", "put", "app", file.path], gateway: gw)
            #expect(put.status == 0)
            let key = try #require(try parseOutput(put.out)["key"]?.stringValue)
            // Piped: the note on stderr, one line, and no progress.
            #expect(put.err == "sofa: note: until a document references \(key) ({\"@type\":\"blob\",\"digest\":\"\(key)\"}), "
                    + "the next compaction deletes it\n")
            let copy = cluster.directory.appendingPathComponent("copy.bin")
            let get = try await runSofa(["blob", "get", "app", key, "-o", copy.path], gateway: gw)
            #expect(get.status == 0 && get.err.isEmpty, "\(get.err)")
            #expect(try Data(contentsOf: copy) == Data(contentsOf: file))
            let compact = try await runSofa(["compact", "app"], gateway: gw)
            #expect(compact.status == 0 && compact.err.isEmpty, "\(compact.err)")

            // On a terminal: each shows its line, then erases it.
            let upload = try await runInTerminal(["blob", "put", "app", file.path], gateway: gw)
            #expect(upload.status == 0 && upload.output.contains("\rblob put  ") && upload.output.contains("/3.0 MiB"),
                    "\(upload.output)")
            let download = try await runInTerminal(["blob", "get", "app", key, "-o", copy.path], gateway: gw)
            #expect(download.status == 0 && download.output.contains("\rblob get  "), "\(download.output)")
            let compacted = try await runInTerminal(["compact", "app"], gateway: gw)
            #expect(compacted.status == 0 && compacted.output.contains("\rcompact  "), "\(compacted.output)")
            #expect(compacted.output.contains("\r\u{1B}[K"), "\(compacted.output)")
        }
    }

    @Test func benchSaysWhenItIsADebugBuild() async throws {
        // The warning comes once the arguments name a command, not for help.
        let run = try await runSofa(["codecs"], gateway: "tcp://127.0.0.1:9", executable: "sofa-bench")
        #expect(run.status == 0)
        #expect(try parseOutput(run.out).objectValue?.isEmpty == false)
        for help in [["--help"], ["codecs", "--help"], ["help", "codecs"]] {
            let shown = try await runSofa(help, gateway: "tcp://127.0.0.1:9", executable: "sofa-bench")
            #expect(shown.out.contains("OVERVIEW") && !shown.err.contains("warning") && !shown.out.contains("warning"), "\(help)")
        }
        #if DEBUG
        #expect(run.err.hasPrefix("sofa-bench: warning: this is a debug build"), "\(run.err)")
        #expect(Bench.buildWarning != nil)
        #else
        #expect(!run.err.contains("warning"), "\(run.err)")
        #endif
    }
}
