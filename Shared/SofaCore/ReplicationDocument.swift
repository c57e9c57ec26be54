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
        let lower = url.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else { return nil }
        var rest = url.drop { $0 != "/" }.dropFirst(2)
        while rest.hasSuffix("/") { rest.removeLast() }
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        let authority = rest[..<slash].split(separator: "@").last.map(String.init) ?? ""
        let path = rest[rest.index(after: slash)...]
        guard !path.isEmpty, !path.contains("/"), let name = percentDecoded(path) else { return nil }
        func split(_ text: String) -> (host: String, port: String) {
            if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
                let port = text[text.index(after: close)...].dropFirst()
                return (String(text[text.index(after: text.startIndex)..<close]).lowercased(), String(port))
            }
            let parts = text.split(separator: ":", maxSplits: 1)
            return (parts.first.map { $0.lowercased() } ?? "", parts.count > 1 ? String(parts[1]) : "")
        }
        let named = split(authority), listening = split(httpAddress)
        let port = named.port.isEmpty ? (lower.hasPrefix("https") ? "443" : "80") : named.port
        guard port == listening.port,
              named.host == listening.host || ["localhost", "127.0.0.1", "::1"].contains(named.host) else { return nil }
        return name
    }

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

    /// The body without the credentials of its sides (for anyone but the replicator).
    public static func withoutCredentials(_ body: [UInt8]) -> [UInt8] {
        guard var object = JSON.tryParse(body)?.objectValue else { return body }
        var changed = false
        for member in ["source", "target"] {
            guard var side = object[member]?.objectValue else { continue }
            for secret in secretMembers where side.removeValue(forKey: secret) != nil { changed = true }
            object[member] = .object(side)
        }
        return changed ? JSON.object(object).compactBytes() : body
    }
}
