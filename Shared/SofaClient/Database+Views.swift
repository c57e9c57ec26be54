public import SofaCore
internal import SofaWire

/// Views: a design document's map (and reduce) functions, indexed by the query workers.
extension Database {
    /// The view `"ddoc/view"` (its design document `_design/ddoc`), queried with CouchDB's options
    /// (`key`, `keys`, `startkey`, `endkey`, `startkey_docid`, `endkey_docid`, `inclusive_end`,
    /// `descending`, `limit`, `skip`, `reduce`, `group`, `group_level`, `include_docs`,
    /// `update_seq`, and `update`: true (default: bring the index up to date first), false or
    /// lazy). The answer is CouchDB's: `{"total_rows", "offset", "rows": [{"id", "key", "value"}]}`,
    /// or `{"rows": [{"key", "value"}]}` reduced.
    public func view(_ name: String, options: JSONObject = [:]) async throws(SofaError) -> JSON {
        let parts = name.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw SofaError(.invalidParameter, "a view is named \"design/view\", not '\(name)'")
        }
        let design = parts[0].hasPrefix("_design/") ? String(parts[0].dropFirst(8)) : parts[0]
        guard case .json(let answer) = try await client.call(.viewQuery(design: design, view: parts[1], options: .object(options)),
                                                             database: self.name) else {
            throw unexpected("viewQuery")
        }
        return answer
    }

    /// Writes a design document (`_design/NAME`) from its JSON (`views`, `language`, …); only
    /// database admins may.
    @discardableResult
    public func putDesignDocument(_ name: String, _ design: JSON, rev: String? = nil) async throws(SofaError) -> DocumentRevision {
        let id = name.hasPrefix("_design/") ? name : "_design/" + name
        return try await put(id: id, body: design.compactBytes(), rev: rev)
    }
}
