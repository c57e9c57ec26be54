public import SofaCore
public import SofaWire

/// A package: databases of one cluster managed together, named `<package>+<name>` (database
/// names allow no `/`), with a snapshot database `<package>+_snapshots` that every package has
/// (see `Package+Snapshots`). Created, listed, deleted and replicated together.
public struct Package: Sendable {
    public let client: SofaClient
    public let name: String

    /// Between a package's name and its database's.
    public static let separator = "+"
    /// The name of its snapshot database within it.
    public static let snapshotsName = "_snapshots"

    /// `name`: a lower-case letter, then a-z, 0-9 and `_$()-`.
    public init(client: SofaClient, name: String) throws(SofaError) {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789_$()-".utf8)
        guard let first = name.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first),
              name.utf8.allSatisfy({ allowed.contains($0) }), name.utf8.count <= 100 else {
            throw SofaError(.badDatabaseName, "invalid package name '\(name)': use a lower-case letter, then a-z, 0-9 and _$()- (at most 100)")
        }
        self.client = client
        self.name = name
    }

    var prefix: String { name + Self.separator }

    /// The full name of one of its databases.
    public func databaseName(_ member: String) -> String { prefix + member }

    public func database(_ member: String) -> Database { client.database(databaseName(member)) }

    /// Its snapshot database.
    public var snapshots: Database { database(Self.snapshotsName) }

    /// Creates the package (its snapshot database) and the databases named.
    public func create(databases members: [String] = []) async throws(SofaError) {
        _ = try await client.createDatabase(databaseName(Self.snapshotsName))
        for member in members { _ = try await createDatabase(member) }
    }

    /// Creates one of its databases.
    public func createDatabase(_ member: String) async throws(SofaError) -> Database {
        guard !member.hasPrefix("_") else { throw SofaError(.badDatabaseName, "a package's database name cannot start with _") }
        return try await client.createDatabase(databaseName(member))
    }

    /// Its databases' names within it (not the snapshot database).
    public func databaseNames() async throws(SofaError) -> [String] {
        try await client.databases().filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
            .filter { $0 != Self.snapshotsName }.sorted()
    }

    /// Deletes every database of the package, its snapshots too.
    public func delete() async throws(SofaError) {
        for full in try await client.databases() where full.hasPrefix(prefix) { try await client.deleteDatabase(full) }
    }

    /// The packages of a cluster (those with a snapshot database).
    public static func list(_ client: SofaClient) async throws(SofaError) -> [String] {
        let suffix = separator + snapshotsName
        return try await client.databases().filter { $0.hasSuffix(suffix) }.map { String($0.dropLast(suffix.count)) }.sorted()
    }

    /// Replicates every database of the package (snapshots too) with the same-named databases of
    /// another cluster (`endpoint`: its gateway, "tcp://host:port"), one-shot, and waits for them.
    /// `remote`, when given, creates the databases missing there first. Conflicts are left to
    /// the controllers (`.manual`), which apply their types' policies; `.auto` resolves them by
    /// Sofa's rule as they arrive.
    @discardableResult
    public func replicate(with endpoint: String, direction: ReplicationDirection = .push, remote: SofaClient? = nil,
                          access: RemoteAccess? = nil, conflicts: ConflictPolicy = .manual) async throws(SofaError) -> [ReplicationStatus] {
        var members = try await databaseNames() + [Self.snapshotsName]
        if direction != .push, let remote {
            members = Array(Set(members + (try await remote.databases().filter { $0.hasPrefix(prefix) }
                .map { String($0.dropFirst(prefix.count)) }))).sorted()
        }
        if let remote {
            let there = Set(try await remote.databases())
            for member in members where !there.contains(databaseName(member)) { _ = try await remote.createDatabase(databaseName(member)) }
        }
        let here = Set(try await client.databases())
        for member in members where !here.contains(databaseName(member)) { _ = try await client.createDatabase(databaseName(member)) }
        var statuses: [ReplicationStatus] = []
        for member in members {
            let full = databaseName(member)
            let handle = try await client.replicate(from: full, to: endpoint + "/" + full, direction: direction,
                                                    conflicts: conflicts, sourceAccess: nil, targetAccess: access)
            statuses += try await handle.wait { $0.state.isFinal }
        }
        if let failed = statuses.first(where: { $0.state != .completed }) {
            throw SofaError(.unexpectedError, "replicating \(failed.source) ended \(failed.state.rawValue): \(failed.lastError)")
        }
        return statuses
    }
}

/// Freeform metadata of a database: one replicated document (`sofa-metadata`) and one local one
/// (`_local/sofa-metadata`, never replicated).
extension Database {
    public static let metadataID = "sofa-metadata"

    /// The replicated metadata ({} when none was set).
    public func metadata() async throws(SofaError) -> JSONObject {
        try await storedMetadata(local: false)?.value ?? [:]
    }

    /// Replaces the replicated metadata.
    public func setMetadata(_ value: JSONObject) async throws(SofaError) {
        let rev = try await storedMetadata(local: false)?.rev
        _ = try await put(id: Self.metadataID, body: JSON.object(value).compactBytes(), rev: rev)
    }

    /// The local metadata ({} when none was set).
    public func localMetadata() async throws(SofaError) -> JSONObject {
        try await storedMetadata(local: true)?.value ?? [:]
    }

    /// Replaces the local metadata.
    public func setLocalMetadata(_ value: JSONObject) async throws(SofaError) {
        let rev = try await storedMetadata(local: true)?.rev
        _ = try await putLocal(id: Self.metadataID, json: JSON.object(value).compactString, rev: rev)
    }

    private func storedMetadata(local: Bool) async throws(SofaError) -> (value: JSONObject, rev: String)? {
        do {
            let document = local ? try await getLocal(id: Self.metadataID) : try await get(id: Self.metadataID)
            if document.deleted { return nil }
            return ((try document.json().objectValue) ?? [:], document.rev)
        } catch {
            guard error.is(.notFound) else { throw error }
            return nil
        }
    }
}
