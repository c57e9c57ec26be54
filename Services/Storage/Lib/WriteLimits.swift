internal import SofaWire
import SofaCore

/// The bounds storage puts on one write request.
public struct WriteLimits: Sendable, Equatable {
    /// Items one bulk write may carry; a larger one is refused whole, before any work.
    public var maxBulkItems: Int
    /// Items committed in one transaction: a longer bulk is committed in several, in order.
    public var maxTransactionItems: Int
    /// How long before a request's deadline storage stops committing its work, so that the
    /// answer (written, or not written) still reaches the client before it gives up.
    public var commitMargin: Duration
    /// The largest document body (bytes of JSON) storage takes, as CouchDB's `max_document_size`.
    public var maxDocumentBytes: Int

    /// CouchDB 3's default `max_document_size` (8 MB).
    public static let defaultMaxDocumentBytes = 8_000_000

    public init(maxBulkItems: Int = 100_000, maxTransactionItems: Int = 10_000, commitMargin: Duration = .milliseconds(250),
                maxDocumentBytes: Int = WriteLimits.defaultMaxDocumentBytes) {
        self.maxDocumentBytes = max(2, maxDocumentBytes)
        self.maxBulkItems = max(1, maxBulkItems)
        self.maxTransactionItems = max(1, maxTransactionItems)
        self.commitMargin = max(.zero, commitMargin)
    }

    public static let `default` = WriteLimits()

    /// Refuses a document whose body is over `maxDocumentBytes` (nothing of it is written).
    func checkDocument(_ id: String, bytes: Int) throws(SofaError) {
        guard bytes > maxDocumentBytes else { return }
        throw SofaError(.messageTooLarge, "document '\(id)' is \(bytes) bytes; the limit is \(maxDocumentBytes) "
                        + "(SOFA_MAX_DOCUMENT_BYTES): nothing was written")
    }

    /// Refuses a bulk of `count` items over `maxBulkItems`.
    func checkBulk(_ count: Int) throws(SofaError) {
        guard count > maxBulkItems else { return }
        throw BulkLimit.refusal(count: count, limit: maxBulkItems)
    }
}

/// The instant by which the writes of the current request must have committed (its deadline less
/// the commit margin), set by the service around the request; nil: none. Work whose instant has
/// passed is not committed: it is rolled back (or never started) and fails with `.timeout`.
public enum WriteDeadline {
    @TaskLocal public static var current: ContinuousClock.Instant?

    static func hasPassed(_ deadline: ContinuousClock.Instant?) -> Bool {
        guard let deadline else { return false }
        return ContinuousClock.now >= deadline
    }

    static let passed = SofaError(.timeout, "the request's deadline passed before storage committed it: nothing of it "
                                  + "was written")
}
