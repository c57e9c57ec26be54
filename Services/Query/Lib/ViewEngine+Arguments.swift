internal import SofaCore
import SofaQL

// A view query's options, read and checked as CouchDB reads them (`couch_mrview_util`'s rules,
// in its words); a refusal is `.invalidParameter`, which the HTTP API answers as 400
// `query_parse_error`.

extension ViewEngine {
    /// CouchDB's query options (JSON values, as in a view URL's query string or a POST body) for a
    /// view with a reduce function or without (`reduces`).
    static func options(_ given: JSONObject, reduces: Bool, rawCollation: Bool = false) throws(SofaError) -> ViewQueryOptions {
        func refuse(_ message: String) -> SofaError { SofaError(.invalidParameter, message) }
        func bool(_ name: String, _ value: Bool) throws(SofaError) -> Bool {
            guard let given = given[name] else { return value }
            guard let flag = given.boolValue else { throw refuse("Invalid value for `\(name)`.") }
            return flag
        }
        func count(_ name: String, _ message: String) throws(SofaError) -> Int? {
            guard let given = given[name] else { return nil }
            guard let number = given.intValue, number >= 0 else { throw refuse(message) }
            return Int(number)
        }
        func docID(_ names: [String]) throws(SofaError) -> String? {
            guard let given = names.lazy.compactMap({ given[$0] }).first else { return nil }
            guard let id = given.stringValue else { throw refuse("`\(names[0])` must be a string.") }
            return id
        }
        var options = ViewQueryOptions()
        options.rawCollation = rawCollation
        options.key = given["key"]
        if let keys = given["keys"] {
            guard let list = keys.arrayValue else { throw refuse("`keys` must be an array of strings.") }
            options.keys = list
        }
        options.startKey = given["startkey"] ?? given["start_key"]
        options.endKey = given["endkey"] ?? given["end_key"]
        options.startKeyDocID = try docID(["start_key_docid", "startkey_docid", "start_key_doc_id"])
        options.endKeyDocID = try docID(["end_key_docid", "endkey_docid", "end_key_doc_id"])
        options.inclusiveEnd = try bool("inclusive_end", true)
        options.descending = try bool("descending", false)
        options.limit = try count("limit", "`limit` must be a positive integer.")
        options.skip = try count("skip", "`skip` must be >= 0") ?? 0
        if let reduce = given["reduce"] {
            guard let flag = reduce.boolValue else { throw refuse("Invalid `reduce` value.") }
            if flag && !reduces { throw refuse("Reduce is invalid for map-only views.") }
            options.reduce = flag
        }
        options.group = try bool("group", false)
        options.groupLevel = try count("group_level", "`group_level` must be >= 0")
        let reduced = reduces && options.reduce
        if !reduced, options.group || (options.groupLevel ?? 0) != 0 { throw refuse("Invalid use of grouping on a map view.") }
        if let keys = options.keys {
            if reduced, !options.group { throw refuse("Multi-key fetchs for reduce views must use `group=true`") }
            if !keys.isEmpty, (options.startKey ?? options.key) != nil { throw refuse("`start_key` is incompatible with `keys`") }
            if !keys.isEmpty, options.endKey != nil { throw refuse("`end_key` is incompatible with `keys`") }
        }
        if reduced, try bool("include_docs", false) { throw refuse("`include_docs` is invalid for reduce") }
        if reduced, given["conflicts"] != nil { throw refuse("`conflicts` is invalid for reduce views.") }
        if let stale = given["stale"], !["ok", "update_after"].contains(stale.stringValue ?? stale.compactString) {
            throw refuse("Invalid value for `stale`.")
        }
        if let update = given["update"], !["true", "false", "lazy"].contains(update.stringValue ?? update.compactString) {
            throw refuse("Invalid value for `update`.")
        }
        try checkRange(options)
        return options
    }

    /// A range whose start comes after its end (before it, descending) matches nothing: CouchDB
    /// refuses it rather than answering no rows.
    static func checkRange(_ options: ViewQueryOptions) throws(SofaError) {
        // Equal keys never refuse, whatever the document IDs (CouchDB's rule).
        guard let start = options.startKey, let end = options.endKey, start != end else { return }
        var order = ViewCollation.compare(start, end, raw: options.rawCollation)
        if order == 0, let startID = options.startKeyDocID, let endID = options.endKeyDocID {
            // Keys that collate equal (1 and 1.0): the IDs decide, by their bytes, as the index orders them.
            order = startID.utf8.lexicographicallyPrecedes(endID.utf8) ? -1 : startID == endID ? 0 : 1
        }
        if !options.descending, order > 0 {
            throw SofaError(.invalidParameter, "No rows can match your key range, reverse your start_key and end_key or set descending=true")
        }
        if options.descending, order < 0 {
            throw SofaError(.invalidParameter, "No rows can match your key range, reverse your start_key and end_key or set descending=false")
        }
    }

    /// What `update` and `stale` ask: "true" (bring the index up to date first), "false" (answer
    /// from it as it is) or "lazy" (answer, then bring it up to date).
    static func updateMode(_ given: JSONObject) -> String {
        switch given["stale"]?.stringValue {
        case "ok"?: return "false"
        case "update_after"?: return "lazy"
        default: break
        }
        return given["update"]?.stringValue ?? (given["update"]?.boolValue == false ? "false" : "true")
    }
}
