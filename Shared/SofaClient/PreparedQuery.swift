public import SofaCore
internal import SofaWire

/// A query prepared once and run many times with different parameters, as an application runs
/// its point lookups: `let byName = try await db.prepare(n1ql: "SELECT * FROM _ WHERE name = $name")`,
/// then `try await byName.run(["name": "Ann"])`. Preparing compiles it on a query worker, so a
/// query that does not compile fails there, once; workers keep each compiled query (by its text,
/// per database, until the database's schema changes), so a run sends only the text and the
/// parameters and compiles nothing again. Pages and live results take parameters the same way.
public struct PreparedQuery: Sendable {
    let store: AnyStore
    let spec: QuerySpec
    /// The SQL the query compiled to, and SQLite's plan for it, when it was prepared.
    public let explanation: String

    /// Runs the query with `parameters` (`$name` in N1QL, `["$name"]` in JSON).
    public func run(_ parameters: JSONObject = [:]) async throws(SofaError) -> QueryResult {
        guard case .query(let rows) = try await store.call(.query(with(parameters))) else {
            throw SofaError(.unexpectedError, "unexpected reply to a query")
        }
        return QueryResult(columns: rows.columns, rows: rows.rows)
    }

    /// Its rows with `parameters` in pages of at most `pageRows` (see `DocumentStore.queryPages`).
    public func pages(_ parameters: JSONObject = [:], pageRows: Int = 1000) -> QueryPages {
        var spec = with(parameters)
        spec.pageRows = UInt32(clamping: max(1, pageRows))
        return QueryPages(store: store, spec: spec)
    }

    /// Its result with `parameters` now and after each change that alters it (see
    /// `DocumentStore.liveQuery`).
    public func live(_ parameters: JSONObject = [:], pollMs: UInt32 = 15_000) -> LiveQuery {
        LiveQuery(store: store, spec: with(parameters), pollMs: pollMs)
    }

    private func with(_ parameters: JSONObject) -> QuerySpec {
        var spec = spec
        spec.parameters = parameters
        return spec
    }
}

extension DocumentStore {
    /// Prepares a N1QL query (see `PreparedQuery`); a query that does not compile throws here.
    public func prepare(n1ql: String) async throws(SofaError) -> PreparedQuery {
        try await prepare(QuerySpec(text: n1ql, isN1QL: true))
    }

    /// Prepares a query in LiteCore's JSON query schema.
    public func prepare(json: JSON) async throws(SofaError) -> PreparedQuery {
        try await prepare(QuerySpec(text: json.typedCompactString, isN1QL: false))
    }

    private func prepare(_ spec: QuerySpec) async throws(SofaError) -> PreparedQuery {
        var plan = spec
        plan.explain = true
        let store = AnyStore(self)
        guard case .query(let compiled) = try await store.call(.query(plan)) else {
            throw SofaError(.unexpectedError, "unexpected reply to a query")
        }
        return PreparedQuery(store: store, spec: spec, explanation: compiled.explain)
    }
}
