import Foundation
import SofaCore
@testable import SofaBlob
@testable import SofaFiles
import SofaTestSupport
import Testing

@Suite struct EncryptionTests {
    /// PBKDF2-HMAC-SHA256, salt "Salty McNaCl", 64,000 rounds, 32 bytes; expected values from
    /// Python: hashlib.pbkdf2_hmac('sha256', password, b'Salty McNaCl', 64000, 32).hex()
    static let passwords: [(String, String)] = [
        ("password", "23b567cd4fbf948b73a0105b53eda0a085f881da07827e0e5e1a519aeb963ee4"),
        ("", "2e84daa349814cc08c739633c3299f1b8d649d333f4cbf7f361861641da9136d"),
        ("correct horse battery staple", "9f3a0deff3efedc72efff1b96a7c91575f20e7fe14b9e36784a1a17b8c433842"),
        ("Sofa ☕", "2de29fb4fe597c695186617e153c50d4334d0ae860290bdb0470f3f0209badcd"),
    ]

    @Test(arguments: passwords)
    func passwordKey(password: String, hex: String) async throws {
        try await offPool {
            let key = try EncryptionKey(password: password)
            #expect(key.rawBytes.hex == hex)
        }
    }

    @Test(arguments: [0, 16, 31, 33, 64])
    func rawKeyMustHave32Bytes(count: Int) {
        expectError(.invalidParameter) { try EncryptionKey(bytes: [UInt8](repeating: 1, count: count)) }
    }

    @Test func keyIsNeverPrinted() async throws {
        try await offPool {
            let key = try EncryptionKey(bytes: Array("a different key than default....".utf8))
            #expect(!"\(key)".contains("different") && !String(reflecting: key).contains("different"))
        }
    }

    /// plaintext length → file length: padded to the next 16 (a whole pad block on a multiple of
    /// 16, so also of 4096), plus the 32-byte nonce.
    static let fileSizes: [(Int, Int)] = [
        (0, 48), (1, 48), (15, 48), (16, 64), (17, 64), (4095, 4128), (4096, 4144), (4097, 4144),
        (4111, 4144), (4112, 4160), (4113, 4160),
        (8191, 8224), (8192, 8240), (8193, 8240), (1_048_576, 1_048_624),
    ]

    @Test(arguments: fileSizes)
    func encryptedFileSize(plain: Int, file: Int) async throws {
        try await offPool {
            try withStore(.encrypted) { store throws in
                let content = testBytes(seed: UInt64(plain), plain)
                let key = try store.put(content)
                let attributes = try FileManager.default.attributesOfItem(atPath: store.filePath(key))
                #expect(attributes[.size] as? Int == file)
                #expect(try store.size(of: key) == UInt64(plain))
                let raw = try Data(contentsOf: URL(fileURLWithPath: store.filePath(key)))
                if plain >= 16 { #expect(!raw.starts(with: content.prefix(16))) }
                // Same content again: same plaintext, a fresh nonce, still one blob.
                #expect(try store.put(content) == key)
                #expect(try store.contents(of: key) == content)
            }
        }
    }

    /// Known answer, computed outside Sofa (block by block with `openssl enc -aes-256-cbc -nopad`,
    /// IV = 8 zero bytes + the block number big-endian, PKCS#7 on the last block): the bytes
    /// `i % 251` for i in 0..<8193 under the key 00 01 … 1f give 8208 bytes of ciphertext with
    /// this SHA-1, before the nonce.
    @Test func knownCiphertext() async throws {
        try await offPool {
            try withStore(.encrypted) { store throws in
                let key = try store.put((0..<8193).map { UInt8($0 % 251) })
                let raw = [UInt8](try Data(contentsOf: URL(fileURLWithPath: store.filePath(key))))
                #expect(raw.count == 8208 + 32)
                #expect(BlobKey.of(raw.prefix(8208)).digest.hex == "190f8b14100e47deb50d85d94337fc39e8b871d1")
                #expect(Array(raw[8192..<8208]).hex == "fc8cb3bbe013e2589982bbe5d4722038")
            }
        }
    }

    static let fixtureKey = "sha1-QneWo5IYIQ0ZrbCG0hXPGC6jy7E="
    static let fixtureText = "This is a blob to store in the store!"
    static var fixtureFile: URL { Fixtures.litecore("Mac_2.5_AES256_QneWo5IYIQ0ZrbCG0hXPGC6jy7E=.blob") }
    static let fixtureEncryptionKey = try! EncryptionKey(bytes: Array("a different key than default....".utf8))

    /// A blob written by Couchbase Lite 2.5, read in place.
    @Test func couchbaseLiteBlob() async throws {
        try await offPool {
            let reader = try BlobReader(file: Self.fixtureFile, encryptionKey: Self.fixtureEncryptionKey)
            #expect(reader.size == 37)
            let bytes = try reader.read(at: 0, length: 1000)
            #expect(String(decoding: bytes, as: UTF8.self) == Self.fixtureText)
            #expect(BlobKey.of(bytes) == (try BlobKey.parse(Self.fixtureKey)))
            try reader.verify(expected: try BlobKey.parse(Self.fixtureKey))
            #expect(String(decoding: try reader.read(at: 10, length: 4), as: UTF8.self) == "blob")
        }
    }

    /// The same file in a store's folder, under its own name.
    @Test func couchbaseLiteFolder() async throws {
        try await offPool {
            try withTemporaryDirectory { dir throws in
                let key = try BlobKey.parse(Self.fixtureKey)
                try FileManager.default.copyItem(at: Self.fixtureFile, to: dir.appendingPathComponent(key.fileName))
                expectError(.crypto) { try BlobStore(directory: dir, key: testKeyA) }
                expectError(.crypto) { try BlobStore(directory: dir, key: nil) }
                let store = try BlobStore(directory: dir, key: Self.fixtureEncryptionKey)
                #expect(try store.keys() == [key])
                #expect(String(decoding: try store.contents(of: key), as: UTF8.self) == Self.fixtureText)
                // It can write blobs Couchbase Lite's way, and read them back after reopening.
                let other = try store.put(Array("more".utf8))
                let reopened = try BlobStore(directory: dir, key: Self.fixtureEncryptionKey)
                #expect(try reopened.contents(of: other) == Array("more".utf8))
            }
        }
    }

    /// A wrong key gives an error, never bytes: the padding check catches all but about 1 in
    /// 256 keys at open, and the SHA-1 check the rest.
    @Test func wrongKeyNeverGivesGarbage() async throws {
        try await offPool {
            var random = SplitMix64(seed: 2024)
            let expected = try BlobKey.parse(Self.fixtureKey)
            var caughtAtOpen = 0
            for _ in 0..<1000 {
                let wrong = try EncryptionKey(bytes: random.bytes(32))
                do {
                    let reader = try BlobReader(file: Self.fixtureFile, encryptionKey: wrong)
                    expectError(.corruptData) { try reader.verify(expected: expected) }
                } catch let error as SofaError {
                    #expect(error.is(.crypto), "\(error)")
                    caughtAtOpen += 1
                }
            }
            #expect(caughtAtOpen > 950)
            expectError(.crypto) { try BlobReader(file: Self.fixtureFile, encryptionKey: testKeyA) }
        }
    }

    @Test func wrongKeyForAStore() async throws {
        try await offPool {
            try withTemporaryDirectory { dir throws in
                let encrypted = dir.appendingPathComponent("encrypted"), plain = dir.appendingPathComponent("plain")
                let key = try BlobStore(directory: encrypted, key: testKeyA).put(Array("secret".utf8))
                _ = try BlobStore(directory: plain, key: nil).put(Array("open".utf8))
                let wrong = expectError(.crypto) { try BlobStore(directory: encrypted, key: testKeyB) }
                #expect(wrong?.message.contains("wrong encryption key") == true)
                let missing = expectError(.crypto) { try BlobStore(directory: encrypted, key: nil) }
                #expect(missing?.message.contains("needs its encryption key") == true)
                let extra = expectError(.crypto) { try BlobStore(directory: plain, key: testKeyA) }
                #expect(extra?.message.contains("not encrypted") == true)
                // Read directly with the wrong key or none: an error, not garbage.
                let file = encrypted.appendingPathComponent(key.fileName)
                do {
                    let reader = try BlobReader(file: file, encryptionKey: testKeyB)
                    expectError(.corruptData) { try reader.verify(expected: key) }
                } catch let error as SofaError { #expect(error.is(.crypto)) }
                expectError(.corruptData) { try BlobReader(file: file, encryptionKey: nil).verify(expected: key) }
                #expect(try BlobStore(directory: encrypted, key: testKeyA).contents(of: key) == Array("secret".utf8))
            }
        }
    }

    @Test func tamperedBlobIsAnError() async throws {
        try await offPool {
            try withStore(.encrypted) { store throws in
                let content = testBytes(seed: 5, 10_000)
                let key = try store.put(content)
                let path = store.filePath(key)
                var raw = try Data(contentsOf: URL(fileURLWithPath: path))
                raw[100] ^= 0x01                                  // block 0
                try raw.write(to: URL(fileURLWithPath: path))
                expectError(.corruptData) { try store.reader(for: key).verify() }
                expectError(.corruptData) { try store.contents(of: key) }
                try raw.prefix(raw.count - 40).write(to: URL(fileURLWithPath: path))   // not a possible size
                expectError(.crypto) { try store.reader(for: key) }
            }
        }
    }
}
