internal import ArgumentParser
internal import Foundation
internal import SofaClient
internal import SofaCluster
internal import SofaCore
internal import SofaWire

extension Bench {
    /// `sofa-bench view`: a view's index build beside the import of the same documents, keyed
    /// view lookups beside the same lookup through a N1QL value index, and a full `_count` reduce.
    struct View: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "view",
            abstract: "View figures: index build docs/s beside bulk import, keyed lookups/s beside N1QL, full _count and _stats reduce ms.",
            discussion: """
                Starts a temporary cluster (one query worker), imports --docs documents (`type` one of 10 values) \
                through the SDK in batches of 1,000, 4 in flight; indexes the view `emit(doc.type, 1)` (reduce \
                `_count`) with its first query; then --lookups keyed lookups of the view (16 in flight, no update) \
                beside the same lookups as a N1QL query on a value index of `type`; then the full reduce, 5 times \
                (the median); then a full `_stats` reduce of `emit(doc.type, doc.n)`: the first (every row read), \
                the median of the next ones (the reductions stored per bucket of rows), and one after an edit.
                """)
        @Option(help: "Documents to import and index.") var docs: Int = 100_000
        @Option(help: "Keyed lookups of each kind.") var lookups: Int = 20_000

        func run() async throws {
            try await reporting { try await withScratchCluster("view", measure) }
        }

        func measure(_ client: SofaClient) async throws -> JSON {
            let db = try await client.createDatabase("bench-view")
            let batches = stride(from: 0, to: docs, by: 1000).map { start in
                (start..<min(docs, start + 1000)).map {
                    BulkItem.put(id: String(format: "doc-%07d", $0), rev: "", body: Array(#"{"type":"t\#($0 % 10)","n":\#($0)}"#.utf8),
                                 deleted: false)
                }
            }
            var started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<4 {
                    group.addTask { for index in stride(from: lane, to: batches.count, by: 4) { _ = try await db.bulk(batches[index]) } }
                }
                try await group.waitForAll()
            }
            let importRate = Double(docs) / seconds(since: started)
            try await db.putDesignDocument("bench", ["views": ["by_type": ["map": "function (doc) { emit(doc.type, 1); }", "reduce": "_count"]]])
            started = ContinuousClock.now
            _ = try await db.view("bench/by_type", options: ["reduce": false, "limit": 0])
            let buildRate = Double(docs) / seconds(since: started)

            let count = lookups
            started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<16 {
                    group.addTask {
                        for index in stride(from: lane, to: count, by: 16) {
                            let answer = try await db.view("bench/by_type", options: ["key": .string("t\(index % 10)"), "reduce": false,
                                                                                       "limit": 1, "update": "false"])
                            guard answer["rows"]?.arrayValue?.count == 1 else { throw SofaError(.unexpectedError, "no row") }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let viewLookups = Double(count) / seconds(since: started)
            try await db.createIndex("by_type", kind: .value, expressions: [[".type"]])
            let prepared = try await db.prepare(n1ql: "SELECT META().id FROM _ WHERE type = $t LIMIT 1")
            started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<16 {
                    group.addTask {
                        for index in stride(from: lane, to: count, by: 16) {
                            let result = try await prepared.run(["t": .string("t\(index % 10)")])
                            guard result.rows.count == 1 else { throw SofaError(.unexpectedError, "no row") }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let n1qlLookups = Double(count) / seconds(since: started)
            var reduces: [Double] = []
            for _ in 0..<5 {
                started = ContinuousClock.now
                let answer = try await db.view("bench/by_type", options: ["update": "false"])
                reduces.append(seconds(since: started) * 1000)
                guard answer["rows"]?.arrayValue?.first?["value"]?.intValue == Int64(docs) else {
                    throw SofaError(.unexpectedError, "the full reduce counted \(answer.compactString)")
                }
            }
            let median = reduces.sorted()[reduces.count / 2]
            // A full `_stats` reduce: its first query reduces every row (and stores a reduction per
            // bucket of rows); later ones rereduce the stored ones; after an edit, one bucket is read again.
            try await db.putDesignDocument("stats", ["views": ["n": ["map": "function (doc) { emit(doc.type, doc.n); }", "reduce": "_stats"]]])
            _ = try await db.view("stats/n", options: ["reduce": false, "limit": 0])
            var statsTimes: [Double] = []
            for round in 0..<6 {
                if round == 5 {
                    let doc = try await db.get(id: "doc-0000000")
                    try await db.put(id: "doc-0000000", json: #"{"type":"t0","n":1000000}"#, rev: doc.rev)
                    _ = try await db.view("stats/n", options: ["reduce": false, "limit": 0])
                }
                started = ContinuousClock.now
                let answer = try await db.view("stats/n", options: ["update": "false"])
                statsTimes.append(seconds(since: started) * 1000)
                guard answer["rows"]?.arrayValue?.first?["value"]?["count"]?.intValue == Int64(docs) else {
                    throw SofaError(.unexpectedError, "the full _stats reduce counted \(answer.compactString)")
                }
            }
            let storedStats = statsTimes[1..<5].sorted()[2]
            return [
                "docs": .int(Int64(docs)), "import_docs_per_s": .int(Int64(importRate)), "view_build_docs_per_s": .int(Int64(buildRate)),
                "build_ratio": .double((buildRate / importRate * 100).rounded() / 100),
                "view_lookups_per_s": .int(Int64(viewLookups)), "n1ql_lookups_per_s": .int(Int64(n1qlLookups)),
                "lookup_ratio": .double((viewLookups / n1qlLookups * 100).rounded() / 100),
                "full_count_reduce_ms": .double((median * 10).rounded() / 10),
                "full_stats_reduce_first_ms": .double((statsTimes[0] * 10).rounded() / 10),
                "full_stats_reduce_ms": .double((storedStats * 10).rounded() / 10),
                "full_stats_reduce_after_edit_ms": .double((statsTimes[5] * 10).rounded() / 10),
            ]
        }

    }
}
