import COpenSSL
import Foundation
import SofaCore

/// The cluster's secrets folder (`SOFA_KEYS_DIR`; `sofa up`: `<data>/keys`), mode 0700, every
/// file in it 0600:
///
///     cluster.key      {"format":1,"public":"<Z85>","secret":"<Z85>"}   the cluster's CURVE pair
///     admins.json      {"format":1,"admins":{"NAME":{"password_scheme":"pbkdf2",…}}}  server admins
///     local-admin.json {"format":1,"user":"NAME","password":"…"}   the first admin, for the local CLI
///
/// Each file is written once, whole, and atomically: written under a temporary name, synced, then
/// linked to its name (`link` fails if another process got there first: that one's file is read
/// instead). So services that start together on a new folder agree on one cluster key.
public struct SecretsFolder: Sendable {
    public let path: String

    public static let clusterKeyFile = "cluster.key"
    public static let adminsFile = "admins.json"
    public static let localAdminFile = "local-admin.json"

    public init(_ path: String) { self.path = path }

    /// The folder `sofa up` uses in a data directory.
    public static func inDataDirectory(_ dataDirectory: String) -> SecretsFolder {
        SecretsFolder(dataDirectory + "/keys")
    }

    /// The file's bytes; nil when it does not exist.
    public func read(_ name: String) throws -> [UInt8]? {
        let file = path + "/" + name
        guard let size = try fileSize(file) else { return nil }
        guard size <= 1 << 20 else { throw SofaError(.corruptData, "\(file) is \(size) bytes: not a Sofa secrets file") }
        let handle = try PosixFile.openForReading(file, notFound: "no \(file)")
        var bytes = [UInt8](repeating: 0, count: Int(size))
        let count = try bytes.withUnsafeMutableBytes { try handle.read(into: $0, at: 0) }
        return Array(bytes.prefix(count))
    }

    /// The file's bytes, made by `make` and written first when it does not exist yet.
    public func readOrCreate(_ name: String, make: () throws -> [UInt8]) throws -> [UInt8] {
        if let existing = try read(name) { return existing }
        try write(name, try make(), replacing: false)
        guard let written = try read(name) else { throw SofaError(.corruptData, "\(path)/\(name) vanished as it was written") }
        return written
    }

    /// Writes the file whole and atomically (mode 0600); with `replacing` false, a file another
    /// process wrote meanwhile is kept (and this one's bytes dropped).
    public func write(_ name: String, _ bytes: [UInt8], replacing: Bool) throws {
        try makeDirectory(path)
        guard chmod(path, 0o700) == 0 else { throw posixError("chmod", path) }
        let temporary = path + "/.\(name).\(getpid()).\(try randomBytes(4).hexString)"
        let file = try PosixFile.create(temporary)
        do {
            try bytes.withUnsafeBytes { try file.write($0) }
            try file.sync()
        } catch {
            _ = try? removeFile(temporary)
            throw error
        }
        defer { _ = try? removeFile(temporary) }
        if replacing {
            try renameFile(temporary, path + "/" + name)
        } else if link(temporary, path + "/" + name) != 0 && errno != EEXIST {
            throw posixError("link", path + "/" + name)
        }
        try syncDirectory(path)
    }
}

/// The cluster's CURVE key pair as `cluster.key` holds it (Z85 text).
public struct ClusterKeyFile: Codable, Equatable, Sendable {
    public var format = 1
    public var `public`: String
    public var secret: String

    public init(publicKey: String, secretKey: String) {
        self.public = publicKey
        self.secret = secretKey
    }

    /// The pair in `folder`; nil when there is none (or it cannot be read).
    public static func read(in folder: SecretsFolder) -> ClusterKeyFile? {
        guard let bytes = (try? folder.read(SecretsFolder.clusterKeyFile)).flatMap({ $0 }) else { return nil }
        return try? JSONDecoder().decode(ClusterKeyFile.self, from: Data(bytes))
    }

    /// The pair in `folder`, made by `generate` (public, secret) and stored when there is none.
    public static func load(in folder: SecretsFolder, generate: () throws -> (String, String)) throws -> ClusterKeyFile {
        let bytes = try folder.readOrCreate(SecretsFolder.clusterKeyFile) {
            let (publicKey, secretKey) = try generate()
            return Array(try JSONEncoder().encode(ClusterKeyFile(publicKey: publicKey, secretKey: secretKey)))
        }
        do {
            return try JSONDecoder().decode(ClusterKeyFile.self, from: Data(bytes))
        } catch {
            throw SofaError(.corruptData, "\(folder.path)/\(SecretsFolder.clusterKeyFile) is not a Sofa cluster key file: \(error)")
        }
    }
}

/// A password as Sofa stores it, in CouchDB's fields: PBKDF2 with HMAC-SHA-256, a random salt,
/// the iteration count, and the derived key (all hex but the count). Never the password itself.
public struct PasswordHash: Codable, Equatable, Sendable {
    public var password_scheme = "pbkdf2"
    public var pbkdf2_prf = "sha256"
    public var salt: String
    public var iterations: Int
    public var derived_key: String

    /// CouchDB 3's default count for new passwords.
    public static let defaultIterations = 10_000
    /// Above this a stored hash is refused as a check would take too long (a denial of service).
    public static let maxIterations = 1_000_000

    public init(salt: String, iterations: Int, derivedKey: String) {
        self.salt = salt
        self.iterations = iterations
        self.derived_key = derivedKey
    }

    /// Hashes `password` with a new random salt.
    public static func make(_ password: String, iterations: Int = defaultIterations) throws -> PasswordHash {
        let salt = try randomBytes(16).hexString
        return PasswordHash(salt: salt, iterations: iterations,
                            derivedKey: try pbkdf2(password: password, salt: Array(salt.utf8), iterations: iterations).hexString)
    }

    /// Whether `password` is the one hashed (in time that does not depend on where they differ).
    public func matches(_ password: String) -> Bool {
        guard password_scheme == "pbkdf2", pbkdf2_prf == "sha256", (1...Self.maxIterations).contains(iterations),
              let derived = try? pbkdf2(password: password, salt: Array(salt.utf8), iterations: iterations,
                                        length: max(1, derived_key.utf8.count / 2)) else { return false }
        let expected = Array(derived.hexString.utf8), stored = Array(derived_key.lowercased().utf8)
        guard expected.count == stored.count else { return false }
        return zip(expected, stored).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// PBKDF2-HMAC-SHA-256 of `password` (OpenSSL's).
public func pbkdf2(password: String, salt: [UInt8], iterations: Int, length: Int = 32) throws -> [UInt8] {
    var out = [UInt8](repeating: 0, count: length)
    let utf8 = Array(password.utf8)
    let ok = utf8.withUnsafeBufferPointer { pass in
        PKCS5_PBKDF2_HMAC(pass.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, Int32(utf8.count),
                          salt, Int32(salt.count), Int32(iterations), EVP_sha256(), Int32(length), &out)
    }
    guard ok == 1 else { throw opensslError("PKCS5_PBKDF2_HMAC") }
    return out
}

/// `admins.json`: the cluster's server admins (not in any database), each with a password hash.
public struct AdminsFile: Codable, Equatable, Sendable {
    public var format = 1
    public var admins: [String: PasswordHash]

    public init(admins: [String: PasswordHash]) { self.admins = admins }

    public static func read(in folder: SecretsFolder) throws -> AdminsFile? {
        guard let bytes = try folder.read(SecretsFolder.adminsFile) else { return nil }
        do {
            return try JSONDecoder().decode(AdminsFile.self, from: Data(bytes))
        } catch {
            throw SofaError(.corruptData, "\(folder.path)/\(SecretsFolder.adminsFile) is not a Sofa admins file: \(error)")
        }
    }
}

/// `local-admin.json`: the first admin's name and password, for the `sofa` command of the same
/// user on the same machine (the folder and file are that user's alone).
public struct LocalAdminFile: Codable, Equatable, Sendable {
    public var format = 1
    public var user: String
    public var password: String

    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    public static func read(in folder: SecretsFolder) throws -> LocalAdminFile? {
        guard let bytes = try folder.read(SecretsFolder.localAdminFile) else { return nil }
        return try? JSONDecoder().decode(LocalAdminFile.self, from: Data(bytes))
    }

    /// The cluster's first admin: `user`/`password` when given (`SOFA_ADMIN_USER`,
    /// `SOFA_ADMIN_PASSWORD`), else `admin` with a random password; stored (hashed in
    /// `admins.json`, in clear for the local CLI in `local-admin.json`) when the folder has no
    /// admin yet. Returns the admins and whether this call created the first one.
    public static func ensureAdmin(in folder: SecretsFolder, user: String?, password: String?) throws -> (AdminsFile, created: Bool) {
        if let existing = try AdminsFile.read(in: folder), !existing.admins.isEmpty { return (existing, false) }
        let name = user.flatMap { $0.isEmpty ? nil : $0 } ?? "admin"
        let secret = try password.flatMap { $0.isEmpty ? nil : $0 } ?? randomBytes(18).hexString
        // The clear copy first, then the hash of whichever clear copy is stored: processes that
        // start together on a new folder agree on the first admin, whoever wrote first.
        try folder.write(localAdminFile, Array(try JSONEncoder().encode(LocalAdminFile(user: name, password: secret))), replacing: false)
        guard let first = try read(in: folder) else { throw SofaError(.corruptData, "\(folder.path): \(localAdminFile) is unreadable") }
        let admins = AdminsFile(admins: [first.user: try PasswordHash.make(first.password)])
        try folder.write(SecretsFolder.adminsFile, Array(try JSONEncoder().encode(admins)), replacing: false)
        guard let stored = try AdminsFile.read(in: folder) else { throw SofaError(.corruptData, "\(folder.path): admins file vanished") }
        return (stored, stored == admins && first.password == secret)
    }

    private static let localAdminFile = SecretsFolder.localAdminFile
}
