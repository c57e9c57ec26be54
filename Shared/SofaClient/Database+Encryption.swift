public import SofaCore
internal import SofaWire
internal import Foundation

/// Encrypted databases: a database created with a key (`SofaClient.createDatabase(_:encryptionKey:)`
/// or `password:`) has its blobs stored encrypted by sofa-blob, which keeps the key.
extension Database {
    /// How long a rekey may take: every blob is read and written again.
    public static let rekeyTimeout: Duration = .seconds(3600)

    /// Re-encrypts every blob: `current` must be the database's key (nil when it is plain, else a
    /// `.crypto` error and nothing changes), `new` the key to use from now on (nil: decrypt).
    /// Interrupted by a crash, the database ends up wholly in one key or the other.
    public func changeEncryptionKey(from current: EncryptionKey?, to new: EncryptionKey?) async throws(SofaError) {
        _ = try await client.call(.rekeyDatabase(currentKey: current, newKey: new), database: name, timeout: Self.rekeyTimeout)
    }
}

extension EncryptionKey {
    /// `EncryptionKey(password:)` on a thread of its own: 64,000 rounds of PBKDF2 are tens of
    /// milliseconds of CPU, too long to hold a thread of the cooperative pool.
    public static func derived(from password: String) async throws(SofaError) -> EncryptionKey {
        let result: Result<EncryptionKey, SofaError> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: Result { () throws(SofaError) in try EncryptionKey(password: password) })
            }
        }
        return try result.get()
    }
}
