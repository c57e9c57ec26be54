import Foundation
import SofaCore
import SofaStorage
import SofaTestSupport
import Testing

/// A database created on a full disk: an error that says so in a line (not the schema's DDL),
/// and nothing left behind, so that the name is free again once there is room. The data directory
/// is a tmpfs of 512 KiB mounted for the test (root only; elsewhere the test is skipped).
@Suite(.serialized, .enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
struct FullDiskTests {
    @Test func createOnAFullDiskIsAllOrNothing() async throws {
        try await withTemporaryDirectory { directory in
            guard mount("tmpfs", directory.path, "tmpfs", 0, "size=512k") == 0 else {
                Issue.record("mount failed: errno \(errno)")
                return
            }
            defer { umount(directory.path) }
            let engine = try StorageEngine(dataDirectory: directory)
            defer { engine.close() }
            // Fill the disk, keeping a few bytes free.
            let filler = directory.appendingPathComponent("filler")
            let handle = try FileHandle(forWritingTo: { try #require(FileManager.default.createFile(atPath: filler.path, contents: nil)); return filler }())
            let block = Data(count: 4096)
            while (try? handle.write(contentsOf: block)) != nil {}
            try handle.close()
            do throws(SofaError) {
                try await engine.createDatabase("full")
                Issue.record("created a database on a full disk")
            } catch {
                #expect(error.message.contains("cannot create database 'full'"), "\(error)")
                #expect(error.message.count < 600, "\(error.message.count) characters: \(error.message)")
            }
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("full.sofa").path))
            #expect(try await engine.listDatabases() == [])
            try FileManager.default.removeItem(at: filler)
            try await engine.createDatabase("full")
            #expect(try await engine.listDatabases() == ["full"])
        }
    }
}
