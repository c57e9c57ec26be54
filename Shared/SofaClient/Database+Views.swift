public import SofaCore
internal import SofaWire

/// Views: a design document's map (and reduce) functions, indexed by the query workers.
extension Database {
    /// The view `"ddoc/view"` (its design document `_design/ddoc`), queried with CouchDB's options
    /// (`key`, `keys`, `startkey`, `endkey`, `startkey_docid`, `endkey_docid`, `inclusive_end`,
    /// `descending`, `limit`, `skip`, `reduce`, `group`, `group_level`, `include_docs`,
    /// `conflicts`, `attachments`, `update_seq`, `stale`: ok or update_after, and `update`: true
    /// (default: bring the index up to date first), false or lazy). The answer is CouchDB's:
    /// `{"total_rows", "offset", "rows": [{"id", "key", "value"}]}`, or `{"rows": [{"key", "value"}]}`
    /// reduced. Options CouchDB refuses (grouping a map-only view, a reversed range, `keys` beside
    /// a range or on a reduce without `group`, …) are `.invalidParameter`, in CouchDB's words.
    public func view(_ name: String, options: JSONObject = [:]) async throws(SofaError) -> JSON {
        let (design, view) = try Self.designAndName(name, of: "view")
        guard case .json(let answer) = try await client.call(.viewQuery(design: design, view: view, options: .object(options)),
                                                             database: self.name) else {
            throw unexpected("viewQuery")
        }
        return answer
    }

    /// Runs design document `"ddoc/name"`'s changes filter (`filters.name` of `_design/ddoc`) on
    /// documents (as CouchDB shows them, with `_id`, `_rev`, `_deleted`), with CouchDB's request
    /// object (`query`, `userCtx`, …): whether each one passes.
    public func filter(_ name: String, documents: [JSON], request: JSON = [:]) async throws(SofaError) -> [Bool] {
        let (design, filter) = try Self.designAndName(name, of: "filter")
        guard case .json(let answer) = try await client.call(.designCall(DesignCall(.filter, design: design, name: filter,
                                                                                    documents: documents, context: request)),
                                                             database: self.name),
              let passed = answer.arrayValue, passed.count == documents.count else {
            throw unexpected("designCall")
        }
        return passed.map { $0.boolValue == true }
    }

    /// Removes the indexes of views that no design document defines any more (CouchDB's
    /// `_view_cleanup`); database admins only.
    public func cleanupViews() async throws(SofaError) {
        _ = try await client.call(.designCall(DesignCall(.cleanup)), database: name)
    }

    /// Compacts the views' indexes (CouchDB's `_compact/ddoc`); database admins only.
    public func compactViews(design: String) async throws(SofaError) {
        _ = try await client.call(.designCall(DesignCall(.compact, design: Self.bareDesign(design))), database: name)
    }

    /// A design document's views' index, as CouchDB's `_design/NAME/_info` shows it.
    public func designInfo(_ design: String) async throws(SofaError) -> JSON {
        guard case .json(let answer) = try await client.call(.designCall(DesignCall(.info, design: Self.bareDesign(design))),
                                                             database: name) else {
            throw unexpected("designCall")
        }
        return answer
    }

    static func bareDesign(_ name: String) -> String { name.hasPrefix("_design/") ? String(name.dropFirst(8)) : name }

    /// "ddoc/name" (or "_design/ddoc/name") as its design document's name and the function's.
    static func designAndName(_ name: String, of what: String) throws(SofaError) -> (String, String) {
        let parts = bareDesign(name).split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw SofaError(.invalidParameter, "a \(what) is named \"design/\(what)\", not '\(name)'")
        }
        return (parts[0], parts[1])
    }

    /// Writes a design document (`_design/NAME`) from its JSON (`views`, `language`, …); only
    /// database admins may.
    @discardableResult
    public func putDesignDocument(_ name: String, _ design: JSON, rev: String? = nil) async throws(SofaError) -> DocumentRevision {
        let id = name.hasPrefix("_design/") ? name : "_design/" + name
        return try await put(id: id, body: design.compactBytes(), rev: rev)
    }
}
