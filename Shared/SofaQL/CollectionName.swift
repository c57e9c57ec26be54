public import SofaCore

/// A collection in a scope, and where it lives on disk.
///
/// Key stores and tables follow LiteCore 3.x: `_default._default` is key store `default`; a
/// collection of scope `_default` is `.name`, any other `.scope.name`. The table is `kv_` plus the
/// key store name with a backslash before each upper-case letter (LiteCore's
/// `SQLiteKeyStore::transformCollectionName`), because SQLite table names are case-insensitive:
/// `Users` → key store `.Users`, table `kv_.\Users`; `Shop.Items` → `kv_.\Shop.\Items`.
public struct CollectionName: Sendable, Hashable, CustomStringConvertible {
    public let scope: String
    public let name: String
    /// The key store: `default`, `.name` or `.scope.name` (worked out once: it is on every write's path).
    public let keyStore: String
    /// The table, quoted for SQL.
    public let table: String

    public static let defaultName = "_default"
    public static let `default` = CollectionName(uncheckedScope: defaultName, name: defaultName)
    public static let maxNameLength = 251

    public init(uncheckedScope scope: String, name: String) {
        self.scope = scope
        self.name = name
        if scope == Self.defaultName && name == Self.defaultName {
            keyStore = "default"
        } else {
            keyStore = scope == Self.defaultName ? ".\(name)" : ".\(scope).\(name)"
        }
        table = Self.table(forKeyStore: keyStore)
    }

    /// Validates both names: 1…251 characters of `[A-Za-z0-9_%-]`, not starting with `_` or `%`,
    /// except `_default` (and the collection `_default` only in scope `_default`).
    public init(scope: String, name: String) throws(SofaError) {
        try Self.validate(scope, kind: "scope")
        try Self.validate(name, kind: "collection")
        if name == Self.defaultName && scope != Self.defaultName {
            throw .invalid("collection '_default' exists only in scope '_default', not in '\(scope)'")
        }
        self.init(uncheckedScope: scope, name: name)
    }

    /// "scope.collection", "collection" (in scope `_default`), or "" for `_default._default`.
    public init(parsing path: String) throws(SofaError) {
        if path.isEmpty {
            self = .default
            return
        }
        let parts = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        switch parts.count {
        case 1: try self.init(scope: Self.defaultName, name: parts[0])
        case 2: try self.init(scope: parts[0], name: parts[1])
        default: throw .invalid("invalid collection '\(path)': use 'collection' or 'scope.collection'")
        }
    }

    public static let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_%-".utf8)

    public static func validate(_ name: String, kind: String) throws(SofaError) {
        if name == defaultName { return }
        guard !name.isEmpty else { throw .invalid("\(kind) name is empty") }
        guard name.utf8.count <= maxNameLength else {
            throw .invalid("\(kind) name is \(name.utf8.count) characters; the limit is \(maxNameLength)")
        }
        guard name.utf8.allSatisfy({ allowed.contains($0) }) else {
            throw .invalid("invalid \(kind) name '\(name)': use only A-Z, a-z, 0-9, _, % and -")
        }
        guard let first = name.utf8.first, first != UInt8(ascii: "_"), first != UInt8(ascii: "%") else {
            throw .invalid("invalid \(kind) name '\(name)': it must not start with _ or %")
        }
    }

    public var isDefault: Bool { scope == Self.defaultName && name == Self.defaultName }

    /// "scope.collection", as the wire and the live-changes hook name it.
    public var description: String { "\(scope).\(name)" }


    /// The collection a key store holds (nil for a key store that is not a collection).
    public init?(keyStore: String) {
        if keyStore == "default" {
            self = .default
            return
        }
        guard keyStore.hasPrefix(".") else { return nil }
        let parts = keyStore.dropFirst().split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        switch parts.count {
        case 1: self.init(uncheckedScope: Self.defaultName, name: parts[0])
        case 2: self.init(uncheckedScope: parts[0], name: parts[1])
        default: return nil
        }
    }

    /// The unquoted table name, as `sqlite_master` lists it.
    public var tableName: String { Self.tableName(forKeyStore: keyStore) }

    public static func tableName(forKeyStore store: String) -> String {
        var result = "kv_"
        for character in store {
            if character.isASCII && character.isUppercase { result.append("\\") }
            result.append(character)
        }
        return result
    }

    /// Key store names are restricted to characters that need no escaping inside double quotes.
    public static func table(forKeyStore store: String) -> String { "\"\(tableName(forKeyStore: store))\"" }
}
