internal import SofaWire

/// Users (the `_users` database, in CouchDB's format) and databases' security objects.
///
/// ```swift
/// try await client.users.create("ann", password: "s3cret", roles: ["editors"])
/// try await client.database("app").setSecurityObject(SecurityObject(members: .init(roles: ["editors"])))
/// ```
/// (`SecurityObject` is SofaCore's: CouchDB's format, a new database admin-only, a database whose
/// members are empty open to everyone.)
extension SofaClient {
    public var users: Users { Users(client: self) }

    /// The users of a cluster. Server admins create, list and delete them and set their roles; a
    /// user reads their own document and changes their own password.
    public struct Users: Sendable {
        let client: SofaClient

        public static let database = "_users"
        public static let prefix = "org.couchdb.user:"

        var db: Database { client.database(Self.database) }

        /// A user as `_users` returns it (never with its password's hash).
        public struct User: Sendable, Equatable {
            public var name: String
            public var roles: [String]
            public var rev: String
        }

        @discardableResult
        public func create(_ name: String, password: String, roles: [String] = []) async throws(SofaError) -> User {
            let body = JSON.object(JSONObject([("name", .string(name)), ("type", "user"),
                                               ("roles", .array(roles.map(JSON.string))), ("password", .string(password))]))
            let saved = try await db.put(id: Self.prefix + name, body: body.compactBytes())
            return User(name: name, roles: roles, rev: saved.rev)
        }

        public func get(_ name: String) async throws(SofaError) -> User {
            let document = try await db.get(id: Self.prefix + name)
            return Self.user(document)
        }

        /// Changes a user's password (a user may change their own).
        @discardableResult
        public func setPassword(_ name: String, _ password: String) async throws(SofaError) -> User {
            let user = try await update(name) { $0["password"] = .string(password) }
            client.passwordChanged(name: name, to: password)
            return user
        }

        /// Replaces a user's roles (server admins only).
        @discardableResult
        public func setRoles(_ name: String, _ roles: [String]) async throws(SofaError) -> User {
            try await update(name) { $0["roles"] = .array(roles.map(JSON.string)) }
        }

        public func delete(_ name: String) async throws(SofaError) {
            let current = try await db.get(id: Self.prefix + name)
            _ = try await db.delete(id: current.id, rev: current.rev)
        }

        /// Every user (server admins only).
        public func list() async throws(SofaError) -> [User] {
            try await db.allDocs(includeBodies: true).filter { $0.id.hasPrefix(Self.prefix) && !$0.deleted }.map(Self.user)
        }

        private func update(_ name: String, _ change: (inout JSONObject) -> Void) async throws(SofaError) -> User {
            let current = try await db.get(id: Self.prefix + name)
            guard var object = JSON.tryParse(current.body)?.objectValue else {
                throw SofaError(.corruptData, "user \(name)'s document is not a JSON object")
            }
            change(&object)
            let saved = try await db.put(id: current.id, body: JSON.object(object).compactBytes(), rev: current.rev)
            var user = Self.user(current)
            user.rev = saved.rev
            if let roles = object["roles"]?.arrayValue { user.roles = roles.compactMap(\.stringValue) }
            return user
        }

        static func user(_ document: Document) -> User {
            let object = JSON.tryParse(document.body)?.objectValue
            return User(name: object?["name"]?.stringValue ?? String(document.id.dropFirst(prefix.count)),
                        roles: object?["roles"]?.arrayValue?.compactMap(\.stringValue) ?? [], rev: document.rev)
        }
    }
}

extension Database {
    /// The database's security object (members may read it).
    public func securityObject() async throws(SofaError) -> SecurityObject {
        guard case .json(let json) = try await client.call(.getSecurity, database: name) else { throw unexpected("getSecurity") }
        return try SecurityObject(json: json)
    }

    /// Replaces the security object (database admins only).
    public func setSecurityObject(_ object: SecurityObject) async throws(SofaError) {
        try await setSecurityObject(json: object.json)
    }

    /// The same from JSON as CouchDB takes it; the gateway refuses anything else whole.
    public func setSecurityObject(json: JSON) async throws(SofaError) {
        _ = try await client.call(.setSecurity(json), database: name)
    }
}
