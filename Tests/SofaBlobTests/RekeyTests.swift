import Foundation
import SofaCore
@testable import SofaBlob
@testable import SofaFiles
import SofaTestSupport
import Testing

@Suite struct RekeyTests {
    static let sizes = [0, 1, 4095, 4096, 8193, 100_000]

    /// Every blob of `contents` reads back, checked against its key, and its file has the size
    /// of the form `key` implies.
    static func expectAll(_ contents: [[UInt8]], in store: BlobStore, key: EncryptionKey?,
                          sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(Set(try store.keys()) == Set(contents.map { BlobKey.of($0) }), sourceLocation: sourceLocation)
        for content in contents {
            let blob = BlobKey.of(content)
            #expect(try store.contents(of: blob) == content, sourceLocation: sourceLocation)
            let size = try FileManager.default.attributesOfItem(atPath: store.filePath(blob))[.size] as? Int
            #expect(size.map(UInt64.init) == BlobFormat.fileLength(plainLength: UInt64(content.count), encrypted: key != nil),
                    sourceLocation: sourceLocation)
        }
        #expect(try folderNames(store).filter { !$0.hasSuffix(".blob") } == [BlobStore.keyStateName], sourceLocation: sourceLocation)
    }

    static let transitions: [(EncryptionKey?, EncryptionKey?)] = [
        (nil, testKeyA), (testKeyA, testKeyB), (testKeyB, nil), (testKeyA, testKeyA), (nil, nil),
    ]

    @Test(arguments: 0..<transitions.count)
    func rekey(_ index: Int) async throws {
        try await offPool {
            let (old, new) = Self.transitions[index]
            let contents = Self.sizes.map { testBytes(seed: UInt64($0) + 11, $0) }
            try withTemporaryDirectory { dir throws in
                let store = try BlobStore(directory: dir, key: old)
                for content in contents { try store.put(content) }
                let reader = try store.reader(for: BlobKey.of(contents[5]))
                try store.rekey(to: new)
                #expect(store.isEncrypted == (new != nil))
                try Self.expectAll(contents, in: store, key: new)
                try reader.verify()                       // opened before: still reads what it opened
                // New blobs are in the new form too.
                let more = testBytes(seed: 1, 5000)
                try store.put(more)
                try Self.expectAll(contents + [more], in: store, key: new)
                let reopened = try BlobStore(directory: dir, key: new)
                try Self.expectAll(contents + [more], in: reopened, key: new)
                if old != new { expectError(.crypto) { try BlobStore(directory: dir, key: old) } }
            }
        }
    }

    /// Where the crash happens → the key the store is in afterwards (old before the commit point,
    /// new after it).
    static let stops: [(BlobStore.RekeyStop, Bool)] = [
        (.afterSideFile(0), false), (.afterSideFile(3), false), (.afterSideFile(5), false),
        (.afterCommit, true), (.afterRename(0), true), (.afterRename(4), true), (.afterRename(5), true),
    ]

    @Test(arguments: 0..<stops.count, [0, 1, 2])
    func interruptedRekeyLosesNothing(stopIndex: Int, transitionIndex: Int) async throws {
        try await offPool {
            let (stop, committed) = Self.stops[stopIndex]
            let (old, new) = Self.transitions[transitionIndex]
            let contents = Self.sizes.map { testBytes(seed: UInt64($0) + 3, $0) }
            try withTemporaryDirectory { dir throws in
                do {
                    let store = try BlobStore(directory: dir, key: old)
                    for content in contents { try store.put(content) }
                    #expect(throws: SimulatedCrash.self) { try store.rekey(to: new, stoppingAt: stop) }
                }
                let sideFiles = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".rekey") }
                #expect(!sideFiles.isEmpty || stop == .afterRename(5))
                if !committed, let partial = sideFiles.first {
                    // A crash in the middle of writing a side file leaves it cut short.
                    let path = dir.appendingPathComponent(partial)
                    try Data(try Data(contentsOf: path).prefix(7)).write(to: path)
                }
                let after = committed ? new : old
                let before = committed ? old : new
                expectError(.crypto) { try BlobStore(directory: dir, key: before) }   // recovers, then refuses
                let store = try BlobStore(directory: dir, key: after)
                try Self.expectAll(contents, in: store, key: after)
                // And the rekey can be run (again) to the end.
                try store.rekey(to: new)
                try Self.expectAll(contents, in: store, key: new)
            }
        }
    }

    @Test func corruptBlobStopsTheRekeyWithNothingChanged() async throws {
        try await offPool {
            let contents = Self.sizes.map { testBytes(seed: UInt64($0) + 5, $0) }
            try withTemporaryDirectory { dir throws in
                let store = try BlobStore(directory: dir, key: testKeyA)
                for content in contents { try store.put(content) }
                let victim = BlobKey.of(contents[4])
                var raw = try Data(contentsOf: URL(fileURLWithPath: store.filePath(victim)))
                raw[10] ^= 0xFF
                try raw.write(to: URL(fileURLWithPath: store.filePath(victim)))
                let error = expectError(.corruptData) { try store.rekey(to: testKeyB) }
                #expect(error?.message.contains(victim.description) == true)
                #expect(try folderNames(store).filter { $0.hasSuffix(".rekey") }.isEmpty)
                let reopened = try BlobStore(directory: dir, key: testKeyA)
                for content in contents where BlobKey.of(content) != victim {
                    #expect(try reopened.contents(of: BlobKey.of(content)) == content)
                }
            }
        }
    }
}
