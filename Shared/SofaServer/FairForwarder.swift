internal import SofaCore
internal import SofaWire
internal import Synchronization

/// The limits of fair forwarding (see `ClientInFlight`): per client, at most `perClient`
/// requests forwarded and not yet answered (`SOFA_CLIENT_IN_FLIGHT`) and, beyond the first, at
/// most `bytesPerClient` bytes of them, counting each as its bytes plus the client's last
/// answer's (`SOFA_CLIENT_IN_FLIGHT_BYTES`; nil: no such limit); and at most `waitingBytes`
/// bytes of further requests waiting at the server (`SOFA_CLIENT_WAITING_BYTES`).
public struct ForwardingLimits: Sendable, Equatable {
    public static let defaultPerClient = 32
    public static let defaultBytesPerClient = 8 << 20
    public static let defaultWaitingBytes = 32 << 20
    public var perClient: Int
    public var bytesPerClient: Int?
    public var waitingBytes: Int

    public init(perClient: Int = ForwardingLimits.defaultPerClient, bytesPerClient: Int? = ForwardingLimits.defaultBytesPerClient,
                waitingBytes: Int = ForwardingLimits.defaultWaitingBytes) {
        self.perClient = max(1, perClient)
        self.bytesPerClient = bytesPerClient.map { max(1, $0) }
        self.waitingBytes = max(0, waitingBytes)
    }
}

/// `ClientInFlight` behind a lock, for a server whose requests arrive on its socket thread and
/// whose answers come back on the service clients' socket threads. Starting the waiting requests
/// is done by one thread at a time (`draining`), in a loop: a request answered at once while
/// others are being started does not recurse.
final class FairForwarder: Sendable {
    let limits: ForwardingLimits
    private let state: Mutex<(queues: ClientInFlight<ForwardedRequest>, draining: Bool)>

    init(_ limits: ForwardingLimits) {
        self.limits = limits
        state = Mutex((ClientInFlight(perClient: limits.perClient, waitingBytes: limits.waitingBytes,
                                     bytesPerClient: limits.bytesPerClient), false))
    }

    func admit(_ client: [UInt8], _ request: ForwardedRequest, bytes: Int, connection: Int32)
        -> ClientInFlight<ForwardedRequest>.Admission {
        state.withLock { $0.queues.admit(client, request, bytes: bytes, connection: connection, deadline: request.deadline) }
    }

    /// Counts out a request of `client` (counted for `cost`, answered with `answerBytes`); true
    /// when the caller must now `drain` (start the waiting requests that may go): no other
    /// thread is at it.
    func finish(_ client: [UInt8], cost: Int, answerBytes: Int) -> Bool {
        state.withLock { state in
            state.queues.finish(client, cost: cost, answerBytes: answerBytes)
            guard !state.draining, state.queues.hasStartable else { return false }
            state.draining = true
            return true
        }
    }

    /// The next waiting request to start (counted in flight), or nil, which ends the caller's turn
    /// at draining.
    func next() -> (client: [UInt8], request: ForwardedRequest, connection: Int32, cost: Int)? {
        state.withLock { state in
            guard let next = state.queues.next() else {
                state.draining = false
                return nil
            }
            return (next.client, next.waiting.item, next.waiting.connection, next.cost)
        }
    }

    func removeExpired(now: UInt64) -> [(client: [UInt8], request: ForwardedRequest)] {
        state.withLock { state in
            state.queues.waitingCount == 0 ? [] : state.queues.removeExpired(now: now).map { ($0.client, $0.waiting.item) }
        }
    }

    /// Drops the waiting requests of connections that closed; how many.
    func dropWaiting(connections: Set<Int32>) -> Int {
        state.withLock { state in
            state.queues.waitingCount == 0 ? 0 : state.queues.removeWaiting(connections: connections).count
        }
    }

    /// Requests in flight and waiting, for one client and in all.
    func counts(of client: [UInt8]) -> (inFlight: Int, waiting: Int) {
        state.withLock { ($0.queues.inFlight[client] ?? 0, $0.queues.waitingBytes(of: client)) }
    }

    var totals: (inFlight: Int, waiting: Int) {
        state.withLock { ($0.queues.inFlightTotal, $0.queues.waitingCount) }
    }

    func refusal(waitingBytes: Int, server: String) -> SofaError {
        SofaError(.busy, "refused: this client already has \(limits.perClient) requests in flight "
            + "(SOFA_CLIENT_IN_FLIGHT) and \(waitingBytes) bytes of requests waiting at \(server), and a client "
            + "may have at most \(limits.waitingBytes) bytes waiting (SOFA_CLIENT_WAITING_BYTES); wait for "
            + "answers before sending more")
    }
}

/// True the first time it is asked, from any thread; false after.
final class Once: Sendable {
    private let done = Atomic<Bool>(false)

    func first() -> Bool { !done.exchange(true, ordering: .acquiringAndReleasing) }
}
