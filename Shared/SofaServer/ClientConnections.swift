internal import Synchronization

/// The client connections this process's client socket (the gateway's, ZAP domain
/// `sofa-clients`) holds open, and how many it admits (`SOFA_MAX_CONNECTIONS`). The socket's
/// monitor counts a connection from its accept (its descriptor) until it closes; the ZAP handler
/// refuses the handshake of a new one while the count, the new one included, is beyond the limit.
/// (The monitor and the ZAP handler are two threads: a connection whose handshake comes before
/// its accept is counted may be admitted one beyond the limit.)
public enum ClientConnections {
    public static let defaultLimit = 10_000

    private static let state = Mutex<(open: Set<Int32>, limit: Int)>(([], defaultLimit))

    public static func setLimit(_ limit: Int) { state.withLock { $0.limit = max(1, limit) } }

    /// Connections open now (handshakes that succeeded, not yet closed).
    public static var count: Int { state.withLock { $0.open.count } }

    static var isFull: Bool { state.withLock { $0.open.count > $0.limit } }

    static func opened(_ descriptor: Int32) { _ = state.withLock { $0.open.insert(descriptor) } }

    static func closed(_ descriptors: [Int32]) {
        state.withLock { state in for descriptor in descriptors { state.open.remove(descriptor) } }
    }
}
