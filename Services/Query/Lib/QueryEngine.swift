internal import SofaFiles
public import SofaCore
public import SofaWire
import SofaQL
import SofaRows
public import Foundation
internal import Synchronization

/// What a query worker does with a query: find the database's file, open it read-only (one
/// connection per database, reused), compile the query once per text and schema version (an
/// index created or dropped changes the plan), run it within the request's deadline, and
/// answer rows or an explanation. Runs on its own serial queue: SQLite calls block, and the
/// cooperative thread pool must never wait on them.
public final class QueryEngine: Sendable {
    private let dataDirectory: URL
    /// The open connections and compiled queries, on the engine's queue.
    private let state = Confined(State(), label: "sofa.query.engine")
    /// Queries handed to the queue and not yet finished there.
    private let queued = Atomic<Int>(0)
    /// Results bigger than this are refused rather than built (page with LIMIT/OFFSET).
    public static let maxResultBytes = 12 << 20
    /// About how much one page of a paged query holds.
    public static let pageBytes = 4 << 20

    struct CacheKey: Hashable {
        var database: String
        var collection: String
        var text: String
        var isN1QL: Bool
    }

    struct State {
        var files = ReadConnections()
        var compiled: [CacheKey: (version: Int64, query: CompiledQuery)] = [:]
        /// How long the connections handed out now wait for a lock another connection holds:
        /// briefly on the socket thread (`inlineBusyTimeoutMs`), SQLite's usual seconds on the
        /// engine's queue.
        var busyTimeoutMs = SQLiteConnection.Options.queryWorker.busyTimeoutMs
    }

    /// How long a query run on the socket thread waits for a locked file before it goes to the
    /// engine's queue to wait there: a busy wait is not stopped by the inline budget's progress
    /// checks, and the socket thread carries the worker's heartbeats (a worker silent for a
    /// second and a half is taken for dead).
    static let inlineBusyTimeoutMs: Int32 = 20

    public init(dataDirectory: URL) {
        self.dataDirectory = dataDirectory
    }

    /// Runs a query request (on the engine's queue) and answers its reply. Cancelling the calling
    /// task (the client went away) takes a query that has not started off the queue, and stops
    /// one that has at SQLite's next progress check.
    public func handle(_ request: Request, _ spec: QuerySpec) async -> Response {
        let interrupt = QueryInterrupt()
        do throws(SofaError) {
            let rows = try await state.run(cancelled: SofaError(.cancelled, "the query was cancelled"),
                                           onCancel: { interrupt.interrupt() }) { (state) throws(SofaError) -> QueryRows in
                try self.run(&state, request, spec, interrupt)
            }
            return .ok(request.id, .query(rows))
        } catch {
            return .failure(request.id, error)
        }
    }

    /// The same without a task, called on the worker's socket thread: the query runs there when
    /// the engine's queue is idle and it ends within `inlineBudgetNs` (a point lookup takes tens
    /// of microseconds), else on the engine's queue, which calls `reply`. The function returned
    /// cancels it: one that has not started answers `.cancelled` without running, one that runs
    /// stops at SQLite's next progress check.
    ///
    /// Why inline: measured on point lookups, handing each query to the queue and its reply back
    /// (a dispatch wake-up, then an eventfd write and a wake-up of the socket thread) cost the
    /// worker more than the query itself. A query that outruns the budget is stopped and run
    /// again on the queue, so a long one never holds up the socket thread (heartbeats, cancels)
    /// for more than the budget.
    ///
    /// While a batch is open (`beginBatch`), such a query is held instead, and run with the
    /// others held when the batch ends (see `endBatch`).
    public func handle(_ request: Request, _ spec: QuerySpec,
                       reply: @escaping @Sendable (Response) -> Void) -> @Sendable () -> Void {
        guard queued.load(ordering: .acquiring) == 0 else { return enqueue(request, spec, reply: reply) }
        let query = Held(request: request, spec: spec, interrupt: QueryInterrupt(), reply: reply)
        let held = batch.withLock { batch -> Bool in
            guard batch.open else { return false }
            batch.held.append(query)
            return true
        }
        if !held { run([query]) }  // a batch of one: inline, or on to the queue past the budget
        return { query.interrupt.interrupt() }
    }

    /// Runs the query on the engine's queue, which calls `reply`; the function returned cancels it.
    private func enqueue(_ request: Request, _ spec: QuerySpec, interrupt: QueryInterrupt = QueryInterrupt(),
                         reply: @escaping @Sendable (Response) -> Void) -> @Sendable () -> Void {
        queued.add(1, ordering: .relaxed)
        state.async { state in
            defer { self.queued.subtract(1, ordering: .releasing) }
            guard !interrupt.isInterrupted else {
                return reply(.failure(request.id, SofaError(.cancelled, "the query was cancelled")))
            }
            do throws(SofaError) {
                reply(.ok(request.id, .query(try self.run(&state, request, spec, interrupt))))
            } catch {
                reply(.failure(request.id, error))
            }
        }
        return { interrupt.interrupt() }
    }

    /// How long a query may run on the socket thread before it is moved to the engine's queue.
    static let inlineBudgetNs: UInt64 = 2_000_000

    /// The longest query text parsed and compiled on the socket thread. Neither step runs a
    /// progress check, so the inline budget cannot stop them: a text of 40,000 operators took the
    /// socket thread (and the worker's heartbeats) long enough under load for the broker to take
    /// the worker for dead. A longer text already compiled runs inline like any other.
    static let inlineTextBytes = 8 << 10

    /// Whether `spec` may be taken up on the socket thread: a short text, or one compiled already.
    private static func parsesInline(_ request: Request, _ spec: QuerySpec, _ state: State) -> Bool {
        spec.text.utf8.count <= inlineTextBytes
            || state.compiled[CacheKey(database: request.database, collection: request.collection, text: spec.text,
                                       isN1QL: spec.isN1QL)] != nil
    }

    /// A query held while a batch is open.
    private struct Held: Sendable {
        let request: Request
        let spec: QuerySpec
        let interrupt: QueryInterrupt
        let reply: @Sendable (Response) -> Void
    }

    /// The queries held while a batch is open.
    private let batch = Mutex<(open: Bool, held: [Held])>((false, []))

    /// The worker starts taking up the jobs waiting on its socket: queries that would run on its
    /// thread are held from now.
    public func beginBatch() {
        batch.withLock { $0.open = true }
    }

    /// It has taken them all up: the queries held run now, each database's in one read
    /// transaction, with one look at which file is open and at its schema version. Every query
    /// held arrived before that transaction began, so each sees every write acknowledged before
    /// it was sent. Measured on the worker's thread (`sofa bench query`, 16 lookups in flight):
    /// per lookup, the file check (a `stat`), the schema version (a statement of its own) and
    /// SQLite's locking at the start and end of each read (`fcntl`) were a third of its time.
    ///
    /// The budget is the inline one, for the batch: once it is spent, the queries not yet run go
    /// to the engine's queue, so the socket thread is held up at most twice the budget (the last
    /// query started has its own).
    public func endBatch() {
        while true {
            let held = batch.withLock { batch -> [Held] in
                let held = batch.held
                batch.held.removeAll(keepingCapacity: true)
                if held.isEmpty { batch.open = false }
                return held
            }
            if held.isEmpty { return }
            run(held)
        }
    }

    /// Runs queries held in a batch (see `endBatch`), or one alone: on this thread within the
    /// inline budget, the rest on the engine's queue. The queue is idle, so `sync` runs in place.
    private func run(_ held: [Held]) {
        guard queued.load(ordering: .acquiring) == 0 else {
            for query in held { _ = enqueue(query.request, query.spec, interrupt: query.interrupt, reply: query.reply) }
            return
        }
        let started = DispatchTime.now().uptimeNanoseconds
        let budget = started + Self.inlineBudgetNs
        var answers: [Response?] = Array(repeating: nil, count: held.count)
        state.sync { state in
            state.busyTimeoutMs = Self.inlineBusyTimeoutMs
            defer { state.busyTimeoutMs = SQLiteConnection.Options.queryWorker.busyTimeoutMs }
            for (database, indices) in DocumentFiles.byDatabase(held.map(\.request.database))
            where DispatchTime.now().uptimeNanoseconds < budget {
                // A database that cannot be opened: each query says why, as it would alone.
                let connection = try? self.connection(&state, database)
                var together = false
                if indices.count > 1, let connection { together = (try? connection.execute("BEGIN")) != nil }
                let version = together ? try? connection?.schemaVersion() : nil
                for index in indices {
                    let query = held[index]
                    if query.interrupt.isInterrupted {
                        answers[index] = .failure(query.request.id, SofaError(.cancelled, "the query was cancelled"))
                        continue
                    }
                    let now = DispatchTime.now().uptimeNanoseconds
                    guard now < budget else { break }  // the rest go to the queue
                    if !Self.parsesInline(query.request, query.spec, state) { continue }
                    let asked = query.request.deadline > 0 ? Self.monotonicDeadline(epochMs: query.request.deadline) : 0
                    let own = now + Self.inlineBudgetNs
                    do throws(SofaError) {
                        let rows = try self.run(&state, query.request, query.spec, query.interrupt,
                                                deadline: asked == 0 ? own : min(asked, own),
                                                opened: connection.flatMap { connection in version.map { (connection, $0) } })
                        answers[index] = .ok(query.request.id, .query(rows))
                    } catch where error.is(.timeout) && (asked == 0 || asked > own) {
                        continue  // the budget, not the request's deadline: on to the queue
                    } catch where SQLiteConnection.isLocked(error) {
                        continue  // a locked file: waited for on the queue
                    } catch {
                        answers[index] = .failure(query.request.id, error)
                    }
                }
                if together, let connection, (try? connection.execute("COMMIT")) == nil {
                    try? connection.execute("ROLLBACK")
                }
                // A transaction left open would hold every later query to its snapshot: the
                // connection is closed instead (the next query opens a new one).
                if let connection, connection.inTransaction { state.files.forget(database) }
            }
        }
        for (query, answer) in zip(held, answers) {
            if let answer {
                query.reply(answer)
            } else {
                _ = enqueue(query.request, query.spec, interrupt: query.interrupt, reply: query.reply)
            }
        }
    }

    /// The tree a query's text stands for.
    public static func tree(_ spec: QuerySpec) throws(SofaError) -> JSON {
        if spec.isN1QL { return try N1QL.parse(spec.text) }
        do {
            return try JSON.parse(spec.text)
        } catch {
            throw SofaError(.invalidQuery, "the JSON query is not valid JSON: \(error.message)")
        }
    }

    /// The database's connection: reused while the file is the one it opened; a database that
    /// was deleted (and maybe re-created) gets a fresh connection and forgets its compiled queries.
    private func connection(_ state: inout State, _ database: String) throws(SofaError) -> SQLiteConnection {
        let connection: SQLiteConnection, opened: Bool
        do {
            (connection, opened) = try state.files.connection(database, in: dataDirectory, queue: self.state.queue)
        } catch {
            state.compiled = state.compiled.filter { $0.key.database != database }
            throw error
        }
        connection.setBusyTimeout(state.busyTimeoutMs)
        guard opened else { return connection }
        state.compiled = state.compiled.filter { $0.key.database != database }
        let attachments = StorageLayout.attachmentsDirectory(of: database, in: dataDirectory)
        do {
            try connection.enableBlobs { (digest: String) throws(SofaError) -> [UInt8]? in
                guard let key = BlobKey.tryParse(digest) else { return nil }
                return try BlobFileReader.contents(of: key, in: attachments)
            }
        } catch {
            state.files.forget(database)
            throw error
        }
        return connection
    }

    /// `opened`: the database's connection and schema version, when the caller has them (a
    /// batch, in its read transaction).
    private func run(_ state: inout State, _ request: Request, _ spec: QuerySpec,
                     _ interrupt: QueryInterrupt?, deadline given: UInt64? = nil,
                     opened: (connection: SQLiteConnection, schemaVersion: Int64)? = nil) throws(SofaError) -> QueryRows {
        let connection: SQLiteConnection
        if let opened { connection = opened.connection } else { connection = try self.connection(&state, request.database) }
        let compiled = try compile(&state, connection, request, spec, version: opened?.schemaVersion)
        if spec.explain {
            let plan = try connection.explain(compiled)
            return QueryRows(columns: compiled.columns, rows: [], explain: compiled.sql + "\n\n" + plan,
                             collections: compiled.collections.map(\.description))
        }
        let deadline = given ?? (request.deadline > 0 ? Self.monotonicDeadline(epochMs: request.deadline) : 0)
        // A page is bounded by rows (when asked) and by bytes; an unpaged result over the byte
        // limit is refused rather than built, naming the way out.
        let paged = spec.pageRows > 0
        let page = try connection.page(compiled, parameters: spec.parameters, deadline: deadline, interrupt: interrupt,
                                       skip: spec.skip,
                                       maxRows: Int(spec.pageRows), maxBytes: paged ? Self.pageBytes : Self.maxResultBytes)
        if page.more && !paged {
            throw SofaError(.messageTooLarge, "the result is over \(Self.maxResultBytes >> 20) MiB: page it (the SDK's queryPages, or LIMIT/OFFSET)")
        }
        return QueryRows(columns: compiled.columns, rows: page.rows, more: page.more,
                         collections: compiled.collections.map(\.description))
    }

    private func compile(_ state: inout State, _ connection: SQLiteConnection, _ request: Request,
                         _ spec: QuerySpec, version known: Int64? = nil) throws(SofaError) -> CompiledQuery {
        let version: Int64
        if let known { version = known } else { version = try connection.schemaVersion() }
        let key = CacheKey(database: request.database, collection: request.collection, text: spec.text, isN1QL: spec.isN1QL)
        if let cached = state.compiled[key], cached.version == version { return cached.query }
        var tree = try Self.tree(spec)
        if case .array(let items) = tree, items.count == 2, items[0] == .string("SELECT") { tree = items[1] }
        // N1QL names what it reads (LiteCore refuses it otherwise, in these words); a collection's
        // query reads that collection.
        if spec.isN1QL, request.collection.isEmpty, case .object(let select) = tree,
           !select.keys.contains(where: { $0.uppercased() == "FROM" }) {
            throw SofaError(.invalidQuery, "N1QL error: missing the FROM clause")
        }
        // The request's collection is the default FROM.
        if !request.collection.isEmpty, case .object(var select) = tree, !select.keys.contains(where: { $0.uppercased() == "FROM" }) {
            let collection = try CollectionName(parsing: request.collection)
            select["FROM"] = [["SCOPE": .string(collection.scope), "COLLECTION": .string(collection.name), "AS": .string(collection.name)]]
            tree = .object(select)
        }
        var schema = try connection.schema()
        schema.databaseName = request.database
        let compiled = try QueryCompiler.compile(tree, schema: schema)
        if state.compiled.count > 500 { state.compiled.removeAll() }
        state.compiled[key] = (version, compiled)
        return compiled
    }

    /// A wall-clock deadline (ms since the epoch) as a monotonic instant.
    static func monotonicDeadline(epochMs: UInt64) -> UInt64 {
        let nowMs = UInt64(Date().timeIntervalSince1970 * 1000)
        let remainingMs = epochMs > nowMs ? epochMs - nowMs : 0
        return DispatchTime.now().uptimeNanoseconds + remainingMs * 1_000_000
    }
}
