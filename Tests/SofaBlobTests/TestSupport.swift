import Foundation
import SofaTestSupport
import SofaCore
@testable import SofaBlob
@testable import SofaFiles
import Testing

/// The store's two forms, for tests that run in both.
enum Mode: String, CaseIterable, CustomTestStringConvertible {
    case plain, encrypted
    var key: EncryptionKey? { self == .encrypted ? testKeyA : nil }
    var testDescription: String { rawValue }
}

let testKeyA = try! EncryptionKey(bytes: (0..<32).map { UInt8($0) })
let testKeyB = try! EncryptionKey(password: "correct horse battery staple")

/// A store in a fresh `Attachments/` folder of a temporary database folder.
func withStore<T>(_ mode: Mode, _ body: (BlobStore) throws -> T) throws -> T {
    try withTemporaryDirectory { dir throws in
        try body(try BlobStore(directory: dir.appendingPathComponent("db.sofa/Attachments"), key: mode.key))
    }
}

/// The SofaError `body` fails with; records an issue when it succeeds or throws something else.
@discardableResult
func expectError<T>(_ code: SofaError.Code, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
                    _ body: () throws -> T) -> SofaError? {
    do {
        let value = try body()
        Issue.record("expected \(code), got \(value) \(comment.map { "(\($0))" } ?? "")", sourceLocation: sourceLocation)
        return nil
    } catch let error as SofaError {
        #expect(error.sofaCode == code, "\(comment.map { "\($0): " } ?? "")\(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected \(code), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Writes `content` through a writer in chunks of `chunkSize`.
func write(_ content: [UInt8], to store: BlobStore, chunkSize: Int = 1000, expected: BlobKey? = nil) throws -> BlobKey {
    let writer = try store.writer()
    var offset = 0
    while offset < content.count {
        let end = min(content.count, offset + chunkSize)
        try writer.write(Array(content[offset..<end]))
        offset = end
    }
    return try writer.install(expected: expected)
}

/// The names in the store's folder, sorted.
func folderNames(_ store: BlobStore) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: store.directory.path).sorted()
}

extension Array where Element == UInt8 {
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}

/// `count` deterministic pseudo-random bytes.
func testBytes(seed: UInt64, _ count: Int) -> [UInt8] {
    var random = SplitMix64(seed: seed)
    return random.bytes(count)
}

