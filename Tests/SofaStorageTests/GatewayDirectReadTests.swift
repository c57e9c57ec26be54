import Foundation
import Logging
import SofaCore
@testable import SofaGateway
@testable import SofaStorage
import SofaTestSupport
import SofaWire
import Synchronization
import Testing

/// The gateway's `DirectReads`: a plain get is answered from the database file exactly as storage
/// answers it; whatever it does not take goes on to storage (nil), and a database deleted and
/// made again is read from its new file.
@Suite struct GatewayDirectReadTests {
    func get(_ id: String, rev: String = "", history: Bool = false, database: String = "db", collection: String = "") -> Request {
        var request = Request(id: 7, database: database, operation: .getDocument(id: id, rev: rev, history: history, openLeaves: false))
        request.collection = collection
        return request
    }

    func decoded(_ message: EncodedMessage?) throws -> Response? {
        guard let message else { return nil }
        return try Response.decode(message.bytes)
    }

    /// What `reads` answers to `request` outside a batch (at once): nil when it does not take it,
    /// or leaves it to storage.
    func answer(_ reads: DirectReads, _ request: ForwardedRequest) -> EncodedMessage? {
        let answer = Mutex<EncodedMessage?>(nil)
        let taken = reads.take(request) { message in answer.withLock { $0 = message } }
        return taken ? answer.withLock { $0 } : nil
    }


    @Test func getsAreAnsweredAsStorageAnswersThem() async throws {
        try await withTemporaryDirectory { url in
            let engine = try StorageEngine(dataDirectory: url)
            defer { engine.close() }
            try await engine.createDatabase("db")
            let service = StorageService(engine: engine, instance: "test", logger: Logger(label: "test"))
            let first = try await put(service, "a", #"{"x":1}"#)
            let second = try await put(service, "a", #"{"x":2}"#, rev: first)
            let gone = try await put(service, "gone", #"{}"#)
            _ = try await put(service, "gone", #"{}"#, rev: gone, deleted: true)
            // Two live leaves: a conflict, which a get of the current revision reports.
            let root = try await put(service, "c", #"{"v":1}"#)
            _ = try await put(service, "c", #"{"v":2}"#, rev: root)
            let branch = "2-" + String(repeating: "f", count: 32)
            let inserted = await service.handle(Request(id: 1, database: "db", operation: .insertRevision(RevisionInsert(
                id: "c", history: [branch, root], body: Array(#"{"v":"theirs"}"#.utf8), deleted: false, winnerByRevID: false))))
            #expect(throws: Never.self) { try inserted.outcome.get() }
            let reads = DirectReads(dataDirectory: url)

            for request in [get("a"), get("a", history: true), get("a", rev: first), get("a", rev: second, history: true),
                            get("missing"), get("a", rev: "9-abcd"), get("gone"), get("a", collection: "_default"),
                            get("c"), get("c", history: true), get("c", rev: branch)] {
                let answered = try decoded(answer(reads, ForwardedRequest(request)))
                #expect(answered != nil, "\(request.operation)")
                #expect(answered == (await service.handle(request)), "\(request.operation)")
            }
            guard case .success(.document(let conflicted))? = try decoded(answer(reads, ForwardedRequest(get("c"))))?.outcome else {
                Issue.record("no document c"); return
            }
            #expect(conflicted.conflicted)
            // A later write is seen by the next read.
            let third = try await put(service, "a", #"{"x":3}"#, rev: second)
            guard case .success(.document(let document))? = try decoded(answer(reads, ForwardedRequest(get("a"))))?.outcome else {
                Issue.record("no document"); return
            }
            #expect(document.rev == third && document.body == Array(#"{"x":3}"#.utf8))

            // Left to storage: documents over 64 KiB, local documents, open leaves, other collections,
            // bad IDs and revisions, other operations, databases with no file, version-vector databases.
            _ = try await put(service, "big", #"{"x":""# + String(repeating: "x", count: 65 << 10) + #""}"#)
            try await engine.createDatabase("vectors", versioning: .versionVectors)
            _ = try await put(service, "v", #"{}"#, database: "vectors")
            var leaves = get("a")
            leaves.operation = .getDocument(id: "a", rev: "", history: false, openLeaves: true)
            for request in [get("big"), get("_local/x"), leaves, get("a", collection: "s.c"), get(""), get("a", rev: "not a revision"),
                            Request(id: 7, database: "db", operation: .listCollections), get("a", database: "nowhere"),
                            get("a", database: "Bad Name"), get("v", database: "vectors")] {
                #expect(try decoded(answer(reads, ForwardedRequest(request))) == nil, "\(request.database) \(request.operation)")
            }

            // Deleted, then made again: the new file is read, not the old one still open here.
            try await engine.deleteDatabase("db")
            #expect(try decoded(answer(reads, ForwardedRequest(get("a")))) == nil)
            try await engine.createDatabase("db")
            let again = try await put(service, "a", #"{"again":true}"#)
            guard case .success(.document(let remade))? = try decoded(answer(reads, ForwardedRequest(get("a"))))?.outcome else {
                Issue.record("no document in the new database"); return
            }
            #expect(remade.rev == again && remade.body == Array(#"{"again":true}"#.utf8))
        }
    }

    /// A file another connection keeps locked is waited for only briefly
    /// (`DocumentFiles.busyTimeoutMs`), then left to storage: the reading thread (the gateway's
    /// socket thread) is not held for SQLite's usual seconds. Once the lock is gone, gets are
    /// read here again.
    @Test func aLockedFileIsLeftToStorageAfterABriefWait() async throws {
        try await withTemporaryDirectory { url in
            let locked = try await LockedDatabase(in: url)
            let reads = DirectReads(dataDirectory: url)
            let started = ContinuousClock.now
            #expect(answer(reads, ForwardedRequest(get("a"))) == nil, "a locked file is left to storage")
            let waited = ContinuousClock.now - started
            #expect(waited < .seconds(2), "the reading thread waited \(waited) for the lock (SQLite's default is 5 s)")

            try locked.release()
            guard case .success(.document(let document))? = try decoded(answer(reads, ForwardedRequest(get("a"))))?.outcome else {
                Issue.record("not read once the lock was gone"); return
            }
            #expect(document.body == Array(#"{"x":1}"#.utf8))
        }
    }

    /// Gets taken while a batch is open are answered when it ends (or when `maxHeld` of them wait),
    /// read after they were all received: a write acknowledged in between is seen. Those of
    /// several databases, and those left to storage, each get their own answer.
    @Test func getsHeldInABatchAreReadWhenItEnds() async throws {
        try await withTemporaryDirectory { url in
            let engine = try StorageEngine(dataDirectory: url)
            defer { engine.close() }
            try await engine.createDatabase("db")
            try await engine.createDatabase("other")
            let service = StorageService(engine: engine, instance: "test", logger: Logger(label: "test"))
            let first = try await put(service, "a", #"{"x":1}"#)
            _ = try await put(service, "b", #"{"in":"other"}"#, database: "other")
            _ = try await put(service, "big", #"{"x":""# + String(repeating: "x", count: 65 << 10) + #""}"#)
            let reads = DirectReads(dataDirectory: url)
            let answers = Mutex<[Int: EncodedMessage?]>([:])
            let requests = [get("a"), get("b", database: "other"), get("missing"), get("big"), get("a", rev: first)]

            reads.beginBatch()
            for (index, request) in requests.enumerated() {
                #expect(reads.take(ForwardedRequest(request)) { message in answers.withLock { $0[index] = message } })
            }
            #expect(answers.withLock { $0.isEmpty }, "answered before the batch ended")
            let second = try await put(service, "a", #"{"x":2}"#, rev: first)
            reads.endBatch()
            let answered = answers.withLock { $0 }
            #expect(answered.count == requests.count)
            for (index, request) in requests.enumerated() where request.operation != get("big").operation {
                let response = try decoded(answered[index] ?? nil)
                #expect(response == (await service.handle(request)), "\(request.database) \(request.operation)")
            }
            guard case .success(.document(let document))? = try decoded(answered[0] ?? nil)?.outcome else {
                Issue.record("no document"); return
            }
            #expect(document.rev == second, "the write acknowledged before the batch ended is seen")
            let big = answered[3]
            #expect(big != nil && big! == nil, "a large document is left to storage")

            // Past `maxHeld` gets waiting, they are read without waiting for the end.
            answers.withLock { $0 = [:] }
            reads.beginBatch()
            for index in 0..<DirectReads.maxHeld {
                _ = reads.take(ForwardedRequest(get("a"))) { message in answers.withLock { $0[index] = message } }
            }
            #expect(answers.withLock { $0.count } == DirectReads.maxHeld)
            _ = reads.take(ForwardedRequest(get("a"))) { message in answers.withLock { $0[-1] = message } }
            #expect(answers.withLock { $0[-1] } == nil, "the next one is held again")
            reads.endBatch()
            #expect(answers.withLock { $0.count } == DirectReads.maxHeld + 1)
            // A batch ended, the next get is answered at once.
            #expect(try decoded(answer(reads, ForwardedRequest(get("a")))) == (await service.handle(get("a"))))
        }
    }
}

/// Writes a document through storage's service (as a client's put reaches it); its new revision.
func put(_ service: StorageService, _ id: String, _ body: String, rev: String = "", deleted: Bool = false,
         database: String = "db") async throws -> String {
    let put = await service.handle(Request(id: 1, database: database, operation: .putDocument(
        id: id, rev: rev, body: Array(body.utf8), deleted: deleted)))
    guard case .success(.revision(_, let made, _)) = put.outcome else { throw SofaError(.unexpectedError, "put: \(put)") }
    return made
}
