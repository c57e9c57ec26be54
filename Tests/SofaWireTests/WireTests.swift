import Foundation
import SofaCore
import SofaWire
import SofaTestSupport
import Testing

@Suite(.ownThreads) struct WireTests {
    static let requests: [Request] = [
        Request(id: 1, database: "", deadline: 0, operation: .health(service: "")),
        Request(id: 2, database: "", deadline: 17, operation: .health(service: "storage")),
        Request(id: 3, operation: .clusterStatus),
        Request(id: 4, database: "app", operation: .createDatabase()),
        Request(id: 5, database: "app", operation: .deleteDatabase),
        Request(id: 6, operation: .listDatabases),
        Request(id: .max, database: "app", deadline: .max,
                operation: .putDocument(id: "a", rev: "", body: Array(#"{"x":1}"#.utf8), deleted: false)),
        Request(id: 8, database: "app",
                operation: .putDocument(id: "", rev: "1-abcd", body: [], deleted: true)),
        Request(id: 9, database: "ünïcode", operation: .getDocument(id: "dôc/1", rev: "")),
        Request(id: 10, database: "app", operation: .getDocument(id: "a", rev: "2-ff")),
        Request(id: 11, database: "app", operation: .deleteDocument(id: "a", rev: "2-ff")),
        Request(id: 12, operation: .echo(payload: [0, 1, 2, 255], delayMs: 250, service: "query")),
        Request(id: 13, database: "app", operation: .createDatabase(versioning: .versionVectors)),
        Request(id: 14, database: "app", collection: "store.orders", operation: .databaseInfo),
        Request(id: 15, database: "app", collection: "orders", operation: .createCollection),
        Request(id: 16, database: "app", collection: "orders", operation: .deleteCollection),
        Request(id: 17, database: "app", operation: .listCollections),
        Request(id: 18, database: "app", operation: .getDocument(id: "a", rev: "", history: true, openLeaves: true)),
        Request(id: 19, database: "app", operation: .insertRevision(RevisionInsert(
            id: "a", history: ["3-cc", "2-bb", "1-aa"], body: Array(#"{"v":3}"#.utf8), deleted: false))),
        Request(id: 20, database: "app", operation: .bulkWrite([
            .put(id: "a", rev: "", body: Array("{}".utf8), deleted: false),
            .insert(RevisionInsert(id: "b", history: ["1-ab"], body: [], deleted: true)),
        ])),
        Request(id: 21, database: "app", operation: .bulkWrite([])),
        Request(id: 22, database: "app", operation: .conflicts(id: "a")),
        Request(id: 23, database: "app", operation: .resolveConflict(ConflictResolution(
            id: "a", winner: "2-aa", loser: "2-bb", merge: true, mergedBody: Array(#"{"m":1}"#.utf8), mergedDeleted: false))),
        Request(id: 24, database: "app", operation: .purge(id: "a", rev: "2-bb")),
        Request(id: 25, database: "app", operation: .setExpiration(id: "a", expiration: 1_900_000_000_000)),
        Request(id: 26, database: "app", operation: .getExpiration(id: "a")),
        Request(id: 27, database: "app", operation: .nextExpiration),
        Request(id: 28, database: "app", operation: .changes(ChangesQuery(
            since: 7, descending: true, limit: 10, includeBodies: true, allLeaves: true, includeDeleted: false,
            docIDs: ["a", "b"]))),
        Request(id: 29, database: "app", operation: .allDocs(AllDocsQuery(
            includeBodies: true, includeDeleted: true, limit: 5, skip: 2, descending: true, startKey: "a", endKey: "z"))),
        Request(id: 30, database: "app", operation: .rawPut(store: "info", key: "k", version: [1, 2], body: [3])),
        Request(id: 31, database: "app", operation: .rawGet(store: "info", key: "k")),
        Request(id: 32, database: "app", operation: .rawDelete(store: "info", key: "k")),
        Request(id: 33, database: "app", operation: .compact),
        Request(id: 34, database: "app", operation: .blobWriteBegin(expectedKey: "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=")),
        Request(id: 35, database: "app", operation: .blobWriteBegin(expectedKey: "")),
        Request(id: 36, database: "app", operation: .blobWriteChunk(writeID: 7, offset: 1 << 40, bytes: [0, 1, 255])),
        Request(id: 37, database: "app", operation: .blobWriteChunk(writeID: .max, offset: 0, bytes: [])),
        Request(id: 38, database: "app", operation: .blobWriteEnd(writeID: 7, length: 1 << 33)),
        Request(id: 39, database: "app", operation: .blobWriteAbort(writeID: 7)),
        Request(id: 40, database: "app", operation: .blobRead(key: "sha1-x", offset: 4096, length: .max)),
        Request(id: 41, database: "app", operation: .blobStat(key: "sha1-../../etc/passwd")),
        Request(id: 42, database: "app", collection: "s.c", operation: .query(QuerySpec(
            text: "SELECT a FROM _ WHERE b = $b", isN1QL: true, parameters: ["b": [1, "x"]], explain: true, skip: 1 << 40, pageRows: 500))),
        Request(id: 43, database: "app", operation: .query(QuerySpec(text: #"{"WHAT":[["."]]}"#, isN1QL: false))),
        Request(id: 44, database: "app", operation: .createIndex(IndexDefinition(
            kind: 1, name: "byText", descriptor: ["expressions": [[".text"]], "language": "en"]))),
        Request(id: 45, database: "app", operation: .deleteIndex(name: "byText")),
        Request(id: 46, database: "app", operation: .listIndexes),
        Request(id: 52, database: "app", operation: .deleteBlobs(keys: ["sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=", "ü"])),
        Request(id: 53, database: "app", operation: .deleteBlobs(keys: [])),
        Request(id: 54, database: "app", operation: .dropBlobs),
        Request(id: 55, database: "app", operation: .setRevsLimit(5)),
        Request(id: 47, database: "app", operation: .createDatabase(encryptionKey: try! EncryptionKey(bytes: (0..<32).map { UInt8($0) }))),
        Request(id: 48, database: "app", operation: .createDatabase(versioning: .versionVectors,
                                                                     encryptionKey: try! EncryptionKey(bytes: [UInt8](repeating: 255, count: 32)))),
        Request(id: 49, database: "app", operation: .rekeyDatabase(currentKey: nil, newKey: try! EncryptionKey(bytes: [UInt8](repeating: 7, count: 32)))),
        Request(id: 50, database: "app", operation: .rekeyDatabase(currentKey: try! EncryptionKey(bytes: [UInt8](repeating: 7, count: 32)),
                                                                    newKey: try! EncryptionKey(bytes: [UInt8](repeating: 8, count: 32)))),
        Request(id: 51, database: "app", operation: .rekeyDatabase(currentKey: try! EncryptionKey(bytes: [UInt8](repeating: 8, count: 32)),
                                                                    newKey: nil)),
    ]

    /// An encryption key field that is neither empty nor 32 bytes is refused, naming the field.
    @Test(arguments: [1, 16, 31, 33, 64])
    func encryptionKeyOfTheWrongLengthIsInvalid(_ length: Int) throws {
        // Request { id: 1, create_database (field 12) { encryption_key (field 2): `length` bytes } }
        let inner: [UInt8] = [0x12, UInt8(length)] + [UInt8](repeating: 0xAB, count: length)
        let bytes: [UInt8] = [0x08, 0x01, 0x62, UInt8(inner.count)] + inner
        #expect(throws: SofaError(.invalidParameter, "createDatabase.encryptionKey: an AES-256 key has 32 bytes, not \(length)")) {
            _ = try Request.decode(bytes)
        }
    }

    @Test(arguments: requests)
    func requestRoundTrip(_ request: Request) throws {
        #expect(try Request.decode(request.encoded()) == request)
    }

    static let responses: [Response] = [
        .ok(1),
        .failure(2, SofaError(.conflict, "document a has a newer revision")),
        .failure(3, SofaError(.sqlite, 5, "database is locked")),
        .ok(4, .health(HealthInfo(service: "storage", version: "0.1.0", pid: 42, uptimeMs: 1000,
                                  instance: "storage-1"))),
        .ok(5, .cluster([ServiceStatus(name: "storage", healthy: true, detail: "", instances: 1),
                         ServiceStatus(name: "query", healthy: false, detail: "no worker", instances: 0)])),
        .ok(6, .cluster([])),
        .ok(7, .databases([])),
        .ok(8, .databases(["a", "b", "c"])),
        .ok(9, .document(StoredDocument(id: "a", rev: "1-ab", body: Array(#"{"x":1}"#.utf8), deleted: false,
                                        sequence: 9))),
        .ok(10, .document(StoredDocument(id: "a", rev: "2-cd", body: [], deleted: true, sequence: 10))),
        .ok(11, .revision(id: "a", rev: "3-ef", sequence: 11)),
        .ok(12, .echo(payload: Array(repeating: 7, count: 300), instance: "query-2")),
        .ok(13, .databaseInfo(DatabaseInfo(name: "app", documentCount: 3, lastSequence: 9, updateSequence: 11,
                                           fileBytes: 4096, walBytes: 8192, publicUUID: "p", privateUUID: "q",
                                           versioning: .versionVectors, collections: 2, revsLimit: 5))),
        .ok(14, .collections(["_default._default", "store.orders"])),
        .ok(15, .documents([StoredDocument(id: "a", rev: "2-aa", body: [], deleted: false, sequence: 3,
                                           history: ["2-aa", "1-aa"], conflicted: true, hasAttachments: true),
                            StoredDocument(id: "a", rev: "2-bb", body: [1], deleted: true, sequence: 4)])),
        .ok(16, .bulk([BulkItemResult(id: "a", rev: "1-aa", sequence: 1),
                       BulkItemResult(id: "b", rev: "", sequence: 0, error: SofaError(.conflict, "stale"))])),
        .ok(17, .conflicts(["2-aa", "2-bb"])),
        .ok(18, .expiration(1_900_000_000_000)),
        .ok(19, .changes(ChangesBatch(changes: [Change(sequence: 4, id: "a", rev: "2-aa", deleted: true, body: [1],
                                                       leaves: ["2-aa", "2-bb"]),
                                                Change(sequence: 5, id: "b", rev: "")], lastSequence: 5))),
        .ok(20, .raw(version: [1], body: [2, 3])),
        .ok(21, .inserted(InsertResult(id: "a", rev: "3-cc", sequence: 8, added: 2, conflict: true))),
        .ok(22, .blobWriteStarted(writeID: 1 << 63)),
        .ok(23, .blob(BlobInfo(key: "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=", length: 0))),
        .ok(24, .blob(BlobInfo(key: "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=", length: 1 << 36))),
        .ok(25, .blobData(bytes: [9, 8, 7], totalLength: 1 << 34)),
        .ok(26, .blobData(bytes: [], totalLength: 0)),
        .ok(27, .query(QueryRows(columns: ["name", "$2", "nick"], rows: [[.string("a"), .int(1), nil], [nil, nil, .null], []]))),
        .ok(28, .query(QueryRows(columns: ["x"], rows: [], explain: "SELECT 1\n\n2|0|SCAN t0", more: true))),
        .ok(29, .indexes([IndexDefinition(kind: 0, name: "byName", collection: "_default._default", descriptor: ["expressions": [[".name"]]]),
                          IndexDefinition(kind: 2, name: "likes", collection: "s.c", descriptor: ["path": "a[].b"])])),
    ]

    @Test(arguments: responses)
    func responseRoundTrip(_ response: Response) throws {
        #expect(try Response.decode(response.encoded()) == response)
    }

    @Test(arguments: [WorkerFrame.Kind.ready, .heartbeat, .request, .reply, .disconnect])
    func workerFrameRoundTrip(_ kind: WorkerFrame.Kind) throws {
        let frame = WorkerFrame(kind: kind, instance: "query-\(kind.rawValue)", pid: 77, service: "query",
                                payload: [1, 2, 3])
        #expect(try WorkerFrame.decode(frame.encoded()) == frame)
    }

    @Test func emptyRequestHasNoOperation() {
        #expect(throws: SofaError.self) { try Request.decode([UInt8]()) }
        do {
            _ = try Request.decode([UInt8]())
        } catch {
            #expect(error.sofaCode == .malformedMessage)
        }
    }

    @Test func invalidUTF8IDIsMalformed() throws {
        var bytes = Request(id: 1, database: "", operation: .getDocument(id: "ab", rev: "")).encoded()
        // The id "ab" sits in the bytes as 0x61 0x62; make it an invalid UTF-8 sequence.
        let index = try #require(bytes.firstIndex(of: 0x61))
        bytes[index] = 0xC3
        bytes[index + 1] = 0x28
        #expect(throws: SofaError(.malformedMessage, "malformed message: field getDocument.id is not valid UTF-8")) {
            try Request.decode(bytes)
        }
    }

    @Test func garbageNeverCrashes() {
        var generator = SplitMix64(seed: 0x5EED)
        var malformed = 0
        for _ in 0..<20_000 {
            let count = Int(generator.next() % 64)
            let bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            do {
                let request = try Request.decode(bytes)
                // Whatever decodes must survive a round trip of its own.
                #expect(try Request.decode(request.encoded()) == request)
            } catch {
                malformed += 1
            }
            _ = try? Response.decode(bytes)
            _ = try? WorkerFrame.decode(bytes)
        }
        #expect(malformed > 10_000)
    }

    /// The committed protobuf-c code must be what the script makes from the committed .proto.
    @Test func generatedCodeIsCurrent() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let wire = root.appendingPathComponent("Shared/SofaWire")
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-wire-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        let process = Process()
        process.executableURL = wire.appendingPathComponent("generate.sh")
        process.arguments = [output.path]
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "generate.sh failed (is protobuf-c-compiler installed?)")
        for file in ["sofa.pb-c.c", "include/sofa.pb-c.h"] {
            let fresh = try Data(contentsOf: output.appendingPathComponent(file))
            let committed = try Data(contentsOf: wire.appendingPathComponent("Generated/\(file)"))
            #expect(fresh == committed, "\(file) is stale: run Shared/SofaWire/generate.sh and commit")
        }
    }
}

@Suite struct PeekIDTests {
    @Test(arguments: [UInt64(1), 127, 128, 300, 1 << 35, .max])
    func idIsReadFromTheHead(_ id: UInt64) {
        let bytes = Request(id: id, database: "app", operation: .listDatabases).encoded()
        #expect(Request.peekID(Array(bytes.prefix(16))) == id)
    }

    @Test func garbageHasNoID() {
        #expect(Request.peekID([]) == nil)
        #expect(Request.peekID([0x12, 0x01]) == nil)
        #expect(Request.peekID([0x08, 0xFF, 0xFF]) == nil)
    }
}

/// A bulk write over the decoder's item limit is refused before its items are converted.
@Suite struct BulkLimitDecodeTests {
    @Test func overTheLimitIsRefusedAtDecode() throws {
        let items = (0..<5).map { BulkItem.put(id: "d\($0)", rev: "", body: Array("{}".utf8), deleted: false) }
        let bytes = Request(id: 7, database: "db", operation: .bulkWrite(items)).encoded()
        do {
            _ = try bytes.withUnsafeBytes { try Request.decode($0, maxBulkItems: 4) }
            Issue.record("a bulk of 5 items was decoded with a limit of 4")
        } catch let error as SofaError {
            #expect(error.is(.messageTooLarge) && error.message.contains("5 items is over the limit of 4"), "\(error)")
        }
        let decoded = try bytes.withUnsafeBytes { try Request.decode($0, maxBulkItems: 5) }
        #expect(decoded.operation == .bulkWrite(items))
    }

    /// The items are counted on the encoded bytes (before protobuf-c unpacks any): empty items
    /// too, and only those of a bulk write.
    @Test func itemsAreCountedWithoutDecoding() {
        let empty = (0..<3).map { _ in BulkItem.put(id: "", rev: "", body: [], deleted: false) }
        for (operation, expected) in [(Op.bulkWrite(empty), 3 as Int?), (.bulkWrite([]), 0), (.listDatabases, nil)] {
            let bytes = Request(id: 1, database: "db", operation: operation).encoded()
            #expect(bytes.withUnsafeBytes { BulkLimit.itemCount($0) } == expected, "\(operation)")
        }
        #expect([UInt8]([0xC2, 0x01, 0x05, 0x0A]).withUnsafeBytes { BulkLimit.itemCount($0) } == nil, "a truncated field")
    }
}
