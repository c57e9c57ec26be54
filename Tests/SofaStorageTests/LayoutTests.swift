import Foundation
import SofaCore
import SofaStorage
import SofaTestSupport
import Testing

/// The file format, read with the `sqlite3` command-line shell rather than through the engine.
@Suite(.ownThreads) struct LayoutTests {
    static let sqlite3 = ["/usr/bin/sqlite3", "/usr/local/bin/sqlite3"].first { FileManager.default.isExecutableFile(atPath: $0) }

    static func query(_ file: String, _ sql: String) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(sqlite3))
        process.arguments = ["-readonly", "-separator", "|", file, sql]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "sqlite3 failed on: \(sql)")
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    @Test(.enabled(if: sqlite3 != nil, "needs the sqlite3 shell"))
    func onDiskLayoutFollowsLiteCore() async throws {
        try await withEngine { engine in
            try await engine.createDatabase("layout")
            let db = try await engine.database("layout")
            let live = try await db.write(put("live", ["x": 1]))
            let gone = try await db.write(put("gone", ["y": 2]))
            let tombstone = try await db.write(put("gone", [:], parent: gone.rev, deleted: true))
            engine.close()

            let file = engine.dataDirectory.appendingPathComponent("layout.sofa/db.sqlite3").path
            #expect(FileManager.default.fileExists(atPath: file))
            let tables = Set(try Self.query(file, "SELECT name FROM sqlite_master WHERE type = 'table'"))
            #expect(tables.isSuperset(of: ["kv_default", "kv_info", "kv_checkpoints", "kvmeta", "indexes"]), "\(tables)")
            #expect(try Self.query(file, "PRAGMA journal_mode") == ["wal"])
            #expect(try Self.query(file, "SELECT name FROM pragma_table_info('kv_default') ORDER BY cid")
                    == ["key", "sequence", "flags", "version", "body", "extra", "expiration"])

            #expect(try Self.query(file, "SELECT lastSeq FROM kvmeta WHERE name = 'default'") == ["3"])
            let rows = try Self.query(file, "SELECT key, sequence, flags, hex(version), CAST(body AS TEXT) FROM kv_default ORDER BY sequence")
            let hex = { (rev: DocumentVersion) in rev.binary.map { String(format: "%02X", $0) }.joined() }
            #expect(rows == [
                "live|1|0|\(hex(live.rev))|{\"x\":1}",
                "gone|3|1|\(hex(tombstone.rev))|{}",
            ])
            // The binary version is the generation as a varint, then the digest.
            #expect(hex(live.rev) == "016F9A1FE5DFAD0377E089C5E8E0AFAB815938295D")
        }
    }
}
