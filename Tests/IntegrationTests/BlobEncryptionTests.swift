import SofaFiles
import Foundation
import SofaBlob
import SofaClient
import Testing

/// Encrypted databases end to end: SDK and CLI → gateway → sofa-storage (creates) and sofa-blob
/// (keeps the key, encrypts the Attachments/ files in LiteCore's format).
@Suite(.serialized) struct BlobEncryptionTests {
    static let sizes = [0, 1, 15, 16, 17, 4095, 4096, 4097, 4111, 4112, 4113, 8191, 8192, 8193]
    static let rawKey = try! EncryptionKey(bytes: (0..<32).map { UInt8(31 - $0) })
    static let password = "correct horse battery staple"

    /// The three ways to create a database, and the key each one's blobs are in.
    static func databases(_ client: SofaClient) async throws -> [(Database, EncryptionKey?)] {
        let plain = try await client.createDatabase("plain")
        let keyed = try await client.createDatabase("keyed", encryptionKey: rawKey)
        let passworded = try await client.createDatabase("passworded", versioning: .versionVectors, password: password)
        return [(plain, nil), (keyed, rawKey), (passworded, try EncryptionKey(password: password))]
    }

    /// Every size around the 16-byte AES block and the 4096-byte LiteCore block, in a plain store,
    /// one encrypted with a raw key and one with a password: upload, stat, whole download (to
    /// memory, as chunks and to a file), ranged reads across block boundaries. On disk, an
    /// encrypted blob is the ciphertext of LiteCore's format (its length, and it decrypts with
    /// the key alone, read by `BlobReader` and not through the service); a plain one is the bytes.
    @Test func blockBoundarySizesInPlainAndEncryptedStores() async throws {
        try await Cluster.with { cluster in
            for (db, key) in try await Self.databases(cluster.client) {
                for (index, size) in Self.sizes.enumerated() {
                    let content = pseudoRandomBytes(size, seed: UInt64(100 + index))
                    let info = try await db.putBlob(content)
                    let label = "\(db.name) size \(size)"
                    #expect(info.length == UInt64(size), "\(label)")
                    #expect(try await db.blobInfo(info.key) == info, "\(label)")
                    #expect(try await db.blob(info.key) == content, "\(label)")
                    var chunked: [UInt8] = []
                    for try await chunk in db.blobChunks(info.key, chunkSize: 4093) { chunked += chunk }
                    #expect(chunked == content, "\(label)")
                    let out = cluster.directory.appendingPathComponent("out-\(db.name)-\(size)")
                    try await db.downloadBlob(info.key, to: out)
                    #expect(try await readFile(out) == content, "\(label)")
                    for (offset, length) in ranges(size) {
                        let (bytes, total) = try await db.readBlob(info.key, offset: UInt64(offset), length: length)
                        #expect(total == UInt64(size), "\(label)")
                        #expect(bytes == Array(content[offset..<min(size, offset + length)]), "\(label) range \(offset)+\(length)")
                    }
                    let onDisk = try await readFile(blobFile(cluster, db.name, info.key))
                    if let key {
                        #expect(onDisk.count == size + 16 - size % 16 + 32, "\(label): LiteCore's encrypted length")
                        #expect(size < 16 || Array(onDisk.prefix(16)) != Array(content.prefix(16)), "\(label): not plaintext")
                        let reader = try BlobReader(file: blobFile(cluster, db.name, info.key), encryptionKey: key)
                        #expect(try reader.read(at: 0, length: size) == content, "\(label): decrypts with the key alone")
                    } else {
                        #expect(onDisk == content, "\(label)")
                    }
                }
                let missing = "sha1-" + Data(repeating: 0xAB, count: 20).base64EncodedString()  // never uploaded
                let error = await #expect(throws: SofaError.self) { _ = try await db.readBlob(missing, offset: 0, length: 1) }
                #expect(error?.is(.notFound) == true, "\(String(describing: error))")
            }
        }
    }

    /// One 64 MiB blob in a plain and in an encrypted store: uploaded from a file, stat, read
    /// whole to a file (the SDK checks its SHA-1; `sha1sum` checks the file again), and read in
    /// ranges that straddle 4 KiB blocks, the 64-block read batches, and the end.
    @Test func sixtyFourMebibytesPlainAndEncrypted() async throws {
        try await Cluster.with(clientTimeout: .seconds(60)) { cluster in
            let size = 64 << 20
            let content = pseudoRandomBytes(size, seed: 64)
            let file = cluster.directory.appendingPathComponent("in-64m")
            try await writeFile(file, content)
            for (db, key) in [(try await cluster.client.createDatabase("plain"), false),
                              (try await cluster.client.createDatabase("secret", password: Self.password), true)] {
                let info = try await db.putBlob(contentsOf: file)
                #expect(info.length == UInt64(size))
                #expect(try await db.blobInfo(info.key) == info)
                let out = cluster.directory.appendingPathComponent("out-\(db.name)")
                try await db.downloadBlob(info.key, to: out)
                #expect(try await sha1sum(out) == info.key)
                #expect(try await sha1sum(file) == info.key)
                let ranges: [(Int, Int)] = [(0, 1), (4095, 2), (4096 * 64 - 3, 4096 + 6), (12_345_678, 4 << 20),
                                            (32 << 20 - 1, 3), (size - 4097, 4097), (size - 1, 10), (size, 1)]
                for (offset, length) in ranges {
                    let (bytes, total) = try await db.readBlob(info.key, offset: UInt64(offset), length: length)
                    #expect(total == UInt64(size))
                    #expect(bytes == Array(content[offset..<min(size, offset + length)]), "\(db.name) range \(offset)+\(length)")
                }
                let onDisk = try FileManager.default.attributesOfItem(atPath: blobFile(cluster, db.name, info.key).path)[.size] as? Int
                #expect(onDisk == (key ? size + 16 + 32 : size), "\(db.name)")
            }
        }
    }

    /// sofa-blob keeps the key across a `kill -9`; a rekey through the service changes it, and
    /// one given the wrong current key or password is a `.crypto` error that changes nothing;
    /// decrypting leaves plain files and no key file; the key file is the service's alone.
    @Test func theKeyOutlivesARestartAndRekeyNeedsTheCurrentKey() async throws {
        try await Cluster.with(clientTimeout: .seconds(20)) { cluster in
            let db = try await cluster.client.createDatabase("secret", password: Self.password)
            let passwordKey = try EncryptionKey(password: Self.password)
            let content = pseudoRandomBytes(10_000, seed: 5)
            let info = try await db.putBlob(content)
            let keyFile = cluster.directory.appendingPathComponent("data/secret.sofa/Attachments/.sofa-key").path
            let mode = try FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? Int
            #expect(mode == 0o600)

            try await restartBlob(cluster)
            #expect(try await db.blob(info.key) == content)

            // Wrong current keys: refused, clearly, and nothing changes.
            let wrong: [(EncryptionKey?, String)] = [(nil, "is encrypted"), (Self.rawKey, "wrong encryption key"),
                                                     (try EncryptionKey(password: "Correct horse battery staple"), "wrong encryption key")]
            for (current, words) in wrong {
                let error = await #expect(throws: SofaError.self) { try await db.changeEncryptionKey(from: current, to: nil) }
                #expect(error?.is(.crypto) == true, "\(String(describing: error))")
                #expect(error?.message.contains(words) == true, "\(String(describing: error))")
            }
            #expect(try await db.blob(info.key) == content)

            // Password → raw key: the file now decrypts with the new key only.
            try await db.changeEncryptionKey(from: passwordKey, to: Self.rawKey)
            #expect(try await db.blob(info.key) == content)
            let path = blobFile(cluster, "secret", info.key)
            #expect(try BlobReader(file: path, encryptionKey: Self.rawKey).read(at: 0, length: content.count) == content)
            #expect(throws: SofaError.self) {
                let reader = try BlobReader(file: path, encryptionKey: passwordKey)
                try reader.verify(expected: BlobKey.parse(info.key))
            }
            try await restartBlob(cluster)
            #expect(try await db.blob(info.key) == content)

            // Decrypt: plain file, no key file; claiming a key for a plain database is refused.
            try await db.changeEncryptionKey(from: Self.rawKey, to: nil)
            #expect(try await readFile(path) == content)
            #expect(!FileManager.default.fileExists(atPath: keyFile))
            let plainError = await #expect(throws: SofaError.self) { try await db.changeEncryptionKey(from: Self.rawKey, to: nil) }
            #expect(plainError?.is(.crypto) == true && plainError?.message.contains("not encrypted") == true, "\(String(describing: plainError))")
            try await restartBlob(cluster)
            #expect(try await db.blob(info.key) == content)
        }
    }

    /// LiteCore's rekey sequence: a plain database with 99 documents and a blob nothing
    /// references is encrypted with the 32 bytes `a different key than default....`, and later
    /// decrypted; each time every document and the blob are still there, the file on disk is in
    /// the new form, and a restarted sofa-blob reads it.
    @Test func encryptingAPlainDatabaseAndBack() async throws {
        try await Cluster.with(clientTimeout: .seconds(20)) { cluster in
            let db = try await cluster.client.createDatabase("rekeyed")
            for index in 1...99 { _ = try await db.put(id: String(format: "doc-%03d", index), json: #"{"n":\#(index)}"#) }
            let content = Array("This is a blob to store in the store!".utf8)
            let info = try await db.putBlob(content)
            #expect(try await db.blob(info.key) == content)
            let path = blobFile(cluster, "rekeyed", info.key)
            #expect(try await readFile(path) == content)

            let key = try EncryptionKey(bytes: Array("a different key than default....".utf8))
            try await db.changeEncryptionKey(from: nil, to: key)
            #expect(try await db.info().documentCount == 99)
            #expect(try await db.blob(info.key) == content)
            let encrypted = try await readFile(path)
            #expect(encrypted.count == 48 + 32, "37 bytes padded to 48, then the 32-byte nonce")
            #expect(try BlobReader(file: path, encryptionKey: key).read(at: 0, length: content.count) == content)
            try await restartBlob(cluster)
            #expect(try await retrying { try await db.blob(info.key) } == content)

            try await db.changeEncryptionKey(from: key, to: nil)
            #expect(try await db.info().documentCount == 99)
            #expect(try await readFile(path) == content)
            #expect(try await db.blob(info.key) == content)
        }
    }

    /// The blob Couchbase Lite 2.5 wrote encrypted, placed in an encrypted database's folder as
    /// that version names it: read whole and in ranges through the service, then referenced by a
    /// document and read back by BLOB() in a query (query workers decrypt too); a blob of an
    /// encrypted database that a document references and BLOB() reads, after a rekey as well.
    @Test func readsTheBlobCouchbaseLiteWroteAndQueriesDecrypt() async throws {
        try await Cluster.with(clientTimeout: .seconds(20)) { cluster in
            let key = try EncryptionKey(bytes: Array("a different key than default....".utf8))
            let db = try await cluster.client.createDatabase("cbl", encryptionKey: key)
            let text = Array("This is a blob to store in the store!".utf8)
            let digest = "sha1-QneWo5IYIQ0ZrbCG0hXPGC6jy7E="
            let fixture = litecoreData.appendingPathComponent("Mac_2.5_AES256_QneWo5IYIQ0ZrbCG0hXPGC6jy7E=.blob")
            try await writeFile(blobFile(cluster, "cbl", digest), try await readFile(fixture))

            #expect(try await db.blob(digest) == text)
            #expect(try await db.blobInfo(digest).length == UInt64(text.count))
            let range = try await db.readBlob(digest, offset: 10, length: 4)
            #expect(range.bytes == Array("blob".utf8) && range.totalLength == UInt64(text.count))

            _ = try await db.put(id: "doc1", json: #"{"attached":[{"@type":"blob","digest":"\#(digest)","length":\#(text.count)}]}"#)
            let base64 = JSON.string(Data(text).base64EncodedString())
            #expect(try await db.query(n1ql: "SELECT BLOB(attached[0]) FROM _").rows == [[base64]])

            let content = pseudoRandomBytes(5000, seed: 21)
            let info = try await db.putBlob(content)
            _ = try await db.put(id: "doc2", json: #"{"photo":{"@type":"blob","digest":"\#(info.key)","length":5000}}"#)
            let query = "SELECT BLOB(photo) FROM _ WHERE META().id = 'doc2'"
            #expect(try await db.query(n1ql: query).rows == [[.string(Data(content).base64EncodedString())]])
            try await db.changeEncryptionKey(from: key, to: Self.rawKey)
            #expect(try await db.query(n1ql: query).rows == [[.string(Data(content).base64EncodedString())]])
        }
    }

    /// A key file that no longer matches the blobs (here: replaced by another valid key) makes
    /// every read a clear `.crypto` error, never other bytes; creating over an existing database
    /// is refused and leaves it as it was; a database deleted and created again plain does not
    /// inherit the old key.
    @Test func aWrongKeyIsAClearErrorNeverGarbage() async throws {
        try await Cluster.with(clientTimeout: .seconds(20)) { cluster in
            let db = try await cluster.client.createDatabase("secret", encryptionKey: Self.rawKey)
            let content = pseudoRandomBytes(5000, seed: 9)
            let info = try await db.putBlob(content)

            let exists = await #expect(throws: SofaError.self) {
                _ = try await cluster.client.createDatabase("secret", password: "another")
            }
            #expect(exists?.is(.databaseExists) == true, "\(String(describing: exists))")
            #expect(try await db.blob(info.key) == content)

            // Another valid key (32 bytes of 0x5A) in place of the database's.
            let keyFile = cluster.directory.appendingPathComponent("data/secret.sofa/Attachments/.sofa-key")
            try await writeFile(keyFile, Array(#"{"format":1,"key":"\#(String(repeating: "5a", count: 32))"}"#.utf8))
            try await restartBlob(cluster)
            let calls: [(String, () async throws -> Void)] = [
                ("stat", { _ = try await db.blobInfo(info.key) }),
                ("read", { _ = try await db.blob(info.key) }),
                ("range", { _ = try await db.readBlob(info.key, offset: 100, length: 10) }),
                ("put", { _ = try await db.putBlob([1, 2, 3]) }),
            ]
            for (name, call) in calls {
                let error = await #expect(throws: SofaError.self, "\(name)") { try await call() }
                #expect(error?.is(.crypto) == true, "\(name): \(String(describing: error))")
                #expect(error?.message.contains("secret") == true, "\(name): \(String(describing: error))")
            }

            try await cluster.client.deleteDatabase("secret")
            // sofa-blob deleted the blobs and the key file, storage the rest: nothing is left.
            #expect(!FileManager.default.fileExists(atPath: cluster.directory.appendingPathComponent("data/secret.sofa").path))
            let again = try await cluster.client.createDatabase("secret")
            let plainInfo = try await again.putBlob(content)
            #expect(try await readFile(blobFile(cluster, "secret", plainInfo.key)) == content)
        }
    }

    /// A blob file damaged in the store (one byte flipped, length unchanged) is served as it
    /// is by ranged reads, but every whole download through the SDK checks the SHA-1 against the
    /// key: `.corruptData`, and `downloadBlob` leaves no file. In an encrypted store the flipped
    /// ciphertext byte garbles its block, which the same check catches.
    @Test func theSDKChecksWholeDownloadsAgainstTheKey() async throws {
        try await Cluster.with { cluster in
            for db in [try await cluster.client.createDatabase("plain"),
                       try await cluster.client.createDatabase("secret", encryptionKey: Self.rawKey)] {
                let content = pseudoRandomBytes(3 << 20, seed: 31)
                let info = try await db.putBlob(content)
                let path = blobFile(cluster, db.name, info.key)
                var damaged = try await readFile(path)
                damaged[1_000_000] ^= 0x01
                try await writeFile(path, damaged)
                let out = cluster.directory.appendingPathComponent("damaged-\(db.name)")
                let calls: [(String, () async throws -> Void)] = [
                    ("blob", { _ = try await db.blob(info.key) }),
                    ("chunks", { for try await _ in db.blobChunks(info.key, chunkSize: 1 << 20) {} }),
                    ("download", { try await db.downloadBlob(info.key, to: out) }),
                ]
                for (name, call) in calls {
                    let error = await #expect(throws: SofaError.self, "\(db.name) \(name)") { try await call() }
                    #expect(error?.is(.corruptData) == true, "\(db.name) \(name): \(String(describing: error))")
                }
                #expect(!FileManager.default.fileExists(atPath: out.path))
                // A range away from the damage still reads as stored.
                #expect(try await db.readBlob(info.key, offset: 2 << 20, length: 100).bytes == Array(content[(2 << 20)..<(2 << 20) + 100]))
            }
        }
    }

    /// `sofa db create NAME --passphrase P` and `--key HEX`; `sofa db rekey`; bad keys refused.
    @Test func cliCreatesAndRekeysEncryptedDatabases() async throws {
        try await Cluster.with { cluster in
            let gateway = cluster.supervisor.gatewayEndpoint
            let hex = Self.rawKey.rawBytes.map { String(format: "%02x", $0) }.joined()
            let created = try await runSofa(["db", "create", "bypassword", "--passphrase", Self.password], gateway: gateway)
            #expect(created.status == 0, "\(created.err)")
            #expect(created.out.contains(#""encrypted":true"#), "\(created.out)")
            let keyed = try await runSofa(["db", "create", "bykey", "--key", hex], gateway: gateway)
            #expect(keyed.status == 0, "\(keyed.err)")
            for bad in [["--key", "abcd"], ["--key", String(repeating: "zz", count: 32)], ["--key", hex, "--passphrase", "x"]] {
                let refused = try await runSofa(["db", "create", "bad"] + bad, gateway: gateway)
                #expect(refused.status != 0, "\(bad)")
            }
            #expect(try await !cluster.client.databases().contains("bad"))

            let content = pseudoRandomBytes(4097, seed: 77)
            let info = try await cluster.client.database("bypassword").putBlob(content)
            let wrong = try await runSofa(["db", "rekey", "bypassword", "--old-passphrase", "nope", "--key", hex], gateway: gateway)
            #expect(wrong.status != 0)
            #expect(wrong.err.contains("wrong encryption key"), "\(wrong.err)")
            let rekeyed = try await runSofa(["db", "rekey", "bypassword", "--old-passphrase", Self.password, "--key", hex], gateway: gateway)
            #expect(rekeyed.status == 0, "\(rekeyed.err)")
            let reader = try BlobReader(file: blobFile(cluster, "bypassword", info.key), encryptionKey: Self.rawKey)
            #expect(try reader.read(at: 0, length: 5000) == content)
            let decrypted = try await runSofa(["db", "rekey", "bypassword", "--old-key", hex, "--decrypt"], gateway: gateway)
            #expect(decrypted.status == 0, "\(decrypted.err)")
            #expect(try await readFile(blobFile(cluster, "bypassword", info.key)) == content)
        }
    }
}
