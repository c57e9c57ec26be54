public import SofaCore
internal import SofaWire
public import Foundation

/// Expiration (TTL): a document whose time has come is purged by storage, deleted ones too.
extension DocumentStore {
    /// Sets when the document expires, in ms since the Unix epoch; 0 cancels.
    public func setExpiration(id: String, at milliseconds: Int64) async throws(SofaError) {
        _ = try await call(.setExpiration(id: id, expiration: milliseconds))
    }

    public func setExpiration(id: String, at date: Date) async throws(SofaError) {
        try await setExpiration(id: id, at: milliseconds(date))
    }

    public func cancelExpiration(id: String) async throws(SofaError) {
        try await setExpiration(id: id, at: 0)
    }

    /// When the document expires, in ms since the epoch; nil when it has no expiration (or does
    /// not exist, as LiteCore answers).
    public func expirationMs(id: String) async throws(SofaError) -> Int64? {
        guard case .expiration(let ms) = try await call(.getExpiration(id: id)) else { throw unexpected("expiration") }
        return ms == 0 ? nil : ms
    }

    public func expiration(id: String) async throws(SofaError) -> Date? {
        try await expirationMs(id: id).map(date)
    }

    /// The earliest expiration of the collection, in ms since the epoch; nil when none is set.
    public func nextExpirationMs() async throws(SofaError) -> Int64? {
        guard case .expiration(let ms) = try await call(.nextExpiration) else { throw unexpected("nextExpiration") }
        return ms == 0 ? nil : ms
    }

    public func nextExpiration() async throws(SofaError) -> Date? {
        try await nextExpirationMs().map(date)
    }
}

func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
