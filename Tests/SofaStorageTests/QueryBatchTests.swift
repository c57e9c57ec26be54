import Foundation
import Logging
import SofaCore
import SofaQL
import SofaRows
@testable import SofaQuery
@testable import SofaStorage
import SofaTestSupport
import SofaWire
import Synchronization
import Testing

/// A query worker's batch (`QueryEngine.beginBatch`/`endBatch`): the queries taken while it is
/// open run when it ends, after they all arrived (a write acknowledged in between is seen), each
/// with the answer it gets alone: rows, a database that does not exist, a query that does not
/// compile, a query cancelled while it waited.
@Suite struct QueryBatchTests {
    func query(_ id: UInt64, _ text: String, database: String = "db") -> (Request, QuerySpec) {
        let spec = QuerySpec(text: text, isN1QL: true)
        return (Request(id: id, database: database, operation: .query(spec)), spec)
    }

    @Test func queriesHeldInABatchRunWhenItEnds() async throws {
        try await withTemporaryDirectory { url in
            let storage = try StorageEngine(dataDirectory: url)
            defer { storage.close() }
            try await storage.createDatabase("db")
            try await storage.createDatabase("other")
            let service = StorageService(engine: storage, instance: "test", logger: Logger(label: "test"))
            let first = try await put(service, "a", #"{"x":1}"#)
            _ = try await put(service, "b", #"{"x":"other"}"#, database: "other")
            let engine = QueryEngine(dataDirectory: url)
            let queries = [query(1, "SELECT x FROM _ WHERE META().id = 'a'"),
                           query(2, "SELECT x FROM _ WHERE META().id = 'b'", database: "other"),
                           query(3, "SELECT x FROM _", database: "nowhere"),
                           query(4, "SELECT FROM WHERE"),
                           query(5, "SELECT x FROM _ WHERE META().id = 'a'"),
                           query(6, "SELECT COUNT(*) FROM _")]
            let answers = Mutex<[UInt64: Response]>([:])

            engine.beginBatch()
            var cancels: [UInt64: @Sendable () -> Void] = [:]
            for (request, spec) in queries {
                cancels[request.id] = engine.handle(request, spec) { response in answers.withLock { $0[request.id] = response } }
            }
            #expect(answers.withLock { $0.isEmpty }, "answered before the batch ended")
            cancels[5]?()
            _ = try await put(service, "a", #"{"x":2}"#, rev: first)
            engine.endBatch()
            // Those past the batch's budget (a debug build compiles slowly) went to the engine's
            // serial queue before `endBatch` returned: a query queued after them ends after them.
            let (last, lastSpec) = query(8, "SELECT COUNT(*) FROM _")
            _ = await engine.handle(last, lastSpec)
            let answered = answers.withLock { $0 }
            #expect(answered.count == queries.count)

            #expect(answered[1]?.outcome == .success(.query(QueryRows(columns: ["x"], rows: [[.int(2)]], collections: ["_default._default"]))),
                    "the write acknowledged before the batch ended is seen")
            #expect(answered[2]?.outcome == .success(.query(QueryRows(columns: ["x"], rows: [[.string("other")]], collections: ["_default._default"]))))
            guard case .failure(let missing)? = answered[3]?.outcome, case .failure(let bad)? = answered[4]?.outcome,
                  case .failure(let cancelled)? = answered[5]?.outcome else {
                Issue.record("expected failures: \(answered)"); return
            }
            #expect(missing.is(.notFound) && bad.is(.invalidQuery) && cancelled.is(.cancelled), "\(missing) \(bad) \(cancelled)")
            // Each answer is the one the query gets alone.
            for (request, spec) in queries where request.id != 5 {
                #expect(answered[request.id] == (await engine.handle(request, spec)), "query \(request.id)")
            }

            // The batch ended: the next query is not held. It is answered at once, or (past the
            // budget: a debug build under load) from the engine's queue, without `endBatch`.
            let (request, spec) = query(7, "SELECT x FROM _ WHERE META().id = 'a'")
            let now = Mutex<Response?>(nil)
            _ = engine.handle(request, spec) { response in now.withLock { $0 = response } }
            let (after, afterSpec) = query(9, "SELECT COUNT(*) FROM _")
            _ = await engine.handle(after, afterSpec)
            #expect(now.withLock { $0 }?.outcome == answered[1]?.outcome)
        }
    }

    /// A query run on the worker's socket thread that finds its file locked by another
    /// connection waits there only briefly (`inlineBusyTimeoutMs`): it goes on to the engine's
    /// queue, which waits as SQLite waits, and is answered once the lock is gone. The socket
    /// thread, which carries the worker's heartbeats, is free meanwhile.
    @Test func aQueryFindingItsFileLockedWaitsOffTheSocketThread() async throws {
        try await withTemporaryDirectory { url in
            let locked = try await LockedDatabase(in: url)
            let engine = QueryEngine(dataDirectory: url)
            let (request, spec) = query(1, "SELECT x FROM _ WHERE META().id = 'a'")
            let answer = Mutex<Response?>(nil)
            let started = ContinuousClock.now
            _ = engine.handle(request, spec) { response in answer.withLock { $0 = response } }
            let waited = ContinuousClock.now - started
            #expect(waited < .seconds(2), "the socket thread waited \(waited) for the lock (SQLite's default is 5 s)")
            #expect(answer.withLock { $0 } == nil, "answered while the file was locked: \(String(describing: answer.withLock { $0 }))")

            // A query that waits less than the lock lasts is `.busy`, not an invalid query.
            let refused: SofaError? = locked.queue.sync { () -> SofaError? in
                do throws(SofaError) {
                    let reader = try SQLiteConnection(path: locked.path, queue: locked.queue,
                                                      options: .init(readOnly: true, queryOnly: true, busyTimeoutMs: 10))
                    try reader.query("SELECT count(*) FROM kv_info", []) { _ in }
                    return nil
                } catch {
                    return error
                }
            }
            #expect(refused?.is(.busy) == true, "\(String(describing: refused))")

            try locked.release()
            // The engine's queue is serial: a query queued now ends after the one waiting there.
            let (after, afterSpec) = query(2, "SELECT COUNT(*) FROM _")
            _ = await engine.handle(after, afterSpec)
            #expect(answer.withLock { $0 }?.outcome == .success(.query(QueryRows(columns: ["x"], rows: [[.int(1)]],
                                                                                  collections: ["_default._default"]))))
        }
    }

    /// A long query text is parsed and compiled on the engine's queue, not on the worker's socket
    /// thread (neither step can be stopped by the inline budget, and the socket thread carries
    /// the heartbeats); once compiled, it runs inline like a short one. A reply made on the
    /// calling thread is an inline answer; one from the queue comes on another thread.
    @Test func aLongQueryTextIsCompiledOffTheSocketThread() async throws {
        try await withTemporaryDirectory { url in
            let storage = try StorageEngine(dataDirectory: url)
            defer { storage.close() }
            try await storage.createDatabase("db")
            let service = StorageService(engine: storage, instance: "test", logger: Logger(label: "test"))
            _ = try await put(service, "a", #"{"x":1}"#)
            let engine = QueryEngine(dataDirectory: url)
            let pad = String(repeating: "p", count: QueryEngine.inlineTextBytes)
            let long = "SELECT x FROM _ WHERE META().id = 'a' OR x = '\(pad)'"
            let rows: Result<Reply, SofaError> = .success(.query(QueryRows(columns: ["x"], rows: [[.int(1)]], collections: ["_default._default"])))

            /// Handles the query; answers its outcome and whether the reply came on this thread.
            func ask(_ id: UInt64, _ text: String) async -> (Result<Reply, SofaError>?, inline: Bool) {
                let caller = pthread_self()
                let answer = Mutex<(Response?, Bool)>((nil, false))
                let (request, spec) = query(id, text)
                _ = engine.handle(request, spec) { response in
                    answer.withLock { $0 = (response, pthread_equal(pthread_self(), caller) != 0) }
                }
                // The engine's queue is serial: a query queued after it ends after it.
                let (after, afterSpec) = query(id + 1000, "SELECT COUNT(*) FROM _")
                _ = await engine.handle(after, afterSpec)
                let (response, inline) = answer.withLock { $0 }
                return (response?.outcome, inline)
            }

            let first = await ask(1, long)
            #expect(first.0 == rows)
            #expect(!first.inline, "a text of \(long.utf8.count) bytes was compiled on the socket thread")
            // Compiled now: taken up inline (a run past the budget, on a loaded machine, goes to
            // the queue: one of a few tries is enough).
            var compiledInline = false
            for attempt in 0..<20 where !compiledInline {
                let again = await ask(UInt64(10 + attempt), long)
                #expect(again.0 == rows)
                compiledInline = again.inline
            }
            #expect(compiledInline, "a compiled long text never ran inline")
            var shortInline = false
            for attempt in 0..<20 where !shortInline {
                let short = await ask(UInt64(100 + attempt), "SELECT x FROM _ WHERE META().id = 'a'")
                #expect(short.0 == rows)
                shortInline = short.inline
            }
            #expect(shortInline, "a short text never ran inline")
        }
    }

    /// A worker keeps at most `maxOpen` database files open: the least recently used is closed
    /// to make room, and opened again (as new) when next read.
    @Test func readConnectionsKeepTheMostRecentlyUsed() async throws {
        try await withTemporaryDirectory { url in
            let storage = try StorageEngine(dataDirectory: url)
            defer { storage.close() }
            for name in ["one", "two", "three"] { try await storage.createDatabase(name) }
            let queue = DispatchQueue(label: "test.read-connections")
            // What each step saw: whether the connection was opened now, then which are open.
            let seen: [String] = queue.sync {
                var reads = ReadConnections(maxOpen: 2)
                var seen: [String] = []
                for name in ["one", "two", "one", "three", "two"] {
                    let opened = (try? reads.connection(name, in: url, queue: queue))?.opened
                    seen.append("\(name):\(opened.map { $0 ? "opened" : "kept" } ?? "failed")")
                }
                seen.append(["one", "two", "three"].filter { reads.isOpen($0) }.joined(separator: ",") + " of \(reads.count)")
                return seen
            }
            // "two" was the least recently used when "three" came: closed, then opened again.
            #expect(seen == ["one:opened", "two:opened", "one:kept", "three:opened", "two:opened", "two,three of 2"])
        }
    }
}
