internal import SofaFiles
public import SofaCore
public import SofaWire
import SofaQL
import SofaRows
import SofaServer
public import Foundation
public import Logging

/// What a query worker does with a view query: read the view's code from its design document,
/// bring the view's index (`<db>.sofa/views.sqlite3`, written by the workers, never by the storage
/// writer) up to date from the documents changed since its last sequence — each mapped by
/// `sofa-js`, a function that throws or runs out of time skipping that document, logged — and
/// answer the query in CouchDB's shape. On a queue of its own.
public final class ViewEngine: Sendable {
    let dataDirectory: URL
    let logger: Logger
    let state = Confined(State(), label: "sofa.query.views")
    /// How long a map function may take for one document.
    static let mapTimeout: Duration = .seconds(5)
    /// Documents read and mapped per index transaction.
    static let batch = 500

    struct State {
        /// By database: a read-only connection to its file, and a writable one to its views.
        var reads = ReadConnections()
        var views: [String: SQLiteConnection] = [:]
        var js = JavaScriptProcess()
        /// The map function `js` holds now.
        var loaded: String?
        /// Open view indexes by database and view, with their code's signature.
        var indexes: [String: (signature: String, index: ViewIndex)] = [:]
    }

    public init(dataDirectory: URL, logger: Logger) {
        self.dataDirectory = dataDirectory
        self.logger = logger
    }

    /// The same without a task: run on the engine's queue, which calls `reply`.
    public func handle(_ request: Request, design: String, view: String, options: JSON,
                       reply: @escaping @Sendable (Response) -> Void) {
        state.async { state in
            do throws(SofaError) {
                reply(.ok(request.id, .json(try self.run(&state, request.database, design: design, view: view,
                                                         options: options.objectValue ?? [:]))))
            } catch {
                reply(.failure(request.id, error))
            }
        }
    }

    public func handle(_ request: Request, design: String, view: String, options: JSON) async -> Response {
        do throws(SofaError) {
            let answer = try await state.run { (state) throws(SofaError) -> JSON in
                try self.run(&state, request.database, design: design, view: view, options: options.objectValue ?? [:])
            }
            return .ok(request.id, .json(answer))
        } catch {
            return .failure(request.id, error)
        }
    }

    func connections(_ state: inout State, _ database: String) throws(SofaError) -> (SQLiteConnection, SQLiteConnection) {
        let (main, opened) = try state.reads.connection(database, in: dataDirectory, queue: self.state.queue)
        if !opened, let views = state.views[database] { return (main, views) }
        state.indexes = state.indexes.filter { !$0.key.hasPrefix(database + "\u{0}") }
        // The views of databases whose file connection was closed to make room are closed too.
        if state.views.count >= state.reads.maxOpen {
            let reads = state.reads
            state.views = state.views.filter { reads.isOpen($0.key) }
            state.indexes = state.indexes.filter { reads.isOpen(String($0.key.prefix { $0 != "\u{0}" })) }
        }
        let viewsFile = StorageLayout.directory(of: database, in: dataDirectory).appendingPathComponent("views.sqlite3")
        let views = try SQLiteConnection(path: viewsFile.path, queue: self.state.queue, options: .scratch)
        // Derived data: a commit need not reach the disk before the next (the index and its last
        // sequence stay consistent; a lost tail is indexed again), and a bigger page cache keeps
        // a large view's key index in memory while it is built.
        try views.execute("PRAGMA journal_mode=WAL")
        try views.execute("PRAGMA synchronous=NORMAL")
        try views.execute("PRAGMA cache_size=-16384")
        state.views[database] = views
        return (main, views)
    }

    private func run(_ state: inout State, _ database: String, design: String, view: String,
                     options: JSONObject) throws(SofaError) -> JSON {
        let (main, views) = try connections(&state, database)
        // (A heap another database's functions have not run in, for the reduce functions too.)
        if try state.js.isolate(for: database) { state.loaded = nil }
        var designBody: [UInt8]?
        try main.run("SELECT body FROM kv_default WHERE key = ? AND (flags & 1) = 0", [.text("_design/" + design)]) {
            designBody = $0.blob(0)
        }
        let designDocument = designBody.flatMap { JSON.tryParse($0) }
        guard let code = designDocument?["views"]?[view], let map = code["map"]?.stringValue else {
            throw SofaError(.notFound, "no view '\(view)' in design document '_design/\(design)'")
        }
        let reduceSource = code["reduce"]?.stringValue
        let input = MapInput(design: designDocument)
        let raw = code["options"]?["collation"]?.stringValue == "raw"
        let signature = Self.signature(map: map, reduce: reduceSource) + input.signature + (raw ? "\u{0}raw" : "")
        let indexKey = database + "\u{0}" + design + "/" + view
        let index: ViewIndex
        if let open = state.indexes[indexKey], open.signature == signature {
            index = open.index
        } else {
            index = try ViewIndex(connection: views, name: "\(design)/\(view)", signature: signature, rawCollation: raw)
            state.indexes[indexKey] = (signature, index)
        }
        var query = try Self.options(options, reduces: reduceSource != nil, rawCollation: raw)
        let update = Self.updateMode(options)
        if update == "true" { try bringUpToDate(&state, index, main, map: map, input: input, database: database) }
        var reducer: ViewReducer?
        if let reduceSource, query.reduce {
            if let builtin = BuiltinReduce(named: reduceSource) {
                reducer = ViewReducer(builtin)
            } else {
                let js = state.js
                func run(_ command: JSON) throws(SofaError) -> JSON {
                    let answer = try js.call(command, timeout: Self.mapTimeout)
                    guard let value = answer.result.arrayValue?.last?.arrayValue?.first else {
                        // A reduce that throws reduces to null, as CouchDB's query server answers it.
                        if answer.result["error"] == .string("js_error") { return .null }
                        throw SofaError(.invalidQuery, "the reduce function failed: \(answer.result.compactString)")
                    }
                    return value
                }
                reducer = ViewReducer(reduce: { (keys, values) throws(SofaError) -> JSON in
                    let input = JSON.array(zip(keys, values).map { .array([$0, $1]) })
                    return try Self.shrinking(run(["reduce", [.string(reduceSource)], input]), from: input)
                }, rereduce: { (reductions) throws(SofaError) -> JSON in
                    let input = JSON.array(reductions)
                    return try Self.shrinking(run(["rereduce", [.string(reduceSource)], input]), from: input)
                })
            }
        } else {
            query.reduce = false
        }
        let counts = reduceSource.flatMap(BuiltinReduce.init(named:)) == .count
        let result: ViewResult
        do throws(SofaError) {
            result = try index.query(query, countsRows: counts, reduce: reducer)
        } catch where error.message.hasPrefix(Self.reduceOverflow) {
            // CouchDB answers a reduction that does not shrink as the row of its error.
            let reason = String(error.message.dropFirst(Self.reduceOverflow.count + 2))
            return ["rows": [["error": .string(Self.reduceOverflow), "reason": .string(reason)]]]
        }
        let answeredSequence = index.lastSequence
        if update == "lazy" {
            // After the answer: the next job on this queue, before any later query of the view.
            // The index and connections are this queue's: found again there, as they may have changed.
            self.state.async { state in
                do throws(SofaError) {
                    let (main, _) = try self.connections(&state, database)
                    guard let open = state.indexes[indexKey], open.signature == signature else { return }
                    try self.bringUpToDate(&state, open.index, main, map: map, input: input, database: database)
                } catch {
                    self.logger.warning("view not brought up to date after a stale read", metadata: ["view": "\(indexKey)", "error": "\(error)"])
                }
            }
        }
        var answer = JSONObject()
        switch result {
        case .rows(let total, let offset, let rows):
            let includeDocs = options["include_docs"]?.boolValue == true
            answer["total_rows"] = .int(Int64(total))
            answer["offset"] = .int(Int64(offset))
            var listed: [JSON] = []
            for row in rows {
                var item = JSONObject([("id", .string(row.id)), ("key", row.key), ("value", row.value)])
                // A value `{"_id": …}` links the row to that document instead, and a value's
                // `_rev` (with or without `_id`) names the revision shown (CouchDB's rule).
                if includeDocs {
                    item["doc"] = try Self.document(main, row.value["_id"]?.stringValue ?? row.id, rev: row.value["_rev"]?.stringValue,
                                                    conflicts: options["conflicts"]?.boolValue == true) ?? .null
                }
                listed.append(.object(item))
            }
            answer["rows"] = .array(listed)
        case .reduced(let groups):
            answer["rows"] = .array(groups.map { .object(JSONObject([("key", $0.key ?? .null), ("value", $0.value)])) })
        }
        if options["update_seq"]?.boolValue == true { answer["update_seq"] = .string("\(answeredSequence)") }
        return .object(answer)
    }

    /// CouchDB's error for a JavaScript reduction that does not shrink (its `reduce_limit`).
    static let reduceOverflow = "reduce_overflow_error"

    /// A JavaScript reduction, refused (`reduceOverflow`) as CouchDB refuses it when it does not
    /// shrink: over 4096 bytes of JSON and more than half the size of what it reduced.
    static func shrinking(_ reduction: JSON, from input: JSON) throws(SofaError) -> JSON {
        let output = reduction.compactBytes().count
        guard output > 4096 else { return reduction }
        let given = input.compactBytes().count
        guard output * 2 > given else { return reduction }
        throw SofaError(.invalidQuery, "\(reduceOverflow): Reduce output must shrink more rapidly: input size: \(given) output size: \(output)")
    }

    /// A view's code, summed up: an index built from other code is rebuilt.
    /// (With the index's format: an index of an earlier format is rebuilt.)
    static func signature(map: String, reduce: String?) -> String {
        (try? sha256(Array(("4\u{0}" + map + "\u{0}" + (reduce ?? "")).utf8)).hexString) ?? map
    }

    /// A document as CouchDB shows it (for `include_docs`), with its `_conflicts` when asked;
    /// nil when it is gone. With `rev`, that revision of it (nil when its body is not kept).
    static func document(_ main: SQLiteConnection, _ id: String, rev: String? = nil, conflicts: Bool = false) throws(SofaError) -> JSON? {
        var found: JSON?
        try main.run("SELECT core_revid(version), body, flags, CASE WHEN flags & 2 THEN extra END FROM kv_default "
                     + "WHERE key = ? AND (flags & 1) = 0", [.text(id)]) { row in
            var body = row.blob(1), shownRev = row.text(0)
            if let rev, rev != shownRev {
                guard let old = (try? DocumentRow.load(main, table: "kv_default", id: id, statement: "revision of kv_default"))??
                    .body(ofLiveRevision: rev, id: id) else { return }
                body = old
                shownRev = rev
            }
            guard var object = JSON.tryParse(body)?.objectValue else { return }
            var shown = JSONObject([("_id", .string(id)), ("_rev", .string(shownRev))])
            if conflicts, row.integer(2) & Int64(DocumentFlags.conflicted.rawValue) != 0 {
                let others = Self.conflicts(extra: row.blob(3), body: row.blob(1))
                if !others.isEmpty { shown["_conflicts"] = .array(others.map { .string($0) }) }
            }
            for (key, value) in object { shown[key] = value }
            object = shown
            found = .object(object)
        }
        return found
    }
}
