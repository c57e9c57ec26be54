public import SofaCore
internal import SofaFiles

/// The `_users` database's documents, as CouchDB has them: `org.couchdb.user:NAME` with `name`,
/// `type: "user"`, `roles`, and the password's hash (`password_scheme`, `pbkdf2_prf`, `salt`,
/// `iterations`, `derived_key`). A `password` given on write is replaced by its hash before the
/// document is stored; the hash is never returned to anyone.
public enum UsersDatabase {
    /// The fields that hold credentials: removed from every document read from `_users`.
    public static let credentialFields = ["password", "password_sha", "password_scheme", "pbkdf2_prf", "salt", "iterations",
                                          "derived_key"]

    /// The user a stored document describes; nil when it is not a user document.
    public static func user(from body: [UInt8]) -> Identities.User? {
        guard let object = JSON.tryParse(body)?.objectValue else { return nil }
        let roles = object["roles"]?.arrayValue?.compactMap(\.stringValue) ?? []
        var password: PasswordHash?
        if let salt = object["salt"]?.stringValue, let derived = object["derived_key"]?.stringValue,
           let iterations = object["iterations"]?.intValue {
            password = PasswordHash(salt: salt, iterations: Int(iterations), derivedKey: derived)
            password?.password_scheme = object["password_scheme"]?.stringValue ?? "pbkdf2"
            password?.pbkdf2_prf = object["pbkdf2_prf"]?.stringValue ?? "sha256"
        }
        return Identities.User(roles: roles, password: password)
    }

    /// The user name of a document ID (`org.couchdb.user:NAME`); nil for any other ID.
    public static func name(ofDocument id: String) -> String? {
        guard id.hasPrefix(Identities.userPrefix) else { return nil }
        let name = String(id.dropFirst(Identities.userPrefix.count))
        return name.isEmpty ? nil : name
    }

    /// A user document about to be written by `principal`, checked (CouchDB's rules of `_users`)
    /// and with its `password` replaced by the hash; `stored` is the document as it is now (nil:
    /// a new user). The existing hash is kept when no new password is given.
    public static func prepare(id: String, body: [UInt8], deleted: Bool, principal: Principal,
                               stored: [UInt8]?) throws(SofaError) -> [UInt8] {
        guard let name = name(ofDocument: id) else {
            throw SofaError(.badDocID, "a document of _users is named \(Identities.userPrefix)NAME, not '\(id)'")
        }
        let storedUser = stored.flatMap(user(from:))
        if !principal.isServerAdmin {
            guard principal.name == name else { throw SofaError.forbidden("only server admins may change another user's document") }
            guard stored != nil else { throw SofaError.forbidden("only server admins create users") }
            guard !deleted else { throw SofaError.forbidden("only server admins delete users") }
        }
        if deleted { return body }
        guard var object = JSON.tryParse(body)?.objectValue else { throw SofaError(.badJSON, "a user document is a JSON object") }
        // CouchDB's rules of `_users`, in its order and words (its refusals are 403s).
        guard object["type"]?.stringValue == "user" else { throw SofaError.forbidden("doc.type must be user") }
        guard let given = object["name"]?.stringValue, !given.isEmpty else { throw SofaError.forbidden("doc.name is required") }
        // A user document stored before roles were required keeps its roles on an update without them.
        if object["roles"] == nil, let storedUser, let stored, JSON.tryParse(stored)?["roles"] == nil {
            object["roles"] = .array(storedUser.roles.map { .string($0) })
        }
        guard let roles = object["roles"], roles != .null else { throw SofaError.forbidden("doc.roles must exist") }
        guard let list = roles.arrayValue else { throw SofaError.forbidden("doc.roles must be an array") }
        guard list.allSatisfy({ $0.stringValue != nil }) else { throw SofaError.forbidden("doc.roles can only contain strings") }
        guard given == name else { throw SofaError.forbidden("Doc ID must be of the form org.couchdb.user:name") }
        let names = list.compactMap(\.stringValue)
        if names.contains(where: { $0.hasPrefix("_") && $0 != "_metrics" }) {
            throw SofaError.forbidden("No system roles (starting with underscore) in users db.")
        }
        if name.hasPrefix("_") { throw SofaError.forbidden("Username may not start with underscore.") }
        if name.contains(":") { throw SofaError.forbidden("Character `:` is not allowed in usernames.") }
        if !principal.isServerAdmin, Set(names) != Set(storedUser?.roles ?? []) {
            throw SofaError.forbidden("Only _admin may edit roles")
        }
        let newPassword = object["password"]
        for field in credentialFields { _ = object.removeValue(forKey: field) }
        let hash: PasswordHash?
        if let newPassword, newPassword != .null {
            guard let text = newPassword.stringValue, !text.isEmpty else {
                throw SofaError(.invalidParameter, "a user's password is a non-empty string")
            }
            do { hash = try PasswordHash.make(text) } catch { throw SofaError(.crypto, "cannot hash the password: \(error)") }
        } else {
            hash = storedUser?.password
        }
        guard let hash else { throw SofaError(.invalidParameter, "a new user needs a password") }
        object["password_scheme"] = .string(hash.password_scheme)
        object["pbkdf2_prf"] = .string(hash.pbkdf2_prf)
        object["salt"] = .string(hash.salt)
        object["iterations"] = .int(Int64(hash.iterations))
        object["derived_key"] = .string(hash.derived_key)
        return JSON.object(object).compactBytes()
    }

    /// A stored user document as anyone may read it: without its credentials.
    public static func withoutCredentials(_ body: [UInt8]) -> [UInt8] {
        guard var object = JSON.tryParse(body)?.objectValue else { return body }
        for field in credentialFields { _ = object.removeValue(forKey: field) }
        return JSON.object(object).compactBytes()
    }
}
