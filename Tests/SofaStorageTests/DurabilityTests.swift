import Foundation
import SofaCore
import SofaStorage
import SofaTestSupport
import Testing

@Suite struct DurabilityTests {
    @Test func documentsSurviveClosingAndReopening() async throws {
        try await withTemporaryDirectory { directory in
            var written: [String: (rev: DocumentVersion, sequence: UInt64, body: [UInt8])] = [:]
            do {
                let engine = try StorageEngine(dataDirectory: directory)
                try await engine.createDatabase("keep")
                try await engine.createDatabase("other")
                let db = try await engine.database("keep")
                for index in 0..<50 {
                    let body: JSON = ["n": .int(Int64(index)), "name": .string("doc \(index)")]
                    let result = try await db.write(put("doc-\(index)", body))
                    written[result.id] = (result.rev, result.sequence, body.compactBytes())
                }
                // Some history: an update and a deletion.
                let newBody: JSON = ["n": 100]
                let updated = try await db.write(put("doc-0", newBody, parent: written["doc-0"]!.rev))
                written["doc-0"] = (updated.rev, updated.sequence, newBody.compactBytes())
                let deleted = try await db.write(put("doc-1", [:], parent: written["doc-1"]!.rev, deleted: true))
                written["doc-1"] = (deleted.rev, deleted.sequence, Array("{}".utf8))
                engine.close()
            }

            let engine = try StorageEngine(dataDirectory: directory)
            defer { engine.close() }
            #expect(try await engine.listDatabases() == ["keep", "other"])
            let db = try await engine.database("keep")
            for (id, expected) in written {
                let record = try await db.read(id: id, rev: expected.rev)
                #expect(record.rev == expected.rev, "\(id)")
                #expect(record.sequence == expected.sequence, "\(id)")
                #expect(record.body == expected.body, "\(id)")
                #expect(record.deleted == (id == "doc-1"), "\(id)")
            }
            await expectError(.notFound) { try await db.read(id: "doc-1", rev: nil) }
            let info = try await db.info()
            #expect(info.documents == 49)
            #expect(info.lastSequence == 52)
            // Sequences continue where they stopped.
            #expect(try await db.write(put("new", ["x": 1])).sequence == 53)
        }
    }
}

/// One storage per data directory (`storage.lock`, flock). The lock is probed with flock directly,
/// not with a second StorageEngine (see `secondEngineOnTheSameDirectoryIsRefused`).
@Suite(.ownThreads) struct DataDirectoryLockTests {
    /// Whether another open file description can take the directory's lock now.
    static func lockIsFree(_ directory: URL) -> Bool {
        let fd = open(directory.appendingPathComponent("storage.lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return false }
        flock(fd, LOCK_UN)
        return true
    }

    /// Whether the lock is free within a second: a child that another test of this process is
    /// starting holds a copy of every descriptor, and so the lock, until it execs. A thread waits
    /// for the lock itself (a blocking `flock`); this waits for that thread, up to the second.
    static func lockIsFreeSoon(_ directory: URL) -> Bool {
        let fd = open(directory.appendingPathComponent("storage.lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return false }
        let taken = DispatchSemaphore(value: 0)
        Thread {
            // Past the deadline it still ends, once the lock is free (or the holder is gone).
            if flock(fd, LOCK_EX) == 0 {
                flock(fd, LOCK_UN)
                taken.signal()
            }
            close(fd)
        }.start()
        return taken.wait(timeout: .now() + 1) == .success
    }

    @Test func engineHoldsTheLockUntilItGoesAway() async throws {
        try withTemporaryDirectory { directory in
            do {
                let engine = try StorageEngine(dataDirectory: directory)
                #expect(!Self.lockIsFree(directory))
                withExtendedLifetime(engine) {}
            }
            #expect(Self.lockIsFreeSoon(directory))
        }
    }

    /// StorageService.start's stop closure calls `engine.close()` and still holds the engine: a
    /// storage stopped in-process must let a new one open the directory.
    @Test func closeReleasesTheDirectoryLock() async throws {
        try await withTemporaryDirectory { directory in
            let engine = try StorageEngine(dataDirectory: directory)
            try await engine.createDatabase("db")
            engine.close()
            #expect(Self.lockIsFreeSoon(directory), "the lock is held after close() until the engine is deallocated")
            withExtendedLifetime(engine) {}
        }
    }

    /// One storage per data directory: a second engine on it is refused while the first holds it.
    @Test
    func secondEngineOnTheSameDirectoryIsRefused() async throws {
        try await withTemporaryDirectory { directory in
            let first = try StorageEngine(dataDirectory: directory)
            await expectError(.busy) { try StorageEngine(dataDirectory: directory) }
            withExtendedLifetime(first) {}
        }
    }
}
