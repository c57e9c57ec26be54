public import SofaCore
public import SofaWire
internal import SofaBus

/// A query's result: column titles and rows, each row's columns in order, nil where MISSING.
public struct QueryResult: Sendable, Equatable {
    public var columns: [String]
    public var rows: [[JSON?]]

    public init(columns: [String], rows: [[JSON?]]) {
        self.columns = columns
        self.rows = rows
    }

    /// Each row as a dictionary by column title (MISSING columns left out).
    public var dictionaries: [JSONObject] {
        rows.map { row in
            JSONObject(zip(columns, row).compactMap { title, value in value.map { (title, $0) } })
        }
    }
}

/// The kind of an index, with what it needs.
public enum IndexKind: Sendable, Equatable {
    /// A value index on the expressions.
    case value
    /// A full-text index on the expressions' strings; `language` "en" (default) stems words and
    /// leaves English's stop words out. `disableStemming` indexes words as written; `stopWords`
    /// (separated by spaces or commas) replaces the language's list, "" for none — LiteCore's
    /// index options.
    case fullText(language: String? = nil, ignoreDiacritics: Bool = false, disableStemming: Bool = false,
                  stopWords: String? = nil)
    /// An array index on a path (`likes`, or nested `a[].b`), for UNNEST and ANY…SATISFIES.
    case array(path: String)
}

/// Queries (run by the cluster's query workers) and index management (done by storage).
extension DocumentStore {
    /// Runs a N1QL (SQL++ for Mobile) query. Without FROM, it reads this store's collection.
    public func query(n1ql: String, parameters: JSONObject = [:]) async throws(SofaError) -> QueryResult {
        try await run(QuerySpec(text: n1ql, isN1QL: true, parameters: parameters))
    }

    /// Runs a query in LiteCore's JSON query schema.
    public func query(json: JSON, parameters: JSONObject = [:]) async throws(SofaError) -> QueryResult {
        try await run(QuerySpec(text: json.typedCompactString, isN1QL: false, parameters: parameters))
    }

    /// A query's rows in pages of at most `pageRows` (and about 4 MiB), fetched one page at a
    /// time as the sequence is iterated, so a large result never sits in memory whole — on the
    /// worker or here. Each page re-runs the query from the previous page's end: a write between
    /// pages can shift rows (as with LIMIT/OFFSET paging); ORDER BY keeps pages disjoint.
    public func queryPages(n1ql: String, parameters: JSONObject = [:], pageRows: Int = 1000) -> QueryPages {
        QueryPages(store: AnyStore(self), spec: QuerySpec(text: n1ql, isN1QL: true, parameters: parameters,
                                                          pageRows: UInt32(clamping: max(1, pageRows))))
    }

    public func queryPages(json: JSON, parameters: JSONObject = [:], pageRows: Int = 1000) -> QueryPages {
        QueryPages(store: AnyStore(self), spec: QuerySpec(text: json.typedCompactString, isN1QL: false, parameters: parameters,
                                                          pageRows: UInt32(clamping: max(1, pageRows))))
    }

    /// The SQL a query compiles to, then SQLite's plan for it.
    public func explain(n1ql: String) async throws(SofaError) -> String {
        guard case .query(let rows) = try await call(.query(QuerySpec(text: n1ql, isN1QL: true, explain: true))) else {
            throw unexpected("explain")
        }
        return rows.explain
    }

    public func explain(json: JSON) async throws(SofaError) -> String {
        guard case .query(let rows) = try await call(.query(QuerySpec(text: json.typedCompactString, isN1QL: false, explain: true))) else {
            throw unexpected("explain")
        }
        return rows.explain
    }

    func run(_ spec: QuerySpec) async throws(SofaError) -> QueryResult {
        guard case .query(let rows) = try await call(.query(spec)) else { throw unexpected("query") }
        return QueryResult(columns: rows.columns, rows: rows.rows)
    }

    /// Creates an index on this store's collection. `expressions` are JSON query expressions
    /// (`[".name.last"]`); an array index takes its path from `kind` instead.
    public func createIndex(_ name: String, kind: IndexKind, expressions: [JSON] = []) async throws(SofaError) {
        var descriptor: JSONObject = ["expressions": .array(expressions)]
        let code: Int32
        switch kind {
        case .value: code = 0
        case .fullText(let language, let ignoreDiacritics, let disableStemming, let stopWords):
            code = 1
            if let language { descriptor["language"] = .string(language) }
            if ignoreDiacritics { descriptor["ignoreDiacritics"] = true }
            if disableStemming { descriptor["disableStemming"] = true }
            if let stopWords { descriptor["stopWords"] = .string(stopWords) }
        case .array(let path):
            code = 2
            descriptor["path"] = .string(path)
        }
        _ = try await call(.createIndex(IndexDefinition(kind: code, name: name, descriptor: .object(descriptor))))
    }

    public func deleteIndex(_ name: String) async throws(SofaError) {
        _ = try await call(.deleteIndex(name: name))
    }

    /// The indexes of this store's collection.
    public func indexes() async throws(SofaError) -> [IndexDefinition] {
        guard case .indexes(let list) = try await call(.listIndexes) else { throw unexpected("indexes") }
        return list
    }

    /// A live query: its result now, then again each time committed changes to this store's
    /// collection change it (changes arriving together are coalesced into one re-run; a result
    /// equal to the last one is not repeated).
    public func liveQuery(n1ql: String, parameters: JSONObject = [:], pollMs: UInt32 = 15_000) -> LiveQuery {
        LiveQuery(store: AnyStore(self), spec: QuerySpec(text: n1ql, isN1QL: true, parameters: parameters), pollMs: pollMs)
    }

    public func liveQuery(json: JSON, parameters: JSONObject = [:], pollMs: UInt32 = 15_000) -> LiveQuery {
        LiveQuery(store: AnyStore(self), spec: QuerySpec(text: json.typedCompactString, isN1QL: false, parameters: parameters), pollMs: pollMs)
    }
}

/// A type-erased store, so `LiveQuery` works for databases and collections alike.
struct AnyStore: Sendable {
    let client: SofaClient
    let database: String
    let collection: String

    init(_ store: some DocumentStore) {
        client = store.client
        database = store.databaseName
        collection = store.collectionPath
    }

    func call(_ operation: Op) async throws(SofaError) -> Reply {
        try await client.call(operation, database: database, collection: collection)
    }
}

/// Pages of a query's result (see `DocumentStore.queryPages`).
public struct QueryPages: AsyncSequence, Sendable {
    public typealias Element = QueryResult
    let store: AnyStore
    let spec: QuerySpec

    public func makeAsyncIterator() -> Iterator { Iterator(spec: spec, store: store) }

    public struct Iterator: AsyncIteratorProtocol, Sendable {
        var spec: QuerySpec
        let store: AnyStore
        var done = false

        public mutating func next() async throws -> QueryResult? {
            guard !done else { return nil }
            guard case .query(let rows) = try await store.call(.query(spec)) else {
                throw SofaError(.unexpectedError, "unexpected reply to a query")
            }
            spec.skip += UInt64(rows.rows.count)
            done = !rows.more || rows.rows.isEmpty
            if rows.rows.isEmpty && spec.skip > 0 { return nil }
            return QueryResult(columns: rows.columns, rows: rows.rows)
        }
    }
}

/// The results of a live query, as an `AsyncSequence` (see `DocumentStore.liveQuery`).
public struct LiveQuery: AsyncSequence, Sendable {
    public typealias Element = QueryResult
    let store: AnyStore
    let spec: QuerySpec
    let pollMs: UInt32

    public func makeAsyncIterator() -> Iterator { Iterator(source: self) }

    public struct Iterator: AsyncIteratorProtocol {
        let source: LiveQuery
        /// Per collection the query reads ("" = the default one): the last sequence seen.
        var since: [String: UInt64]? = nil
        var last: QueryResult? = nil

        public mutating func next() async throws -> QueryResult? {
            while !Task.isCancelled {
                if let current = since {
                    // Wait for the next committed change in any collection the query reads.
                    guard let (collection, newest) = try await Self.firstChange(source, current) else { continue }
                    since?[collection] = newest
                } else {
                    // Which collections the query reads (compiled, not run), and where their feeds
                    // stand now; the first result is computed after that.
                    var plan = source.spec
                    plan.explain = true
                    guard case .query(let compiled) = try await source.store.call(.query(plan)) else {
                        throw SofaError(.unexpectedError, "unexpected reply to a query")
                    }
                    var start: [String: UInt64] = [:]
                    for collection in Self.collections(compiled, source) {
                        let reply = try await source.store.client.call(
                            .changes(ChangesQuery(since: 0, descending: true, limit: 1, includeDeleted: true)),
                            database: source.store.database, collection: collection)
                        guard case .changes(let batch) = reply else { throw SofaError(.unexpectedError, "unexpected reply to changes") }
                        start[collection] = batch.changes.first?.sequence ?? 0
                    }
                    since = start
                }
                guard case .query(let rows) = try await source.store.call(.query(source.spec)) else {
                    throw SofaError(.unexpectedError, "unexpected reply to a query")
                }
                let result = QueryResult(columns: rows.columns, rows: rows.rows)
                if result != last {
                    last = result
                    return result
                }
            }
            return nil
        }

        /// The collections a compiled query reads, as request paths ("" = the default one); the
        /// store's own when the reply names none.
        static func collections(_ rows: QueryRows, _ source: LiveQuery) -> [String] {
            let named = Set(rows.collections.map { $0 == "_default._default" ? "" : $0 })
            return named.isEmpty ? [source.store.collection] : named.sorted()
        }

        /// Long-polls every collection at once until one has a committed change: which one, and
        /// its newest sequence. The other polls are cancelled.
        static func firstChange(_ source: LiveQuery, _ since: [String: UInt64]) async throws -> (String, UInt64)? {
            try await withThrowingTaskGroup(of: (String, UInt64?).self) { group in
                for (collection, sequence) in since {
                    group.addTask { (collection, try await poll(source, collection, since: sequence)) }
                }
                while let (collection, newest) = try await group.next() {
                    if let newest {
                        group.cancelAll()
                        return (collection, newest)
                    }
                    // Nothing within the poll (or the cluster restarting): poll that one again.
                    let sequence = since[collection] ?? 0
                    group.addTask { (collection, try await poll(source, collection, since: sequence)) }
                }
                return nil
            }
        }

        /// One long poll of a collection's changes: the newest sequence after `since`, or nil.
        static func poll(_ source: LiveQuery, _ collection: String, since: UInt64) async throws -> UInt64? {
            let query = ChangesQuery(since: since, limit: 10_000, includeDeleted: true, waitMs: source.pollMs)
            let request = Request(database: source.store.database, collection: collection, operation: .changes(query))
            let response = await source.store.client.send(request, timeout: .milliseconds(Int(source.pollMs) + 10_000))
            switch response.outcome {
            case .success(.changes(let batch)):
                return batch.changes.map(\.sequence).max()
            case .success:
                throw SofaError(.unexpectedError, "the gateway answered a changes poll with something else")
            case .failure(let error) where error.is(.unavailable) || error.is(.timeout) || error.is(.shuttingDown):
                // The cluster is restarting: poll again shortly (the sequence keeps our place).
                try await Task.sleep(for: .milliseconds(200))
                return nil
            case .failure(let error):
                throw error
            }
        }
    }
}
