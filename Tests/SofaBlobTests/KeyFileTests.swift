import Foundation
import SofaCore
import SofaWire
@testable import SofaBlob
@testable import SofaFiles
import SofaTestSupport
import Testing

/// sofa-blob's key file, and a store opened with the two keys of an interrupted rekey.
@Suite struct KeyFileTests {
    static let files: [KeyFile] = [
        KeyFile(key: testKeyA), KeyFile(key: testKeyA, next: .some(testKeyB)),
        KeyFile(key: nil, next: .some(testKeyA)), KeyFile(key: testKeyB, next: .some(nil)),
    ]

    /// `offPool` bodies run on threads of their own, not the cooperative pool's.
    @Test func offPoolLeavesTheCooperativePool() async throws {
        #expect(!OwnThreadExecutor.isCurrent)
        #expect(try await offPool { OwnThreadExecutor.isCurrent })
    }

    /// So does the body of a test with the `.ownThreads` trait, synchronous or not.
    @Test(.ownThreads) func theTraitLeavesTheCooperativePool() {
        #expect(OwnThreadExecutor.isCurrent)
    }

    @Test(.ownThreads) func theTraitKeepsAsyncTestsOffThePoolAcrossAwaits() async {
        #expect(OwnThreadExecutor.isCurrent)
        await Task.yield()
        #expect(OwnThreadExecutor.isCurrent)
    }

    /// Each form reads back as written; the file is the owner's alone (0600).
    @Test(arguments: 0..<files.count)
    func roundTrip(_ index: Int) async throws {
        try await offPool {
            try withTemporaryDirectory { dir throws in
                try Self.files[index].write(in: dir.path)
                #expect(try KeyFile.read(in: dir.path) == Self.files[index])
                let mode = try FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent(KeyFile.name).path)[.posixPermissions] as? Int
                #expect(mode == 0o600)
                try KeyFile.remove(in: dir.path)
                #expect(try KeyFile.read(in: dir.path) == nil)
            }
        }
    }

    /// A damaged key file is `.corruptData`, and the error never repeats what the file holds.
    @Test(arguments: [#"{"format":1,"key":"0011"}"#, "not json", #"{"format":2,"key":"none"}"#,
                      #"{"format":1,"key":"\#(String(repeating: "g", count: 64))"}"#])
    func damagedFile(_ text: String) async throws {
        try await offPool {
            try withTemporaryDirectory { dir throws in
                try Data(text.utf8).write(to: dir.appendingPathComponent(KeyFile.name))
                let error = expectError(.corruptData) { try KeyFile.read(in: dir.path) }
                #expect(error?.message.contains(text) == false)
                #expect(error?.message.contains("0011") == false)
            }
        }
    }

    /// A rekey interrupted before or after its commit point: opened with both keys, the store
    /// takes the one its journal says the blobs are in; with only the other one, `.crypto`.
    @Test(arguments: [(RekeyStop.before, false), (.after, true)])
    func candidatesAfterAnInterruptedRekey(_ stop: RekeyStop, _ committed: Bool) async throws {
        try await offPool {
            try withTemporaryDirectory { dir throws in
                let content = testBytes(seed: 8, 9000)
                do {
                    let store = try BlobStore(directory: dir, key: testKeyA)
                    try store.put(content)
                    try store.put(testBytes(seed: 9, 10))
                    #expect(throws: SimulatedCrash.self) {
                        try store.rekey(to: testKeyB, stoppingAt: stop == .before ? .afterSideFile(0) : .afterRename(0))
                    }
                }
                let store = try BlobStore(directory: dir, candidates: [testKeyA, testKeyB])
                #expect(store.key == (committed ? testKeyB : testKeyA))
                #expect(try store.contents(of: BlobKey.of(content)) == content)
                expectError(.crypto) { try BlobStore(directory: dir, candidates: [committed ? testKeyA : testKeyB]) }
            }
        }
    }

    enum RekeyStop: Sendable { case before, after }

    /// sofa-blob's side: a database whose rekey was interrupted (key file naming both keys)
    /// is served in the key the journal chose, and its key file is settled to that key alone.
    @Test(arguments: [(RekeyStop.before, false), (.after, true)])
    func theServiceSettlesAnInterruptedRekey(_ stop: RekeyStop, _ committed: Bool) async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-keyfile-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let content = testBytes(seed: 12, 5000)
        let folder = data.appendingPathComponent("app.sofa/Attachments")
        try await offPool {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try #require(FileManager.default.createFile(atPath: data.appendingPathComponent("app.sofa/db.sqlite3").path, contents: nil))
            let store = try BlobStore(directory: folder, key: testKeyA)
            try store.put(content)
            try KeyFile(key: testKeyA, next: .some(testKeyB)).write(in: folder.path)
            #expect(throws: SimulatedCrash.self) {
                try store.rekey(to: testKeyB, stoppingAt: stop == .before ? .afterSideFile(0) : .afterCommit)
            }
        }
        let transfer = BlobTransfer(dataDirectory: data)
        let key = BlobKey.of(content).description
        let stat = await transfer.handle(Request(id: 1, database: "app", operation: .blobStat(key: key)))
        #expect(stat?.outcome == .success(.blob(BlobInfo(key: key, length: 5000))))
        let read = await transfer.handle(Request(id: 2, database: "app", operation: .blobRead(key: key, offset: 0, length: 5000)))
        #expect(read?.outcome == .success(.blobData(bytes: content, totalLength: 5000)))
        let settled = try await offPool { try KeyFile.read(in: folder.path) }
        #expect(settled == KeyFile(key: committed ? testKeyB : testKeyA))
        // And the key it keeps is the one a rekey must be given.
        let wrong = await transfer.handle(Request(id: 3, database: "app", operation: .rekeyDatabase(
            currentKey: committed ? testKeyA : testKeyB, newKey: nil)))
        guard case .failure(let error)? = wrong?.outcome else { Issue.record("\(String(describing: wrong))"); return }
        #expect(error.is(.crypto))
        let right = await transfer.handle(Request(id: 4, database: "app", operation: .rekeyDatabase(
            currentKey: committed ? testKeyB : testKeyA, newKey: nil)))
        #expect(right?.outcome == .success(.none))
        #expect(try await offPool { try KeyFile.read(in: folder.path) } == nil)
        #expect(try await offPool { try Data(contentsOf: folder.appendingPathComponent(BlobKey.of(content).fileName)) } == Data(content))
        await transfer.stop()
    }
}
