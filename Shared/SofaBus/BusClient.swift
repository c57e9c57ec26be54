public import SofaCore
public import SofaWire
internal import Foundation
internal import Synchronization

/// The caller side of the bus: one DEALER socket connected to one endpoint, owned by its own
/// thread for life, over which any number of concurrent calls are multiplexed by request id.
///
/// Callers never touch the socket: `call` registers a continuation keyed by a fresh request id,
/// queues the encoded request and wakes the socket thread through an eventfd. The thread sends,
/// receives, matches responses to continuations, and fails calls whose deadline has passed. When
/// no connection to the peer exists, a call fails at once with `.unavailable`; when the connection
/// drops with calls in flight, those fail with `.unavailable` too; ZeroMQ reconnects by itself
/// when the peer comes back.
public final class BusClient: Sendable {
    public let endpoint: String
    /// The peer's name in error messages ("storage", "gateway", …).
    public let peerName: String

    struct Pending {
        var delivery: Delivery
        var deadline: UInt64  // monotonic ms
        var startedMs: UInt64  // monotonic ms
        var sent = false

        /// Who waits: a caller of `send` (the response decoded), or of `forward` (its bytes,
        /// to a task or to a function called on the socket thread).
        enum Delivery {
            case decoded(CheckedContinuation<Response, Never>)
            case encoded(CheckedContinuation<Result<[UInt8], SofaError>, Never>)
            /// Called with the answer's bytes where ZeroMQ holds them (valid during the call only).
            case handler(@Sendable (Result<UnsafeRawBufferPointer, SofaError>) -> Void)

            func deliver(_ result: Result<[UInt8], SofaError>) {
                switch self {
                case .decoded: break
                case .encoded(let continuation): continuation.resume(returning: result)
                case .handler(let handler):
                    switch result {
                    case .success(let bytes): bytes.withUnsafeBytes { handler(.success($0)) }
                    case .failure(let error): handler(.failure(error))
                    }
                }
            }
        }

        var wantsBytes: Bool {
            if case .decoded = delivery { return false }
            return true
        }

        func fail(_ id: UInt64, _ error: SofaError) {
            if case .decoded(let continuation) = delivery {
                continuation.resume(returning: .failure(id, error))
            } else {
                delivery.deliver(.failure(error))
            }
        }
    }

    struct State {
        var nextID: UInt64 = 1
        var pending: [UInt64: Pending] = [:]
        var closed = false
        /// Whether a connection to the peer has completed its handshake (from the socket monitor).
        var connected = false
        var nextWaiter: UInt64 = 0
        var connectionWaiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        /// The last answer that was no `Response` at all (it names no call): calls that time
        /// out after it say so instead of a bare timeout.
        var lastMalformed: (atMs: UInt64, message: String)?
        /// A secure handshake failed since the last one that succeeded.
        var handshakeFailed = false
    }

    let state = Mutex(State())
    /// Hands a request (by id) to the socket's thread; false once that loop is closed.
    private let post: @Sendable ((UInt64, EncodedMessage)) -> Bool
    /// The socket's thread: this client's own, or the loop that hosts it (`HostedBusClient`).
    private let loop: any SocketLoopControl
    /// Whether another loop runs this client's socket (closing the client then leaves it running).
    private let hosted: Bool
    let maxResponseBytes: Int
    /// Requests larger than this are refused here, as the server would refuse them; past four
    /// times the server's limit ZeroMQ drops the connection, and the caller would learn only that.
    private let maxRequestBytes: Int
    /// Whether calls waiting to go at once are sent as one message (`WireBatch`).
    private let batching = Atomic<Bool>(false)

    init(endpoint: String, peerName: String, maxResponseBytes: Int, maxRequestBytes: Int,
                     loop: any SocketLoopControl, hosted: Bool, post: @escaping @Sendable ((UInt64, EncodedMessage)) -> Bool) {
        self.endpoint = endpoint
        self.peerName = peerName
        self.maxResponseBytes = maxResponseBytes
        self.maxRequestBytes = maxRequestBytes
        self.loop = loop
        self.hosted = hosted
        self.post = post
    }

    /// Connects to `endpoint` (ZeroMQ connects lazily; a peer that is down is not an error here).
    public static func connect(
        _ endpoint: String, peerName: String, maxResponseBytes: Int = 256 << 20,
        maxRequestBytes: Int = BusLimits.defaultMaxRequestBytes, curve: ClientKeys? = Curve.internalClient
    ) async throws(SofaError) -> BusClient {
        try await SocketLoop.start(name: "bus-client-\(peerName)") { loop throws(SofaError) in
            let client = BusClient(endpoint: endpoint, peerName: peerName, maxResponseBytes: maxResponseBytes,
                                   maxRequestBytes: maxRequestBytes, loop: loop, hosted: false, post: { loop.post($0) })
            return (client, try ClientDriver(client, curve: curve))
        }
    }

    /// From now on, the small calls waiting to go at once (posted in the same turn of the socket's
    /// thread: many tasks calling together) go as one message (`WireBatch`), and the peer answers
    /// them in batches too. Only for a peer that takes batches (its health answer says so:
    /// `HealthInfo.batches`).
    public func sendBatches() {
        batching.store(true, ordering: .relaxed)
    }

    /// Whether calls are sent in batches (`sendBatches`).
    public var batches: Bool { batching.load(ordering: .relaxed) }

    /// The thread of this client's socket, for a lifecycle service to follow.
    public var socketLoop: any SocketLoopControl { loop }

    /// Sends one operation and waits for its reply, or for `timeout` to pass.
    public func call(
        _ operation: Op, database: String = "", timeout: Duration = .seconds(10)
    ) async throws(SofaError) -> Reply {
        let response = await send(Request(database: database, operation: operation), timeout: timeout)
        return try response.outcome.get()
    }

    /// Sends a request (its id is replaced by one of this client's) and returns the response,
    /// which carries any failure in its outcome. The deadline is the earlier of the request's own
    /// and now + `timeout`.
    public func send(_ request: Request, timeout: Duration = .seconds(10)) async -> Response {
        let timeoutMs = UInt64(max(0, timeout.components.seconds)) * 1000
            + UInt64(max(0, timeout.components.attoseconds / 1_000_000_000_000_000))
        let now = wallClockMs()
        var request = request
        let budget = request.deadline == 0 ? timeoutMs : min(timeoutMs, request.deadline &- min(now, request.deadline))
        request.deadline = now + budget
        let localDeadline = monotonicMs() + budget
        let idBox = Mutex<UInt64>(0)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Response, Never>) in
                let id: UInt64? = state.withLock { state in
                    guard !state.closed else { return nil }
                    defer { state.nextID += 1 }
                    return state.nextID
                }
                guard let id else {
                    return continuation.resume(returning: .failure(0, SofaError(.shuttingDown, "the connection to \(peerName) is closed")))
                }
                request.id = id
                let encoded = request.encodedMessage()  // outside the lock: other callers go on meanwhile
                guard encoded.count <= maxRequestBytes else {
                    return continuation.resume(returning: .failure(0, SofaError(.messageTooLarge,
                        "the request of \(encoded.count) bytes is over the limit of "
                        + "\(maxRequestBytes) bytes (\(peerName)'s SOFA_MAX_REQUEST_BYTES); nothing was sent")))
                }
                idBox.withLock { $0 = id }
                state.withLock { $0.pending[id] = Pending(delivery: .decoded(continuation), deadline: localDeadline,
                                                          startedMs: localDeadline - budget) }
                if !post((id, encoded)) {
                    resolve(id, with: SofaError(.shuttingDown, "the connection to \(peerName) is closed"))
                }
            }
        } onCancel: {
            let id = idBox.withLock { $0 }
            resolve(id, with: SofaError(.unavailable, "the call to \(peerName) was cancelled"))
        }
    }

    /// Passes on a request received encoded (see `ForwardedRequest`) and returns the peer's
    /// encoded response, or why there is none. Deadlines as `send`.
    public func forward(_ request: ForwardedRequest, timeout: Duration) async -> Result<[UInt8], SofaError> {
        let idBox = Mutex<UInt64>(0)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<[UInt8], SofaError>, Never>) in
                if let id = enqueue(request, timeout: timeout, .encoded(continuation)) { idBox.withLock { $0 = id } }
            }
        } onCancel: {
            let id = idBox.withLock { $0 }
            resolve(id, with: SofaError(.unavailable, "the call to \(peerName) was cancelled"))
        }
    }

    /// The same without a task: `completion` gets the answer's bytes (or why there are none) on
    /// this client's socket thread, where ZeroMQ holds them: they are valid during the call only,
    /// which must be quick. A router that passes messages between two sockets this way wakes no
    /// other thread and copies each answer once.
    public func forward(_ request: ForwardedRequest, timeout: Duration,
                        then completion: @escaping @Sendable (Result<UnsafeRawBufferPointer, SofaError>) -> Void) {
        _ = enqueue(request, timeout: timeout, .handler(completion))
    }

    /// Queues a forwarded request for the socket thread; its id, or nil when the client is
    /// closed (`delivery` has then been told so).
    private func enqueue(_ request: ForwardedRequest, timeout: Duration, _ delivery: Pending.Delivery) -> UInt64? {
        let timeoutMs = UInt64(max(0, timeout.components.seconds)) * 1000
            + UInt64(max(0, timeout.components.attoseconds / 1_000_000_000_000_000))
        let now = wallClockMs()
        let budget = request.deadline == 0 ? timeoutMs : min(timeoutMs, request.deadline &- min(now, request.deadline))
        let localDeadline = monotonicMs() + budget
        let id: UInt64? = state.withLock { state in
            if state.closed { return nil }
            let id = state.nextID
            state.nextID += 1
            state.pending[id] = Pending(delivery: delivery, deadline: localDeadline, startedMs: localDeadline - budget)
            return id
        }
        guard let id else {
            delivery.deliver(.failure(SofaError(.shuttingDown, "the connection to \(peerName) is closed")))
            return nil
        }
        if !post((id, request.encoded(id: id, deadline: now + budget))) {
            resolve(id, with: SofaError(.shuttingDown, "the connection to \(peerName) is closed"))
        }
        return id
    }

    /// Waits until a connection to the peer has completed its handshake (ZeroMQ connects in the
    /// background), or `timeout` passes, or the calling task is cancelled: true when connected.
    /// Driven by the socket monitor's events. (A service stopping while it waits for a peer that
    /// does not run stops at once, not at the end of the wait.)
    public func waitUntilConnected(timeout: Duration) async -> Bool {
        let waiterBox = Mutex<(id: UInt64?, deadline: Task<Void, Never>?, cancelled: Bool)>((nil, nil, false))
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let waiter: UInt64? = state.withLock { state in
                    if state.connected || state.closed || Task.isCancelled { return nil }
                    defer { state.nextWaiter += 1 }
                    state.connectionWaiters[state.nextWaiter] = continuation
                    return state.nextWaiter
                }
                guard let waiter else {
                    continuation.resume(returning: state.withLock { $0.connected })
                    return
                }
                let deadline = Task {
                    try? await Task.sleep(for: timeout)  // the deadline of the wait
                    self.state.withLock { $0.connectionWaiters.removeValue(forKey: waiter) }?.resume(returning: false)
                }
                // A cancel that came between the registration and here ends the wait now.
                if waiterBox.withLock({ box in
                    (box.id, box.deadline) = (waiter, deadline)
                    return box.cancelled
                }) {
                    deadline.cancel()
                    self.state.withLock { $0.connectionWaiters.removeValue(forKey: waiter) }?.resume(returning: false)
                }
            }
        } onCancel: {
            let (waiter, deadline) = waiterBox.withLock { box in
                box.cancelled = true
                return (box.id, box.deadline)
            }
            deadline?.cancel()
            guard let waiter else { return }  // not registered yet: registering sees the cancel
            state.withLock { $0.connectionWaiters.removeValue(forKey: waiter) }?.resume(returning: false)
        }
    }

    /// Whether a secure handshake with the peer failed since the last one that succeeded: the
    /// peer does not hold the key this client pinned, or refused this client's key.
    public var handshakeFailed: Bool { state.withLock { $0.handshakeFailed } }

    /// Whether a connection to the peer has completed its handshake and not dropped since (the
    /// socket monitor's view).
    public var isConnected: Bool { state.withLock { $0.connected } }

    /// Stops the socket thread; calls still waiting fail with `.shuttingDown`.
    public func close() {
        state.withLock { $0.closed = true }
        if !hosted { loop.requestClose() }
    }

    deinit { close() }

    func resolve(_ id: UInt64, with error: SofaError) {
        let pending = state.withLock { $0.pending.removeValue(forKey: id) }
        pending?.fail(id, error)
    }

    func resolve(_ response: Response) {
        let pending = state.withLock { $0.pending.removeValue(forKey: response.id) }
        switch pending?.delivery {
        case .decoded(let continuation)?: continuation.resume(returning: response)
        case let delivery?: delivery.deliver(.success(response.encoded()))
        case nil: break
        }
    }

    func resolve(_ id: UInt64, bytes: [UInt8]) {
        let pending = state.withLock { $0.pending.removeValue(forKey: id) }
        switch pending?.delivery {
        case .encoded(let continuation)?: continuation.resume(returning: .success(bytes))
        case .handler(let handler)?: bytes.withUnsafeBytes { handler(.success($0)) }
        case .decoded(let continuation)?:
            continuation.resume(returning: (try? Response.decode(bytes)) ?? .failure(id, SofaError(
                .malformedMessage, "\(peerName) at \(endpoint) sent a malformed response")))
        case nil: break
        }
    }
}


/// The bounds client and server agree on unless told otherwise.
public enum BusLimits {
    /// The largest request a server takes (`SOFA_MAX_REQUEST_BYTES`), and a client sends.
    public static let defaultMaxRequestBytes = 16 << 20
    /// How long a server waits before answering a client's first request refused for a size
    /// limit (over the request size, or a bulk over the item limit); the following ones wait
    /// longer: see `BusServer.refuseSlowly`.
    public static let refusalDelayMs = 100
}
