public import SofaCore
internal import SofaWire

/// A record of a named key store, read raw (internal metadata: checkpoints, info, …).
public struct RawRecord: Sendable, Equatable {
    public var version: [UInt8]
    public var body: [UInt8]

    public init(version: [UInt8], body: [UInt8]) {
        self.version = version
        self.body = body
    }
}

/// Raw key/value access to a database's named key stores (`info`, `checkpoints`, …), below the
/// document layer: no revisions, no sequences, no JSON checks.
extension Database {
    public func rawPut(store: String, key: String, version: [UInt8] = [], body: [UInt8]) async throws(SofaError) {
        _ = try await client.call(.rawPut(store: store, key: key, version: version, body: body), database: name)
    }

    /// `.notFound` when the key is missing.
    public func rawGet(store: String, key: String) async throws(SofaError) -> RawRecord {
        guard case .raw(let version, let body) = try await client.call(.rawGet(store: store, key: key), database: name) else {
            throw unexpected("rawGet")
        }
        return RawRecord(version: version, body: body)
    }

    public func rawDelete(store: String, key: String) async throws(SofaError) {
        _ = try await client.call(.rawDelete(store: store, key: key), database: name)
    }
}
