import Foundation
import SofaClient
import Testing

/// The document store's rules through the SDK against real processes, in both versioning modes
/// where the rule applies.
@Suite(.serialized) struct DocumentStoreTests {
    /// Create, read, MVCC update, delete, tombstone read, re-create after deletion.
    @Test func documentLifecycleInBothModes() async throws {
        try await Cluster.with { cluster in
            for versioning in Versioning.allCases {
                let db = try await cluster.client.createDatabase("life-\(versioning.rawValue)", versioning: versioning)
                let first = try await db.put(id: "a", json: #"{"x":1}"#)
                let second = try await db.put(id: "a", json: #"{"x":2}"#, rev: first.rev)
                #expect(second.rev != first.rev)
                #expect(second.sequence > first.sequence)
                await expectFailure("\(versioning): stale rev", [.conflict]) {
                    _ = try await db.put(id: "a", json: #"{"x":3}"#, rev: first.rev)
                }
                await expectFailure("\(versioning): no rev on an existing doc", [.conflict]) {
                    _ = try await db.put(id: "a", json: #"{"x":3}"#)
                }
                let read = try await db.get(id: "a")
                #expect(read.rev == second.rev)
                #expect(try read.json() == ["x": 2])
                #expect(!read.conflicted)
                if versioning == .revisionTrees {
                    // A version-vector document keeps only its current revision (and remote ones).
                    let old = try await db.get(id: "a", rev: first.rev)
                    #expect(old.rev == first.rev)
                }
                let deleted = try await db.delete(id: "a", rev: second.rev)
                await expectFailure("\(versioning): get deleted", [.notFound]) { _ = try await db.get(id: "a") }
                let tombstone = try await db.get(id: "a", rev: deleted.rev)
                #expect(tombstone.deleted)
                let again = try await db.put(id: "a", json: #"{"x":4}"#)
                #expect(try await db.get(id: "a").rev == again.rev)
                if versioning == .revisionTrees {
                    #expect(generation(second.rev) == 2)
                    #expect(generation(deleted.rev) == 3)
                    #expect(generation(again.rev) == 4, "a re-created document continues from its tombstone")
                    let history = try await db.get(id: "a", history: true).history
                    #expect(history == [again.rev, deleted.rev, second.rev, first.rev])
                }
                let info = try await db.info()
                #expect(info.versioning == versioning)
            }
        }
    }

    /// Many writes in one call: each gets its own result, the good ones are stored.
    @Test func bulkWritesReportEachItem() async throws {
        try await Cluster.with { cluster in
            for versioning in Versioning.allCases {
                let db = try await cluster.client.createDatabase("bulk-\(versioning.rawValue)", versioning: versioning)
                let existing = try await db.put(id: "existing", json: "{}")
                let items: [(BulkItem, SofaError.Code?)] = [
                    (.put(id: "n1", json: #"{"n":1}"#), nil),
                    (.put(id: "n2", json: #"{"n":2}"#), nil),
                    (.put(id: "existing", json: #"{"n":3}"#), .conflict),
                    (.put(id: "existing", json: #"{"n":4}"#, rev: existing.rev), nil),
                    (.put(id: "array", json: "[1]"), .badJSON),
                    (.put(id: "n3", json: #"{"n":3}"#), nil),
                ]
                let results = try await db.bulk(items.map(\.0))
                try #require(results.count == items.count)
                for ((item, expected), result) in zip(items, results) {
                    #expect(result.error?.sofaCode == expected, "\(versioning) \(item): \(String(describing: result.error))")
                    if expected == nil {
                        #expect(!result.rev.isEmpty && result.sequence > 0)
                        #expect(try await db.get(id: result.id).rev == result.rev)
                    }
                }
                #expect(try await db.get(id: "existing").json() == ["n": 4])
                await expectFailure("\(versioning): the refused item", [.notFound]) { _ = try await db.get(id: "array") }
            }
        }
    }

    /// Local documents: their own revs (0-1, 0-2…), MVCC, no history, not in changes or all-docs.
    @Test func localDocuments() async throws {
        try await Cluster.with { cluster in
            for versioning in Versioning.allCases {
                let db = try await cluster.client.createDatabase("local-\(versioning.rawValue)", versioning: versioning)
                let first = try await db.putLocal(id: "checkpoint", json: #"{"seq":1}"#)
                #expect(first.id == "_local/checkpoint")
                #expect(first.rev == "0-1")
                let second = try await db.putLocal(id: "_local/checkpoint", json: #"{"seq":2}"#, rev: first.rev)
                #expect(second.rev == "0-2")
                await expectFailure("\(versioning): stale local rev", [.conflict]) {
                    _ = try await db.putLocal(id: "checkpoint", json: #"{"seq":3}"#, rev: first.rev)
                }
                #expect(try await db.getLocal(id: "checkpoint").json() == ["seq": 2])
                _ = try await db.put(id: "visible", json: "{}")
                #expect(try await db.changes(since: 0, limit: 0).changes.map(\.id) == ["visible"])
                #expect(try await db.allDocs().map(\.id) == ["visible"])
                try await db.deleteLocal(id: "checkpoint", rev: second.rev)
                await expectFailure("\(versioning): deleted local doc", [.notFound]) { _ = try await db.getLocal(id: "checkpoint") }
            }
        }
    }

    /// The changes feed: each document once at its latest sequence; since, limit, descending,
    /// doc IDs, deleted docs, bodies.
    @Test func changesFeedRules() async throws {
        try await Cluster.with { cluster in
            for versioning in Versioning.allCases {
                let db = try await cluster.client.createDatabase("changes-\(versioning.rawValue)", versioning: versioning)
                let a = try await db.put(id: "a", json: #"{"n":1}"#)
                let b = try await db.put(id: "b", json: #"{"n":2}"#)
                let c = try await db.put(id: "c", json: #"{"n":3}"#)
                let a2 = try await db.put(id: "a", json: #"{"n":10}"#, rev: a.rev)
                let b2 = try await db.delete(id: "b", rev: b.rev)
                let cases: [(String, ChangesQuery, [String])] = [
                    ("all", ChangesQuery(), ["c", "a", "b"]),
                    ("since c", ChangesQuery(since: c.sequence), ["a", "b"]),
                    ("since the last", ChangesQuery(since: b2.sequence), []),
                    ("limit", ChangesQuery(limit: 2), ["c", "a"]),
                    ("descending", ChangesQuery(descending: true), ["b", "a", "c"]),
                    ("descending limit", ChangesQuery(descending: true, limit: 1), ["b"]),
                    ("doc IDs", ChangesQuery(docIDs: ["a", "c"]), ["c", "a"]),
                    ("no deleted", ChangesQuery(includeDeleted: false), ["c", "a"]),
                ]
                for (name, query, expected) in cases {
                    let batch = try await db.changes(query)
                    #expect(batch.changes.map(\.id) == expected, "\(versioning) \(name)")
                    #expect(batch.lastSequence == b2.sequence, "\(versioning) \(name)")
                }
                let all = try await db.changes(since: 0, limit: 0, includeBodies: true)
                let byID = Dictionary(uniqueKeysWithValues: all.changes.map { ($0.id, $0) })
                #expect(byID["a"]?.sequence == a2.sequence && byID["a"]?.rev == a2.rev)
                #expect(byID["b"]?.deleted == true && byID["b"]?.rev == b2.rev)
                #expect(byID["c"].flatMap { JSON.tryParse($0.body) } == ["n": 3])
                #expect(byID["a"].flatMap { JSON.tryParse($0.body) } == ["n": 10])
            }
        }
    }

    /// All-docs: ID order, limit, skip, key range, descending, deleted docs.
    @Test func allDocsRules() async throws {
        try await Cluster.with { cluster in
            for versioning in Versioning.allCases {
                let db = try await cluster.client.createDatabase("all-\(versioning.rawValue)", versioning: versioning)
                for id in ["d", "b", "a", "c"] { _ = try await db.put(id: id, json: #"{"id":"\#(id)"}"#) }
                let e = try await db.put(id: "e", json: "{}")
                try await db.delete(id: "e", rev: e.rev)
                let cases: [(String, AllDocsQuery, [String])] = [
                    ("all", AllDocsQuery(), ["a", "b", "c", "d"]),
                    ("limit", AllDocsQuery(limit: 2), ["a", "b"]),
                    ("skip", AllDocsQuery(limit: 2, skip: 1), ["b", "c"]),
                    ("range", AllDocsQuery(startKey: "b", endKey: "c"), ["b", "c"]),
                    ("open end", AllDocsQuery(startKey: "c"), ["c", "d"]),
                    ("descending", AllDocsQuery(descending: true), ["d", "c", "b", "a"]),
                    ("descending range", AllDocsQuery(descending: true, startKey: "c", endKey: "b"), ["c", "b"]),
                    ("deleted too", AllDocsQuery(includeDeleted: true), ["a", "b", "c", "d", "e"]),
                ]
                for (name, query, expected) in cases {
                    #expect(try await db.allDocs(query).map(\.id) == expected, "\(versioning) \(name)")
                }
                let withBodies = try await db.allDocs(limit: 1, includeBodies: true)
                #expect(withBodies.first.flatMap { JSON.tryParse($0.body) } == ["id": "a"])
            }
        }
    }

    /// Expiration: set, get, cancel, the next due time, and the purge when it is due.
    @Test func expirationRules() async throws {
        try await Cluster.with { cluster in
            for versioning in Versioning.allCases {
                let db = try await cluster.client.createDatabase("ttl-\(versioning.rawValue)", versioning: versioning)
                for id in ["later", "sooner", "none"] { _ = try await db.put(id: id, json: "{}") }
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                try await db.setExpiration(id: "later", at: now + 3_600_000)
                try await db.setExpiration(id: "sooner", at: Date(timeIntervalSince1970: Double(now + 1_800_000) / 1000))
                #expect(try await db.expirationMs(id: "later") == now + 3_600_000)
                #expect(try await db.expirationMs(id: "sooner") == now + 1_800_000)
                #expect(try await db.expirationMs(id: "none") == nil)
                #expect(try await db.nextExpirationMs() == now + 1_800_000)
                try await db.cancelExpiration(id: "sooner")
                #expect(try await db.expirationMs(id: "sooner") == nil)
                #expect(try await db.nextExpirationMs() == now + 3_600_000)
                await expectFailure("\(versioning): expire a missing doc", [.notFound]) {
                    try await db.setExpiration(id: "missing", at: now + 1000)
                }
                // Due soon: purged by storage's background task, a deleted doc too.
                _ = try await db.put(id: "brief", json: "{}")
                let gone = try await db.put(id: "gone", json: "{}")
                try await db.delete(id: "gone", rev: gone.rev)
                try await db.setExpiration(id: "brief", at: Date().addingTimeInterval(0.3))
                try await db.setExpiration(id: "gone", at: Date().addingTimeInterval(0.3))
                try await waitUntil("brief and gone to expire", in: db) {
                    let ids = try await db.allDocs(includeDeleted: true).map(\.id)
                    return !ids.contains("brief") && !ids.contains("gone")
                }
                await expectFailure("\(versioning): expired doc", [.notFound]) { _ = try await db.get(id: "brief") }
                #expect(try await db.get(id: "later").id == "later")
            }
        }
    }

    /// Purge: the whole document goes, as if it had never existed.
    @Test func purgeRemovesDocuments() async throws {
        try await Cluster.with { cluster in
            for versioning in Versioning.allCases {
                let db = try await cluster.client.createDatabase("purge-\(versioning.rawValue)", versioning: versioning)
                let first = try await db.put(id: "p", json: #"{"v":1}"#)
                _ = try await db.put(id: "p", json: #"{"v":2}"#, rev: first.rev)
                _ = try await db.put(id: "keep", json: "{}")
                try await db.purge(id: "p")
                await expectFailure("\(versioning): purged doc", [.notFound]) { _ = try await db.get(id: "p") }
                await expectFailure("\(versioning): purged revision", [.notFound]) { _ = try await db.get(id: "p", rev: first.rev) }
                #expect(try await db.allDocs(includeDeleted: true).map(\.id) == ["keep"])
                await expectFailure("\(versioning): purge a missing doc", [.notFound]) { try await db.purge(id: "p") }
                let reborn = try await db.put(id: "p", json: #"{"v":1}"#)
                if versioning == .revisionTrees { #expect(reborn.rev == first.rev, "a purged doc starts over") }
            }
        }
    }

    /// Database info, raw key/value stores and compaction.
    @Test func infoRawAndCompact() async throws {
        try await Cluster.with { cluster in
            for versioning in Versioning.allCases {
                let db = try await cluster.client.createDatabase("info-\(versioning.rawValue)", versioning: versioning)
                let before = try await db.info()
                #expect(before.name == db.name)
                #expect(before.documentCount == 0)
                let a = try await db.put(id: "a", json: "{}")
                let b = try await db.put(id: "b", json: "{}")
                try await db.delete(id: "b", rev: b.rev)
                let info = try await db.info()
                #expect(info.documentCount == 1)
                #expect(info.lastSequence >= a.sequence + 2)
                #expect(info.versioning == versioning)
                #expect(info.collections == 1)
                #expect(info.fileBytes > 0)
                let uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
                #expect(info.publicUUID.lowercased().wholeMatch(of: uuid) != nil, "\(info.publicUUID)")
                #expect(info.privateUUID.lowercased().wholeMatch(of: uuid) != nil, "\(info.privateUUID)")
                #expect(info.publicUUID != info.privateUUID)
                #expect(try await db.info().publicUUID == info.publicUUID)

                try await db.rawPut(store: "checkpoints", key: "peer-1", version: [1], body: Array(#"{"seq":7}"#.utf8))
                let raw = try await db.rawGet(store: "checkpoints", key: "peer-1")
                #expect(raw == RawRecord(version: [1], body: Array(#"{"seq":7}"#.utf8)))
                try await db.rawDelete(store: "checkpoints", key: "peer-1")
                await expectFailure("\(versioning): deleted raw key", [.notFound]) {
                    _ = try await db.rawGet(store: "checkpoints", key: "peer-1")
                }
                try await db.compact()
                #expect(try await db.get(id: "a").rev == a.rev)
            }
        }
    }

    /// Each bad input is refused with its own clear error.
    @Test func badInputIsRefused() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("bad")
            let saved = try await db.put(id: "a", json: #"{"x":1}"#)
            try await db.createCollection("gone")
            try await db.deleteCollection("gone")
            let cases: [(String, Set<SofaError.Code>, () async throws -> Void)] = [
                ("body not an object", [.badJSON], { _ = try await db.put(id: "b", json: "[1,2]") }),
                ("number body", [.badJSON], { _ = try await db.put(id: "b", json: "42") }),
                ("_id in a raw insert body", [.corruptRevisionData], {
                    _ = try await db.insert(id: "b", history: ["1-aa"], json: #"{"_id":"b"}"#)
                }),
                ("_rev in a raw insert body", [.corruptRevisionData], {
                    _ = try await db.insert(id: "b", history: ["1-aa"], json: #"{"_rev":"1-aa"}"#)
                }),
                ("_deleted in a raw insert body", [.corruptRevisionData], {
                    _ = try await db.insert(id: "b", history: ["1-aa"], json: #"{"_deleted":true}"#)
                }),
                ("insert body not an object", [.badJSON], { _ = try await db.insert(id: "b", history: ["1-aa"], json: "[]") }),
                ("invalid revID in a history", [.badRevisionID], { _ = try await db.insert(id: "b", history: ["one"], json: "{}") }),
                ("upper-case digest", [.badRevisionID], { _ = try await db.insert(id: "b", history: ["1-AA"], json: "{}") }),
                ("invalid revID to read", [.badRevisionID], { _ = try await db.get(id: "a", rev: "x-1") }),
                ("invalid parent revID", [.badRevisionID], { _ = try await db.put(id: "a", json: "{}", rev: "nope") }),
                ("history that skips a generation", [.badRevisionID], {
                    _ = try await db.insert(id: "b", history: ["3-cc", "1-aa"], json: "{}")
                }),
                ("history that ascends", [.badRevisionID], {
                    _ = try await db.insert(id: "b", history: ["1-aa", "2-bb"], json: "{}")
                }),
                ("empty history", [.invalidParameter, .badRevisionID], { _ = try await db.insert(id: "b", history: [], json: "{}") }),
                ("unknown collection", [.notFound], { _ = try await db.collection("nope").put(id: "a", json: "{}") }),
                ("read unknown collection", [.notFound], { _ = try await db.collection("s.nope").get(id: "a") }),
                ("deleted collection", [.notOpen], { _ = try await db.collection("gone").put(id: "a", json: "{}") }),
                ("read deleted collection", [.notOpen], { _ = try await db.collection("gone").get(id: "a") }),
                ("resolve without a conflict", [.notFound, .conflict, .invalidParameter], {
                    _ = try await db.resolve(id: "a", winner: saved.rev, loser: "1-aa")
                }),
                ("bad versioning name", [.invalidParameter], { _ = try Versioning.parse("lists") }),
            ]
            for (name, codes, attempt) in cases {
                await expectFailure(name, codes, attempt)
                let current = try await db.get(id: "a")
                #expect(current.rev == saved.rev, "\(name) changed the document")
            }
            await expectFailure("nothing was written for 'b'", [.notFound]) { _ = try await db.get(id: "b") }
        }
    }
}
