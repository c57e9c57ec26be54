internal import ArgumentParser
internal import Foundation
internal import SofaClient
internal import SofaCluster
internal import SofaCore
internal import SofaWire

extension Bench {
    /// `sofa-bench model`: a package snapshot and its restore beside a bulk import of the same objects.
    struct Model: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "model",
            abstract: "Model layer figures: snapshot and restore of a package's objects beside their bulk import.",
            discussion: """
                Starts a temporary cluster; imports --objects managed objects (~200 B each) into one database of a \
                package through the SDK in batches of 500, 4 in flight (the import time); takes a snapshot; changes \
                every object (a bulk update); restores the snapshot (every object written back). Prints each time \
                and its ratio to the import.
                """)
        @Option(help: "Objects to import, snapshot and restore.") var objects: Int = 10_000

        func run() async throws {
            try await reporting { try await withScratchCluster("model", measure) }
        }

        func measure(_ client: SofaClient) async throws -> JSON {
            let package = try Package(client: client, name: "bench")
            try await package.create(databases: ["items"])
            let db = package.database("items")
            func body(_ index: Int, _ version: Int) -> [UInt8] {
                Array(#"{"objectType":"Item","title":"item \#(index)","version":\#(version),"createdAt":"2026-11-27T00:00:00Z","#.utf8)
                    + Array(#""updatedAt":"2026-11-27T00:00:00Z","creator":"admin","editors":["admin"],"text":"\#(String(repeating: "x", count: 60))"}"#.utf8)
            }
            var started = ContinuousClock.now
            let imported = try await Package.write((0..<objects).map { .put(id: String(format: "item-%06d", $0), rev: "", body: body($0, 1), deleted: false) },
                                                   to: db)
            let importSeconds = seconds(since: started)
            guard imported.allSatisfy({ $0.error == nil }) else { throw SofaError(.unexpectedError, "the import failed") }
            started = ContinuousClock.now
            try await package.takeSnapshot("bench")
            let snapshotSeconds = seconds(since: started)
            let updates = imported.enumerated().map { BulkItem.put(id: $0.element.id, rev: $0.element.rev, body: body($0.offset, 2), deleted: false) }
            _ = try await Package.write(updates, to: db)
            started = ContinuousClock.now
            let restored = try await package.restoreSnapshot("bench")
            let restoreSeconds = seconds(since: started)
            guard restored.written == objects else { throw SofaError(.unexpectedError, "the restore wrote \(restored.written)") }
            func ms(_ seconds: Double) -> JSON { .double((seconds * 10_000).rounded() / 10) }
            func ratio(_ seconds: Double) -> JSON { .double((seconds / importSeconds * 100).rounded() / 100) }
            return ["objects": .int(Int64(objects)), "import_ms": ms(importSeconds), "snapshot_ms": ms(snapshotSeconds),
                    "restore_ms": ms(restoreSeconds), "snapshot_ratio": ratio(snapshotSeconds), "restore_ratio": ratio(restoreSeconds)]
        }
    }
}
