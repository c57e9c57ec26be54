public import SofaCore

/// A query to run: N1QL text or a JSON query tree (as JSON text), its parameters, and whether to
/// explain instead of run.
public struct QuerySpec: Sendable, Equatable {
    public var text: String
    public var isN1QL: Bool
    public var parameters: JSONObject
    public var explain: Bool
    /// Paging: rows to skip, and at most `pageRows` rows (0 = every row, within the size limit).
    public var skip: UInt64
    public var pageRows: UInt32

    public init(text: String, isN1QL: Bool, parameters: JSONObject = [:], explain: Bool = false,
                skip: UInt64 = 0, pageRows: UInt32 = 0) {
        self.text = text
        self.isN1QL = isN1QL
        self.parameters = parameters
        self.explain = explain
        self.skip = skip
        self.pageRows = pageRows
    }
}

/// Rows of a query: each row an array of columns, nil where the column is MISSING.
public struct QueryRows: Sendable, Equatable {
    public var columns: [String]
    public var rows: [[JSON?]]
    /// With `QuerySpec.explain`: the SQL, then SQLite's plan.
    public var explain: String
    /// Paging: rows remain after these.
    public var more: Bool
    /// The collections the query reads, as "scope.collection": the changes that can affect it.
    public var collections: [String]

    public init(columns: [String], rows: [[JSON?]], explain: String = "", more: Bool = false, collections: [String] = []) {
        self.collections = collections
        self.columns = columns
        self.rows = rows
        self.explain = explain
        self.more = more
    }
}

/// An index definition as the wire carries it (storage validates and compiles it).
public struct IndexDefinition: Sendable, Equatable {
    /// 0 value, 1 full-text, 2 array (the numbers of the `indexes` table).
    public var kind: Int32
    public var name: String
    /// The collection as "scope.collection" (filled in on listings).
    public var collection: String
    /// `{"expressions": [...], "path": "a[].b", "language": "en", "ignoreDiacritics": false}`
    public var descriptor: JSON

    public init(kind: Int32, name: String, collection: String = "", descriptor: JSON) {
        self.kind = kind
        self.name = name
        self.collection = collection
        self.descriptor = descriptor
    }

    /// As one JSON object (how listings carry it).
    public var json: JSON {
        var object = descriptor.objectValue ?? JSONObject()
        object["name"] = .string(name)
        object["kind"] = .int(Int64(kind))
        object["collection"] = .string(collection)
        return .object(object)
    }

    public init(json: JSON) throws(SofaError) {
        guard var object = json.objectValue, let name = object["name"]?.stringValue, let kind = object["kind"]?.intValue else {
            throw SofaError(.malformedMessage, "malformed index listing")
        }
        let collection = object["collection"]?.stringValue ?? ""
        _ = object.removeValue(forKey: "name")
        _ = object.removeValue(forKey: "kind")
        _ = object.removeValue(forKey: "collection")
        self.init(kind: Int32(kind), name: name, collection: collection, descriptor: .object(object))
    }
}

/// A call of a design document's other functions (query workers); see `DesignCall` in sofa.proto.
public struct DesignCall: Sendable, Equatable {
    /// A `.filter` call's name that stands for a view's map function (`_view/<view>`, CouchDB's
    /// `_view` filter): a document passes when the map emits at least one row for it.
    public static let viewFilterPrefix = "_view/"

    public enum Kind: String, Sendable, CaseIterable {
        /// Every design document's `validate_doc_update` on new revisions: per document, null
        /// (accepted) or `{"forbidden"|"unauthorized": reason}`.
        case validate
        /// A design document's changes filter: per document, true or false.
        case filter
        /// Removes the indexes of views no design document defines any more.
        case cleanup
        /// A design document's views' index, as CouchDB's `_design/NAME/_info` shows it.
        case info
        /// Compacts the views' indexes.
        case compact
        /// Compiles the views' JavaScript (map, and reduce unless a built-in) of each design
        /// document in `documents`: null, or fails naming the function that does not compile
        /// (CouchDB checks a design document so before it is stored).
        case compile
    }

    public var kind: Kind
    /// The design document's name, without `_design/` ("" for `validate` and `cleanup`).
    public var design: String
    /// The filter's name (`filter`).
    public var name: String
    public var documents: [JSON]
    /// `validate`: `{"userCtx": …, "secObj": …}`; `filter`: the request object.
    public var context: JSON

    public init(_ kind: Kind, design: String = "", name: String = "", documents: [JSON] = [], context: JSON = .null) {
        self.kind = kind
        self.design = design
        self.name = name
        self.documents = documents
        self.context = context
    }
}
