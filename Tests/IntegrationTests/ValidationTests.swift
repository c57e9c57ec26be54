import Foundation
import SofaClient
import SofaCore
import SofaWire
import Testing

/// Design documents' `validate_doc_update` on every write (a client's single and bulk writes, a
/// replication's), and their JavaScript changes filters, through real processes.
@Suite(.serialized) struct ValidationTests {
    static let rules: JSON = ["validate_doc_update": """
        function (newDoc, oldDoc, userCtx, secObj) {
          if (newDoc._deleted) {
            if (userCtx.roles.indexOf('_admin') === -1) { throw({unauthorized: 'only admins delete'}); }
            return;
          }
          if (!newDoc.title) { throw({forbidden: 'a document needs a title'}); }
          if (oldDoc && oldDoc.locked) { throw({forbidden: 'document ' + oldDoc._id + ' is locked'}); }
        }
        """, "filters": ["titled": "function (doc, req) { return doc.title === req.query.title; }"]]

    @Test func writesAreValidatedAsCouchDBDoes() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("app")
            _ = try await db.put(id: "before", json: #"{"untitled":true}"#)
            try await db.putDesignDocument("rules", Self.rules)

            await #expect { _ = try await db.put(id: "x", json: #"{"body":1}"#) } throws: {
                ($0 as? SofaError)?.sofaCode == .forbidden && ($0 as? SofaError)?.message == "a document needs a title"
            }
            await #expect(throws: SofaError.self) { _ = try await db.put(json: #"{"no":"id"}"#) }
            let titled = try await db.put(id: "t", json: #"{"title":"T","locked":true}"#)
            await #expect { _ = try await db.put(id: "t", json: #"{"title":"U"}"#, rev: titled.rev) } throws: {
                ($0 as? SofaError)?.message == "document t is locked"
            }
            _ = try await db.put(json: #"{"title":"generated id"}"#)

            // A bulk write: the refused documents are answered in their places, the others written.
            let results = try await db.bulk([.put(id: "b1", json: #"{"title":"one"}"#), .put(id: "b2", json: #"{"x":2}"#),
                                             .put(id: "b3", json: #"{"title":"three"}"#)])
            #expect(results.map(\.id) == ["b1", "b2", "b3"])
            #expect(results.map { $0.error?.sofaCode } == [nil, .forbidden, nil])
            #expect(try await db.get(id: "b3").body.isEmpty == false)
            await #expect(throws: SofaError.self) { _ = try await db.get(id: "b2") }

            // userCtx: a member who is not an admin may not delete; the server admin may.
            try await cluster.client.users.create("ann", password: "ann-pw")
            try await db.setSecurityObject(SecurityObject(members: .init(names: ["ann"])))
            let ann = try await SecurityTests.connect(cluster, "ann", "ann-pw")
            defer { ann.close() }
            let b1 = try await db.get(id: "b1")
            await #expect { _ = try await ann.database("app").delete(id: "b1", rev: b1.rev) } throws: {
                ($0 as? SofaError)?.sofaCode == .unauthorized && ($0 as? SofaError)?.message == "only admins delete"
            }
            _ = try await db.delete(id: "b1", rev: b1.rev)
            // Design documents and local documents are not validated.
            try await db.putDesignDocument("other", ["views": [:]])
            _ = try await db.put(id: "_local/state", json: #"{"x":1}"#)

            // JavaScript filters: whether each document passes, with the request object.
            let passes = try await db.filter("rules/titled", documents: [["_id": "a", "title": "T"], ["_id": "b", "title": "U"]],
                                              request: ["query": ["title": "T"]])
            #expect(passes == [true, false])
            await #expect(throws: SofaError.self) { _ = try await db.filter("rules/nope", documents: [["_id": "a"]]) }
        }
    }

    @Test func replicatedWritesAreValidatedToo() async throws {
        try await Cluster.with { cluster in
            let source = try await cluster.client.createDatabase("source")
            let target = try await cluster.client.createDatabase("target")
            try await target.putDesignDocument("rules", Self.rules)
            _ = try await source.bulk((0..<10).map { n in
                .put(id: "d\(n)", json: n % 2 == 0 ? #"{"title":"even \#(n)"}"# : #"{"odd":\#(n)}"#)
            })
            // A design document replicates like the others: its view answers on the target.
            try await source.putDesignDocument("views", ["views": ["titles": ["map": "function (doc) { if (doc.title) { emit(doc.title, null); } }"]]])
            let handle = try await cluster.client.replicate(from: "source", to: "target")
            let status = try await handle.wait { $0.state.isFinal }
            // Refusals are the replication's documents' errors (CouchDB's doc_write_failures), not its end.
            #expect(status.first?.state == .completed)
            #expect(status.first?.lastError.contains("a document needs a title") == true)
            let written = try await target.allDocs(startKey: "d", endKey: "d\u{FFFF}").map(\.id)
            #expect(written == ["d0", "d2", "d4", "d6", "d8"])
            let titles = try await target.view("views/titles")["rows"]?.arrayValue?.compactMap { $0["key"]?.stringValue }
            #expect(titles == ["even 0", "even 2", "even 4", "even 6", "even 8"])
        }
    }

    /// A replication filtered by a design document's filter (CouchDB's `filter: "ddoc/name"` with
    /// `query_params`) copies the changes that pass it on the source, deletions shown to it with
    /// `_deleted`; one naming a filter the source does not have fails at once, saying so.
    @Test func replicationsRunTheSourcesDesignFilter() async throws {
        try await Cluster.with { cluster in
            let source = try await cluster.client.createDatabase("source")
            let target = try await cluster.client.createDatabase("target")
            let every = "function (doc, req) { return doc._deleted ? doc._id === 'd04' : doc.n % Number(req.query.by) === 0; }"
            try await source.putDesignDocument("pick", ["filters": ["every": .string(every)]])
            let written = try await source.bulk((0..<20).map { n in .put(id: String(format: "d%02d", n), json: #"{"n":\#(n)}"#) })
            _ = try await source.delete(id: "d04", rev: written[4].rev)
            _ = try await source.delete(id: "d05", rev: written[5].rev)
            let handle = try await cluster.client.replicate(from: "source", to: "target",
                                                            filter: .design("pick/every", queryParams: ["by": "3"]))
            #expect(handle.initial.first?.designFilter == "pick/every")
            let done = try await handle.wait { $0.state.isFinal }
            #expect(done.first?.state == .completed, "\(done)")
            #expect(try await target.allDocs().map(\.id) == ["d00", "d03", "d06", "d09", "d12", "d15", "d18"])
            // d04's deletion passed (a tombstone arrived); d05's did not.
            #expect(try await target.changes(ChangesQuery(includeDeleted: true)).changes.filter(\.deleted).map(\.id) == ["d04"])

            let missing = try await cluster.client.replicate(from: "source", to: "target", filter: .design("pick/nope"))
            let failed = try await missing.wait { $0.state.isFinal }
            #expect(failed.first?.state == .failed, "\(failed)")
            #expect(failed.first?.lastError.contains("pick/nope") == true, "\(failed)")
        }
    }

    @Test func aValidatorThatLoopsFailsItsWritesOnlyAndOtherDatabasesGoOn() async throws {
        try await Cluster.with { cluster in
            let stuck = try await cluster.client.createDatabase("stuck")
            let free = try await cluster.client.createDatabase("free")
            try await stuck.putDesignDocument("spin", ["validate_doc_update": "function () { while (true) {} }"])
            let refused = Task { try await stuck.put(id: "a", json: #"{"x":1}"#) }
            for n in 0..<20 { _ = try await free.put(id: "f\(n)", json: #"{"n":\#(n)}"#) }
            await #expect { _ = try await refused.value } throws: { ($0 as? SofaError)?.sofaCode == .timeout }
            await #expect(throws: SofaError.self) { _ = try await stuck.get(id: "a") }
            #expect(try await free.allDocs().count == 20)
        }
    }
}
