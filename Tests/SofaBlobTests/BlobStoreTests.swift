import Foundation
import SofaCore
@testable import SofaBlob
@testable import SofaFiles
import SofaTestSupport
import Testing

@Suite struct BlobStoreTests {
    /// Around the AES block (16) and the encryption block (4096), and one multi-MiB blob.
    static let sizes = [0, 1, 15, 16, 17, 4095, 4096, 4097, 4111, 4112, 4113, 8191, 8192, 8193, 3 * 1024 * 1024 + 5]

    @Test(arguments: Mode.allCases, sizes)
    func roundTrip(mode: Mode, size: Int) async throws {
        try await offPool {
            var random = SplitMix64(seed: UInt64(size) + 1)
            let content = random.bytes(size)
            try withStore(mode) { store throws in
                let key = try write(content, to: store, chunkSize: 1 + Int(random.next(below: 70_000)))
                #expect(key == BlobKey.of(content))
                #expect(try store.size(of: key) == UInt64(size))
                #expect(try store.contents(of: key) == content)
                #expect(try store.keys() == [key])
                let fileSize = try FileManager.default.attributesOfItem(atPath: store.filePath(key))[.size] as? Int
                #expect(fileSize.map(UInt64.init) == BlobFormat.fileLength(plainLength: UInt64(size), encrypted: mode == .encrypted))
                if mode == .plain {
                    #expect(try Data(contentsOf: URL(fileURLWithPath: store.filePath(key))) == Data(content))
                }

                let reader = try store.reader(for: key)
                try reader.verify()
                // Random ranges, and the edges: empty, last byte, past the end, more than there is.
                var ranges: [(UInt64, Int)] = [(0, 0), (0, size + 10), (UInt64(size), 10), (UInt64(size) + 5, 1)]
                if size > 0 { ranges.append((UInt64(size - 1), 1)) }
                if size > 1 << 20 {
                    // Long ranges (read with direct I/O where the file system allows it), aligned
                    // or not, ending inside the blob, at its end, or beyond it.
                    ranges += [(0, 1 << 20), (1, 1_500_000), (4095, 2 << 20), (4096, 300_000),
                               (UInt64(size - 300_001), 300_000), (UInt64(size - 300_000), 400_000), (12_345, size)]
                }
                for _ in 0..<40 {
                    let offset = random.next(below: UInt64(size) + 1)
                    ranges.append((offset, Int(random.next(below: min(UInt64(size) - offset, 20_000) + 1))))
                }
                for (offset, length) in ranges {
                    let expected = offset >= UInt64(size) ? [] : Array(content[Int(offset)..<min(size, Int(offset) + length)])
                    #expect(try reader.read(at: offset, length: length) == expected, "range \(offset)+\(length)")
                }
                #expect(try store.read(key, offset: 1, length: 3) == Array(content.dropFirst().prefix(3)))
                // Whole content in chunks of any size, and a window of it.
                for chunkSize in (size <= 8193 ? [1, 7] : []) + [16, 4095, 4096, 5000, 65_536] {
                    var collected: [UInt8] = []
                    try reader.forEachChunk(chunkSize: chunkSize) { chunk in
                        #expect(chunk.count <= chunkSize)
                        collected.append(contentsOf: chunk)
                    }
                    #expect(collected == content, "chunk size \(chunkSize)")
                }
                if size > 100 {
                    var window: [UInt8] = []
                    try reader.forEachChunk(from: 33, length: UInt64(size / 2), chunkSize: 999) { window.append(contentsOf: $0) }
                    #expect(window == Array(content[33..<(33 + size / 2)]))
                }
            }
        }
    }

    /// Pieces of 128 KiB and more are hashed beside their encryption (in slices, on two
    /// threads) and written while the next fills: the file must be the one small pieces make.
    /// The pieces leave a block half-filled, fill the output buffer partway, overflow it, and
    /// end off a block boundary.
    @Test(arguments: Mode.allCases)
    func largePiecesWriteTheSameFileAsSmallOnes(mode: Mode) async throws {
        try await offPool {
            let content = testBytes(seed: 17, 6 * 1024 * 1024 + 777)
            let pieces = [5000, 300_000, 1 << 20, 2_600_000, 131_072, 200_001]
            func fileBytes(_ write: (BlobStore) throws -> BlobKey) throws -> [UInt8] {
                try withStore(mode) { store throws in
                    let key = try write(store)
                    #expect(key == BlobKey.of(content))
                    #expect(try store.contents(of: key) == content)
                    try store.reader(for: key).verify()
                    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: store.filePath(key))))
                    // An encrypted file ends with a random nonce; everything before it is fixed.
                    return Array(bytes.dropLast(mode == .encrypted ? BlobFormat.nonceSize : 0))
                }
            }
            let small = try fileBytes { try write(content, to: $0, chunkSize: 4000) }
            let large = try fileBytes { store throws in
                let writer = try store.writer()
                var offset = 0
                for size in pieces + [content.count] where offset < content.count {
                    let end = min(content.count, offset + size)
                    try writer.write(Array(content[offset..<end]))
                    offset = end
                }
                return try writer.install()
            }
            #expect(large.count == small.count)
            #expect(large == small)
            if mode == .plain { #expect(large == content) }
        }
    }

    @Test(arguments: Mode.allCases)
    func identicalContentConcurrentlyIsOneBlob(mode: Mode) async throws {
        try await offPool {
            let content = testBytes(seed: 99, 50_000)
            try withStore(mode) { store throws in
                let keys = Keys()
                DispatchQueue.concurrentPerform(iterations: 8) { i in
                    keys.add(Result { try write(content, to: store, chunkSize: 1000 + i * 113) })
                }
                let all = try keys.values.map { try $0.get() }
                #expect(all.count == 8 && Set(all) == [BlobKey.of(content)])
                #expect(try folderNames(store) == [BlobStore.keyStateName, BlobKey.of(content).fileName].sorted())
                #expect(try store.contents(of: BlobKey.of(content)) == content)
                // Installing it once more changes nothing.
                #expect(try store.put(content) == BlobKey.of(content))
                #expect(try store.keys().count == 1)
            }
        }
    }

    @Test(arguments: Mode.allCases)
    func abandonedWriterLeavesNothing(mode: Mode) async throws {
        try await offPool {
            try withStore(mode) { store throws in
                do {
                    let writer = try store.writer()
                    try writer.write(testBytes(seed: 3, 10_000))
                    #expect(try folderNames(store).count == 2)          // state + temporary file
                }
                #expect(try folderNames(store) == [BlobStore.keyStateName])
                let writer = try store.writer()
                try writer.write([1, 2, 3])
                writer.cancel()
                writer.cancel()
                #expect(try folderNames(store) == [BlobStore.keyStateName])
                expectError(.notOpen) { try writer.write([4]) }
                expectError(.notOpen) { try writer.install() }
            }
        }
    }

    @Test func crashLeftoversGoWhenTheStoreOpens() async throws {
        try await offPool {
            try withTemporaryDirectory { dir throws in
                let folder = dir.appendingPathComponent("Attachments")
                let store = try BlobStore(directory: folder, key: nil)
                let live = try store.writer()
                try live.write([1, 2, 3])
                // A temporary file whose writer died (nobody holds its lock).
                let stale = folder.appendingPathComponent("incoming-0123456789abcdef.tmp")
                try Data([9, 9, 9]).write(to: stale)
                let reopened = try BlobStore(directory: folder, key: nil)
                #expect(!FileManager.default.fileExists(atPath: stale.path))
                // The live writer's file survives another store opening, and installs.
                let key = try live.install()
                #expect(try reopened.contents(of: key) == [1, 2, 3])
                #expect(try folderNames(reopened) == [BlobStore.keyStateName, key.fileName].sorted())
            }
        }
    }

    @Test(arguments: Mode.allCases)
    func wrongExpectedKeyInstallsNothing(mode: Mode) async throws {
        try await offPool {
            try withStore(mode) { store throws in
                let content = Array("some content".utf8)
                let other = BlobKey.of(Array("other content".utf8))
                let error = expectError(.corruptData) { try write(content, to: store, expected: other) }
                #expect(error?.message.contains(other.description) == true)
                #expect(try folderNames(store) == [BlobStore.keyStateName])
                #expect(try write(content, to: store, expected: BlobKey.of(content)) == BlobKey.of(content))
            }
        }
    }

    @Test(arguments: Mode.allCases)
    func missingBlobIsNotFound(mode: Mode) async throws {
        try await offPool {
            try withStore(mode) { store throws in
                let key = BlobKey.of([1, 2, 3])
                expectError(.notFound) { try store.reader(for: key) }
                expectError(.notFound) { try store.size(of: key) }
                expectError(.notFound) { try store.read(key, offset: 0, length: 10) }
                expectError(.notFound) { try store.contents(of: key) }
                #expect(try store.contains(key) == false)
                #expect(try store.delete(key) == false)
            }
        }
    }

    @Test(arguments: Mode.allCases)
    func deleteAndList(mode: Mode) async throws {
        try await offPool {
            try withStore(mode) { store throws in
                let keys = try (0..<5).map { try store.put(testBytes(seed: UInt64($0), 100 * $0)) }
                #expect(Set(try store.keys()) == Set(keys))
                let reader = try store.reader(for: keys[3])
                #expect(try store.delete(keys[3]))
                #expect(try store.contains(keys[3]) == false)
                #expect(try reader.read(at: 0, length: 300).count == 300)      // an open reader keeps its content
                #expect(Set(try store.keys()) == Set(keys).subtracting([keys[3]]))
            }
        }
    }

    @Test(arguments: Mode.allCases)
    func compactionKeepsEveryReferencedBlobEvenIfInterrupted(mode: Mode) async throws {
        try await offPool {
            try withStore(mode) { store throws in
                let keys = try (0..<10).map { try store.put(testBytes(seed: 50 + UInt64($0), 1000 + $0)) }
                let keep = Set(keys.enumerated().filter { $0.offset % 3 == 0 }.map(\.element))
                #expect(throws: SimulatedCrash.self) { try store.deleteAll(except: keep, interruptAfter: 2) }
                let survivors = try BlobStore(directory: store.directory, key: mode.key)
                #expect(Set(try survivors.keys()).isSuperset(of: keep))
                #expect(try survivors.keys().count == 8)
                #expect(try survivors.deleteAll(except: keep) == 4)
                #expect(Set(try survivors.keys()) == keep)
                for key in keep { try survivors.reader(for: key).verify() }
                #expect(try survivors.deleteAll(except: []) == 4)
                #expect(try survivors.keys().isEmpty)
            }
        }
    }

    @Test func writerStartedBeforeARekeyCannotInstallAfterIt() async throws {
        try await offPool {
            try withStore(.plain) { store throws in
                let writer = try store.writer()
                try writer.write([1, 2, 3])
                try store.rekey(to: testKeyA)
                expectError(.busy) { try writer.install() }
                #expect(try folderNames(store) == [BlobStore.keyStateName])
            }
        }
    }
}

/// Results gathered from concurrent threads.
final class Keys: @unchecked Sendable {  // safe: every access goes through the lock
    private let lock = NSLock()
    private var results: [Result<BlobKey, any Error>] = []
    func add(_ result: Result<BlobKey, any Error>) { lock.withLock { results.append(result) } }
    var values: [Result<BlobKey, any Error>] { lock.withLock { results } }
}
