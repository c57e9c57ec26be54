internal import SofaFiles
public import SofaCore
public import SofaWire
import SofaQL
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
    }

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
    public func handle(_ request: Request, _ spec: QuerySpec,
                       reply: @escaping @Sendable (Response) -> Void) -> @Sendable () -> Void {
        if queued.load(ordering: .acquiring) == 0, let response = inline(request, spec) {
            reply(response)
            return {}
        }
        let interrupt = QueryInterrupt()
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

    /// The query's response when it ran to its end within the inline budget; nil when the budget
    /// stopped it (it runs again on the queue). The queue is idle, so `sync` runs in place.
    private func inline(_ request: Request, _ spec: QuerySpec) -> Response? {
        let started = DispatchTime.now().uptimeNanoseconds
        let asked = request.deadline > 0 ? Self.monotonicDeadline(epochMs: request.deadline) : 0
        let budget = started + Self.inlineBudgetNs
        return state.sync { (state) -> Response? in
            do throws(SofaError) {
                let rows = try self.run(&state, request, spec, nil, deadline: asked == 0 ? budget : min(asked, budget))
                return .ok(request.id, .query(rows))
            } catch where error.is(.timeout) && (asked == 0 || asked > budget) {
                return nil  // the budget, not the request's deadline: on to the queue
            } catch {
                return .failure(request.id, error)
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

    private func run(_ state: inout State, _ request: Request, _ spec: QuerySpec,
                     _ interrupt: QueryInterrupt?, deadline given: UInt64? = nil) throws(SofaError) -> QueryRows {
        let connection = try self.connection(&state, request.database)
        let compiled = try compile(&state, connection, request, spec)
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
                         _ spec: QuerySpec) throws(SofaError) -> CompiledQuery {
        let version = try connection.schemaVersion()
        let key = CacheKey(database: request.database, collection: request.collection, text: spec.text, isN1QL: spec.isN1QL)
        if let cached = state.compiled[key], cached.version == version { return cached.query }
        var tree = try Self.tree(spec)
        // The request's collection is the default FROM.
        if case .array(let items) = tree, items.count == 2, items[0] == .string("SELECT") { tree = items[1] }
        if !request.collection.isEmpty, case .object(var select) = tree, !select.keys.contains(where: { $0.uppercased() == "FROM" }) {
            let collection = try CollectionName(parsing: request.collection)
            select["FROM"] = [["SCOPE": .string(collection.scope), "COLLECTION": .string(collection.name), "AS": .string(collection.name)]]
            tree = .object(select)
        }
        let compiled = try QueryCompiler.compile(tree, schema: try connection.schema())
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
