/// How a replication reaches another cluster as a user of it: the cluster's public key (to pin)
/// and the user's name and password there. Printed, the password is hidden.
public struct RemoteAccess: Sendable, Hashable, CustomStringConvertible {
    public var serverKey: String
    public var user: String
    public var password: String

    public init(serverKey: String, user: String, password: String) {
        self.serverKey = serverKey
        self.user = user
        self.password = password
    }

    public var description: String { "\(user)@\(serverKey.prefix(8))… (password hidden)" }
}

/// The documents of `_replicator`, in CouchDB's shape: `source` and `target` are a database name,
/// a `tcp://host:port/db` of another cluster, or an object naming one with how to reach it —
/// `{"url": "tcp://…/db", "server_key": "<Z85>", "auth": {"basic": {"username": …, "password": …}}}`;
/// `owner` is the user it runs as (the gateway sets it for a user's own documents). Stored
/// credentials are read by the replicator alone: every other reader gets the document without them.
public enum ReplicationDocument {
    public static let database = "_replicator"
    /// The members of a side that hold credentials.
    static let secretMembers = ["auth", "headers"]

    /// One side: its endpoint text and, when given, the access it carries; nil when malformed.
    public static func side(_ value: JSON?) -> (endpoint: String, access: RemoteAccess?)? {
        if let text = value?.stringValue { return (text, nil) }
        guard let object = value?.objectValue, let url = object["url"]?.stringValue else { return nil }
        guard let auth = object["auth"]?.objectValue else { return (url, nil) }
        // CouchDB's `{"url": "http://…", "auth": {"basic": …}}`: a URL that may name this
        // cluster's own HTTP API (its credentials are not another cluster's).
        if object["server_key"] == nil, httpDatabaseURL(url) != nil { return (url, nil) }
        let basic = auth["basic"]?.objectValue ?? auth
        guard let user = (basic["username"] ?? basic["name"])?.stringValue, let password = basic["password"]?.stringValue,
              let key = object["server_key"]?.stringValue else { return nil }
        return (url, RemoteAccess(serverKey: key, user: user, password: password))
    }

    /// The database an `http(s)://` URL names when it names this cluster's own HTTP API (CouchDB
    /// 3 writes every side as a URL, its own databases too): `httpAddress` is where sofa-http
    /// listens (`host:port`), and the URL names that port on that host or a loopback name. Nil for
    /// any other URL.
    public static func localDatabase(inURL url: String, httpAddress: String) -> String? {
        guard let named = httpDatabaseURL(url) else { return nil }
        let listening = hostAndPort(httpAddress, secure: false)
        guard named.port == listening.port, named.host == listening.host || isLoopback(named.host) else { return nil }
        return named.database
    }

    /// An `http(s)://[user:password@]host[:port]/db` URL taken apart: its host (lower case), its
    /// port (the scheme's when none is written) and its database (the one path segment, decoded).
    /// Nil for another URL, or a path that is not one segment.
    public static func httpDatabaseURL(_ url: String) -> (host: String, port: String, database: String)? {
        let lower = url.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else { return nil }
        var rest = url.drop { $0 != "/" }.dropFirst(2)
        while rest.hasSuffix("/") { rest.removeLast() }
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        let authority = rest[..<slash].split(separator: "@").last.map(String.init) ?? ""
        let path = rest[rest.index(after: slash)...]
        guard !path.isEmpty, !path.contains("/"), let name = percentDecoded(path) else { return nil }
        let (host, port) = hostAndPort(authority, secure: lower.hasPrefix("https"))
        return (host, port, name)
    }

    /// `host:port` (`[v6]:port`) taken apart, the host in lower case; the scheme's port when none
    /// is written.
    public static func hostAndPort(_ text: String, secure: Bool) -> (host: String, port: String) {
        let host: Substring, rest: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            rest = text[text.index(after: close)...]
        } else {
            host = text.prefix { $0 != ":" }
            rest = text.dropFirst(host.count)
        }
        let port = rest.hasPrefix(":") ? String(rest.dropFirst()) : (secure ? "443" : "80")
        return (host.lowercased(), port)
    }

    public static func isLoopback(_ host: String) -> Bool { ["localhost", "127.0.0.1", "::1"].contains(host) }

    /// `%XX` escapes decoded (nil when one is malformed or the bytes are not UTF-8).
    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var utf8 = text.utf8.makeIterator()
        while let byte = utf8.next() {
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
            guard let high = utf8.next().flatMap({ UInt8(String(UnicodeScalar($0)), radix: 16) }),
                  let low = utf8.next().flatMap({ UInt8(String(UnicodeScalar($0)), radix: 16) }) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// CouchDB's `_replication_*` members: how a replication ended, which the replicator writes
    /// into its document (and a client may write back with the rest).
    public static let stateMembers: Set<String> = ["_replication_state", "_replication_state_time", "_replication_state_reason",
                                                   "_replication_stats", "_replication_id"]

    /// A replication chooses its documents one way at most (`doc_ids`, `selector` or `filter`):
    /// CouchDB's rule, in its words. An empty one is none (the replicator's own records write
    /// `doc_ids: []` beside a filter).
    public static func checkOneWay(_ body: JSONObject) throws(SofaError) {
        let given = ["doc_ids", "selector", "filter"].filter { name in body[name].map { $0 != .null && $0 != "" && $0 != [] } ?? false }
        if given.count > 1 { throw SofaError(.invalidParameter, "`selector`, `filter` and `doc_ids` fields are mutually exclusive") }
    }

    /// The body without the credentials of its sides (for anyone but the replicator).
    public static func withoutCredentials(_ body: [UInt8]) -> [UInt8] {
        guard var object = JSON.tryParse(body)?.objectValue else { return body }
        var changed = false
        for member in ["source", "target"] {
            // A URL's own credentials (`http://user:password@…`) go too.
            if let url = object[member]?.stringValue {
                let shown = ReplicationEndpoint.redacted(url)
                if shown != url { (object[member], changed) = (.string(shown), true) }
                continue
            }
            guard var side = object[member]?.objectValue else { continue }
            for secret in secretMembers where side.removeValue(forKey: secret) != nil { changed = true }
            if let url = side["url"]?.stringValue, ReplicationEndpoint.redacted(url) != url {
                side["url"] = .string(ReplicationEndpoint.redacted(url))
                changed = true
            }
            object[member] = .object(side)
        }
        return changed ? JSON.object(object).compactBytes() : body
    }
}
