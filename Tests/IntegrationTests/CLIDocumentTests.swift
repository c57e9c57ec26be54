import Foundation
import SofaClient
import Testing

/// The `sofa` document commands through the real executable: JSON on stdout, errors on stderr
/// with a non-zero exit.
@Suite(.serialized) struct CLIDocumentTests {
    /// Runs `sofa` and parses its stdout, expecting success.
    private func sofa(_ arguments: [String], _ gateway: String, stdin: String? = nil,
                      sourceLocation: SourceLocation = #_sourceLocation) async throws -> JSON {
        let run = try await runSofa(arguments, gateway: gateway, stdin: stdin)
        try #require(run.status == 0, "sofa \(arguments.joined(separator: " ")): \(run.err)", sourceLocation: sourceLocation)
        return try parseOutput(run.out)
    }

    /// Runs `sofa` expecting a failure with the `.sofa` error `code` on stderr.
    private func sofaFails(_ arguments: [String], _ gateway: String, code: SofaError.Code,
                           sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let run = try await runSofa(arguments, gateway: gateway)
        #expect(run.status != 0, "sofa \(arguments.joined(separator: " ")) succeeded", sourceLocation: sourceLocation)
        #expect(run.out.isEmpty, sourceLocation: sourceLocation)
        expectErrorLine(run.err, code, sourceLocation: sourceLocation)
    }

    @Test func databasesCollectionsAndDocuments() async throws {
        try await Cluster.with { cluster in
            let gw = cluster.supervisor.gatewayEndpoint
            #expect(try await sofa(["db", "create", "vv", "--versioning", "vectors"], gw)["versioning"] == "vectors")
            #expect(try await sofa(["db", "create", "app"], gw)["versioning"] == "trees")
            #expect(try await runSofa(["db", "create", "x", "--versioning", "lists"], gateway: gw).status != 0)
            #expect(try await sofa(["collection", "create", "app", "inv.items"], gw)["ok"] == true)
            #expect(try await sofa(["collection", "list", "app"], gw) == ["_default._default", "inv.items"])
            let put = try await sofa(["put", "app", "a", #"{"x":1}"#, "--collection", "inv.items"], gw)
            let rev = try #require(put["rev"]?.stringValue)
            #expect(try await sofa(["get", "app", "a", "--collection", "inv.items"], gw)["x"] == 1)
            try await sofaFails(["get", "app", "a"], gw, code: .notFound)
            try await sofaFails(["put", "app", "a", "{}", "--collection", "nope"], gw, code: .notFound)
            let deleted = try await sofa(["delete", "app", "a", "--rev", rev, "--collection", "inv.items"], gw)
            #expect(deleted["deleted"] == true)
            #expect(try await sofa(["collection", "delete", "app", "inv.items"], gw)["ok"] == true)
            try await sofaFails(["get", "app", "a", "--collection", "inv.items"], gw, code: .notOpen)
            _ = try await sofa(["put", "app", "b", "{}"], gw)
            let info = try await sofa(["db", "info", "app"], gw)
            #expect(info["db_name"] == "app")
            #expect(info["doc_count"] == 1)
            #expect(info["versioning"] == "trees")
            #expect(info["uuid"]?.stringValue?.count == 36)
            try await sofaFails(["db", "info", "nope"], gw, code: .notFound)
        }
    }

    @Test func revisionsConflictsPurgeAndExpiration() async throws {
        try await Cluster.with { cluster in
            let gw = cluster.supervisor.gatewayEndpoint
            _ = try await sofa(["db", "create", "app"], gw)
            let base = try #require(try await sofa(["put", "app", "d", #"{"v":1}"#], gw)["rev"]?.stringValue)
            let inserted = try await sofa(["put", "app", "d", #"{"v":"bb"}"#, "--new-edits=false", "--history", "2-bb,\(base)"], gw)
            #expect(inserted["rev"] == "2-bb")
            #expect(inserted["conflict"] == false)
            let branch = try await sofa(["put", "app", "d", "-", "--new-edits=false", "--history", "2-aa,\(base)"], gw,
                                  stdin: #"{"v":"aa"}"#)
            #expect(branch["conflict"] == true)
            let withRevs = try await sofa(["get", "app", "d", "--revs"], gw)
            #expect(withRevs["_rev"] == "2-bb")
            #expect(withRevs["_revisions"]?["start"] == 2)
            #expect(withRevs["_revisions"]?["ids"]?.arrayValue?.count == 2)
            #expect(withRevs["_conflicted"] == true)
            let leaves = try await sofa(["get", "app", "d", "--open-revs"], gw)
            #expect(Set(leaves.arrayValue?.compactMap { $0["_rev"]?.stringValue } ?? []) == ["2-aa", "2-bb"])
            #expect(try await sofa(["conflicts", "app", "d"], gw)["conflicts"] == ["2-aa"])
            let merged = try await sofa(["resolve", "app", "d", "--winner", "2-bb", "--loser", "2-aa", "--merged", #"{"v":"both"}"#], gw)
            #expect(merged["rev"]?.stringValue?.hasPrefix("3-") == true)
            #expect(try await sofa(["conflicts", "app", "d"], gw)["conflicts"] == [])
            #expect(try await sofa(["get", "app", "d"], gw)["v"] == "both")
            // Bad input to insert with history.
            try await sofaFails(["put", "app", "e", "{}", "--new-edits=false", "--history", "nope"], gw, code: .badRevisionID)
            try await sofaFails(["put", "app", "e", "{}", "--new-edits=false", "--history", "3-cc,1-aa"], gw, code: .badRevisionID)
            try await sofaFails(["put", "app", "e", "[1]"], gw, code: .badJSON)
            #expect(try await runSofa(["put", "app", "e", "{}", "--new-edits=false"], gateway: gw).status != 0)
            // Expiration.
            let at = Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000
            #expect(try await sofa(["expire", "app", "d", "--at", String(at)], gw)["expiration"] == .int(at))
            #expect(try await sofa(["expire", "app", "d"], gw)["expiration"] == .int(at))
            #expect(try await sofa(["expire", "app", "--next"], gw)["next_expiration"] == .int(at))
            let soon = try await sofa(["expire", "app", "d", "--in", "600"], gw)["expiration"]?.intValue ?? 0
            #expect(abs(soon - Int64(Date().timeIntervalSince1970 * 1000) - 600_000) < 60_000)
            #expect(try await sofa(["expire", "app", "d", "--cancel"], gw)["expiration"] == .null)
            // Purge.
            #expect(try await sofa(["purge", "app", "d"], gw)["ok"] == true)
            try await sofaFails(["get", "app", "d"], gw, code: .notFound)
            try await sofaFails(["purge", "app", "d"], gw, code: .notFound)
        }
    }

    @Test func changesAndAllDocs() async throws {
        try await Cluster.with { cluster in
            let gw = cluster.supervisor.gatewayEndpoint
            _ = try await sofa(["db", "create", "app"], gw)
            for id in ["c", "a", "b"] { _ = try await sofa(["put", "app", id, #"{"id":"\#(id)"}"#], gw) }
            let changes = try await sofa(["changes", "app"], gw)
            #expect(changes["results"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ["c", "a", "b"])
            #expect(changes["last_seq"] == 3)
            let since = try await sofa(["changes", "app", "--since", "1", "--limit", "1", "--bodies"], gw)
            #expect(since["results"]?.arrayValue?.count == 1)
            #expect(since["results"]?.arrayValue?.first?["doc"]?["id"] == "a")
            let descending = try await sofa(["changes", "app", "--descending", "--limit", "1"], gw)
            #expect(descending["results"]?.arrayValue?.first?["id"] == "b")
            let all = try await sofa(["all-docs", "app"], gw)
            #expect(all["rows"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ["a", "b", "c"])
            let page = try await sofa(["all-docs", "app", "--skip", "1", "--limit", "1", "--bodies"], gw)
            #expect(page["rows"]?.arrayValue?.first?["doc"]?["id"] == "b")
            let range = try await sofa(["all-docs", "app", "--start", "b", "--end", "c"], gw)
            #expect(range["rows"]?.arrayValue?.count == 2)
        }
    }

    @Test func importJSONLinesAndArrays() async throws {
        try await Cluster.with { cluster in
            let gw = cluster.supervisor.gatewayEndpoint
            _ = try await sofa(["db", "create", "people"], gw)
            let names = litecoreData.appendingPathComponent("names_100.json").path
            let states = litecoreData.appendingPathComponent("states_titlecase.json").path
            let lines = try await sofa(["import", "people", names, "--batch", "30"], gw)
            #expect(lines["imported"] == 100)
            #expect(lines["failed"] == 0)
            #expect((lines["docs_per_s"]?.intValue ?? 0) > 0)
            let people = try await cluster.client.database("people").allDocs()
            #expect(people.map(\.id) == (1...100).map { String(format: "%07d", $0) })
            let first = try await cluster.client.database("people").get(id: "0000001").json()
            #expect(first["name"]?["first"] == "Lue")
            #expect(try await cluster.client.database("people").get(id: "0000100").json()["name"] != nil)

            _ = try await sofa(["db", "create", "states"], gw)
            #expect(try await sofa(["import", "states", states], gw)["imported"] == 59)
            let alabama = try await cluster.client.database("states").get(id: "0000001").json()
            #expect(alabama["abbreviation"] == "AL")
            _ = try await sofa(["collection", "create", "states", "geo.byCode"], gw)
            #expect(try await sofa(["import", "states", states, "--id-field", "abbreviation", "--collection", "geo.byCode"], gw)["imported"] == 59)
            #expect(try await cluster.client.database("states").collection("geo.byCode").get(id: "CA").json()["name"] == "California")
            _ = try await sofa(["collection", "create", "states", "prefixed"], gw)
            #expect(try await sofa(["import", "states", states, "--id-prefix", "s-", "--collection", "prefixed"], gw)["imported"] == 59)
            #expect(try await cluster.client.database("states").collection("prefixed").get(id: "s-0000059").id == "s-0000059")

            // Bad lines fail one by one, reported on stderr; the rest is imported; exit 1.
            let bad = cluster.directory.appendingPathComponent("bad.jsonl")
            try Data("{\"ok\":1}\n[1,2]\n\n{\"ok\":4}\n{\"_id\":\"other\"}\n".utf8).write(to: bad)
            let run = try await runSofa(["import", "people", bad.path, "--id-prefix", "bad-"], gateway: gw)
            #expect(run.status != 0)
            let summary = try parseOutput(run.out)
            #expect(summary["imported"] == 2)
            #expect(summary["failed"] == 2)
            #expect(run.err.contains("\"line\":2"))
            #expect(try await cluster.client.database("people").get(id: "bad-0000004").json() == ["ok": 4])
            // Re-importing the same IDs conflicts, document by document.
            let again = try await runSofa(["import", "people", names], gateway: gw)
            #expect(try parseOutput(again.out)["failed"] == 100)
            try await sofaFails(["import", "people", "/nonexistent.json"], gw, code: .cantOpenFile)
            try await sofaFails(["import", "nope", names], gw, code: .notFound)
        }
    }
}
