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
