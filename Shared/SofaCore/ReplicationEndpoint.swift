/// One side of a replication: a database of the replicator's own cluster (`"db"`) or of another
/// cluster, named by its gateway (`"tcp://host:port/db"`).
///
/// ```
/// "orders"                      → local gateway, database "orders"
/// "tcp://10.0.0.2:7420/orders"  → gateway tcp://10.0.0.2:7420, database "orders"
/// ```
public struct ReplicationEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// The gateway's endpoint; nil = this cluster's gateway.
    public var gateway: String?
    public var database: String

    public init(gateway: String?, database: String) {
        self.gateway = gateway
        self.database = database
    }

    public static func parse(_ text: String) throws(SofaError) -> ReplicationEndpoint {
        guard let endpoint = tryParse(text) else {
            throw SofaError(.invalidParameter,
                            "invalid replication endpoint '\(redacted(text))': expected a database name or tcp://host:port/database")
        }
        return endpoint
    }

    /// A URL without the credentials in it (`scheme://user:password@host…` → `scheme://host…`),
    /// for errors and logs.
    public static func redacted(_ text: String) -> String {
        let parts = text.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        // "scheme:", "", "authority", "rest"
        guard parts.count >= 3, parts[0].hasSuffix(":"), parts[1].isEmpty, let at = parts[2].lastIndex(of: "@") else { return text }
        var kept = parts
        kept[2] = parts[2][parts[2].index(after: at)...]
        return kept.joined(separator: "/")
    }

    public static func tryParse(_ text: String) -> ReplicationEndpoint? {
        guard !text.isEmpty else { return nil }
        guard text.contains("://") else {
            return validName(text) ? ReplicationEndpoint(gateway: nil, database: text) : nil
        }
        guard text.hasPrefix("tcp://") else { return nil }
        let rest = text.dropFirst("tcp://".count)
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        let hostPort = rest[..<slash]
        let database = String(rest[rest.index(after: slash)...])
        guard let colon = hostPort.lastIndex(of: ":"), colon != hostPort.startIndex,
              let port = UInt16(hostPort[hostPort.index(after: colon)...]), port > 0,
              validName(database) else { return nil }
        return ReplicationEndpoint(gateway: "tcp://\(hostPort)", database: database)
    }

    private static func validName(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix("/") && !name.contains(":") && name.utf8.count <= 240
    }

    public var description: String { gateway.map { "\($0)/\(database)" } ?? database }
}
