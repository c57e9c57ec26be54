/// A database's security object, as CouchDB has it: database admins and members, each by
/// names and roles. A database without one is admin-only (CouchDB 3's default).
public struct SecurityObject: Sendable, Equatable {
    public struct Group: Sendable, Equatable {
        public var names: [String] = []
        public var roles: [String] = []

        public init(names: [String] = [], roles: [String] = []) {
            self.names = names
            self.roles = roles
        }

        public var isEmpty: Bool { names.isEmpty && roles.isEmpty }
    }

    public var admins = Group()
    public var members = Group()

    public init(admins: Group = Group(), members: Group = Group()) {
        self.admins = admins
        self.members = members
    }

    /// CouchDB's role of server admins.
    public static let serverAdminRole = "_admin"

    /// What a new database gets: server admins only.
    public static let adminOnly = SecurityObject(admins: Group(roles: [serverAdminRole]),
                                                 members: Group(roles: [serverAdminRole]))

    /// The key of the object in the database's `info` store.
    public static let storeKey = "_security"

    /// Parses `{"admins":{"names":[…],"roles":[…]},"members":{…}}`; anything else is
    /// `invalidParameter` naming what is wrong (and nothing is stored).
    public init(json: JSON) throws(SofaError) {
        guard let object = json.objectValue else { throw SofaError(.invalidParameter, "a security object is a JSON object") }
        func group(_ key: String) throws(SofaError) -> Group {
            guard let value = object[key], value != .null else { return Group() }
            guard let fields = value.objectValue else {
                throw SofaError(.invalidParameter, "the security object's \(key) must be an object with names and roles")
            }
            func strings(_ field: String) throws(SofaError) -> [String] {
                guard let list = fields[field], list != .null else { return [] }
                guard let array = list.arrayValue else {
                    throw SofaError(.invalidParameter, "the security object's \(key).\(field) must be an array of strings")
                }
                var out: [String] = []
                for item in array {
                    guard let text = item.stringValue else {
                        throw SofaError(.invalidParameter, "the security object's \(key).\(field) must be an array of strings")
                    }
                    out.append(text)
                }
                return out
            }
            return Group(names: try strings("names"), roles: try strings("roles"))
        }
        admins = try group("admins")
        members = try group("members")
    }

    public var json: JSON {
        func group(_ group: Group) -> JSON {
            .object(JSONObject([("names", .array(group.names.map(JSON.string))), ("roles", .array(group.roles.map(JSON.string)))]))
        }
        return .object(JSONObject([("admins", group(admins)), ("members", group(members))]))
    }

    public enum Access: Int, Sendable, Comparable {
        case none, member, admin
        public static func < (a: Access, b: Access) -> Bool { a.rawValue < b.rawValue }
    }
}

/// Who a request runs as: a server admin (roles include `_admin`; the cluster's own services
/// are one), or a user from `_users` with their roles.
public struct Principal: Sendable, Equatable {
    public var name: String
    public var roles: [String]

    public init(name: String, roles: [String]) {
        self.name = name
        self.roles = roles
    }

    /// CouchDB's role of server admins.
    public static let adminRole = SecurityObject.serverAdminRole
    public var isServerAdmin: Bool { roles.contains(Self.adminRole) }

    /// The cluster's own services (a peer holding the cluster's key): a server admin.
    public static let cluster = Principal(name: "_cluster", roles: [adminRole])
}

/// What a principal may do in a database under its security object.
extension SecurityObject {
    /// What `principal` may do in the database (nil: not signed in).
    public func access(of principal: Principal?) -> Access {
        if let principal, principal.isServerAdmin || admins.includes(principal) { return .admin }
        // As CouchDB: a database whose members are empty is open to everyone.
        if members.isEmpty { return .member }
        if let principal, members.includes(principal) { return .member }
        return .none
    }
}

extension SecurityObject.Group {
    public func includes(_ principal: Principal) -> Bool {
        names.contains(principal.name) || principal.roles.contains(where: roles.contains)
    }
}
