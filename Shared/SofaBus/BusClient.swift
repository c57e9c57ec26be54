public import SofaCore
public import SofaWire
internal import CZeroMQ
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

    private struct Pending {
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

    private struct State {
        var nextID: UInt64 = 1
        var pending: [UInt64: Pending] = [:]
        var outbox: [(UInt64, EncodedMessage)] = []
        var closed = false
        /// Whether a connection to the peer has completed its handshake (from the socket monitor).
        var connected = false
        var nextWaiter: UInt64 = 0
        var connectionWaiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        /// The last answer that was no `Response` at all (it names no call): calls that time
        /// out after it say so instead of a bare timeout.
        var lastMalformed: (atMs: UInt64, message: String)?
    }

    private let state = Mutex(State())
    private let wakeup: Wakeup
    private let maxResponseBytes: Int
    /// Requests larger than this are refused here, as the server would refuse them; past four
    /// times the server's limit ZeroMQ drops the connection, and the caller would learn only that.
    private let maxRequestBytes: Int

    private init(endpoint: String, peerName: String, maxResponseBytes: Int, maxRequestBytes: Int) throws(SofaError) {
        self.endpoint = endpoint
        self.peerName = peerName
        self.maxResponseBytes = maxResponseBytes
        self.maxRequestBytes = maxRequestBytes
        self.wakeup = try Wakeup()
    }

    /// Connects to `endpoint` (ZeroMQ connects lazily; a peer that is down is not an error here).
    public static func connect(
        _ endpoint: String, peerName: String, maxResponseBytes: Int = 256 << 20,
        maxRequestBytes: Int = BusLimits.defaultMaxRequestBytes
    ) async throws(SofaError) -> BusClient {
        let client = try BusClient(endpoint: endpoint, peerName: peerName, maxResponseBytes: maxResponseBytes,
                                   maxRequestBytes: maxRequestBytes)
        let started: Result<Void, SofaError> = await withCheckedContinuation { continuation in
            let thread = Thread { client.run(started: continuation) }
            thread.name = "bus-client-\(peerName)"
            thread.start()
        }
        try started.get()
        return client
    }

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
                let rejected: Response? = state.withLock { state in
                    if state.closed {
                        return .failure(0, SofaError(.shuttingDown, "the connection to \(peerName) is closed"))
                    }
                    let id = state.nextID
                    request.id = id
                    let encoded = request.encodedMessage()
                    guard encoded.count <= maxRequestBytes else {
                        return .failure(0, SofaError(.messageTooLarge, "the request of \(encoded.count) bytes is over the limit of "
                                                     + "\(maxRequestBytes) bytes (\(peerName)'s SOFA_MAX_REQUEST_BYTES); nothing was sent"))
                    }
                    state.nextID += 1
                    idBox.withLock { $0 = id }
                    state.pending[id] = Pending(delivery: .decoded(continuation), deadline: localDeadline, startedMs: localDeadline - budget)
                    state.outbox.append((id, encoded))
                    return nil
                }
                if let rejected {
                    continuation.resume(returning: rejected)
                } else {
                    wakeup.signal()
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
            state.outbox.append((id, request.encoded(id: id, deadline: now + budget)))
            return id
        }
        guard let id else {
            delivery.deliver(.failure(SofaError(.shuttingDown, "the connection to \(peerName) is closed")))
            return nil
        }
        wakeup.signal()
        return id
    }

    /// Waits until a connection to the peer has completed its handshake (ZeroMQ connects in the
    /// background), or `timeout` passes: true when connected. Driven by the socket monitor's events.
    public func waitUntilConnected(timeout: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let waiter: UInt64? = state.withLock { state in
                if state.connected || state.closed { return nil }
                defer { state.nextWaiter += 1 }
                state.connectionWaiters[state.nextWaiter] = continuation
                return state.nextWaiter
            }
            guard let waiter else {
                continuation.resume(returning: state.withLock { $0.connected })
                return
            }
            Task {
                try? await Task.sleep(for: timeout)  // the deadline of the wait
                self.state.withLock { $0.connectionWaiters.removeValue(forKey: waiter) }?.resume(returning: false)
            }
        }
    }

    /// Stops the socket thread; calls still waiting fail with `.shuttingDown`.
    public func close() {
        state.withLock { $0.closed = true }
        wakeup.signal()
    }

    deinit { close() }

    private func resolve(_ id: UInt64, with error: SofaError) {
        let pending = state.withLock { $0.pending.removeValue(forKey: id) }
        pending?.fail(id, error)
    }

    private func resolve(_ response: Response) {
        let pending = state.withLock { $0.pending.removeValue(forKey: response.id) }
        switch pending?.delivery {
        case .decoded(let continuation)?: continuation.resume(returning: response)
        case let delivery?: delivery.deliver(.success(response.encoded()))
        case nil: break
        }
    }

    private func resolve(_ id: UInt64, bytes: [UInt8]) {
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

extension BusClient {
    /// The socket thread.
    private func run(started: CheckedContinuation<Result<Void, SofaError>, Never>) {
        let socket: ZMQSocket
        let monitor: ZMQSocket
        do throws(SofaError) {
            socket = try ZMQSocket(type: ZMQ_DEALER)
            try socket.set(ZMQ_IMMEDIATE, 1)  // never queue a request for a peer that is not connected
            try socket.set(ZMQ_SNDHWM, 100_000)
            try socket.set(ZMQ_RCVHWM, 100_000)
            try socket.set(ZMQ_RECONNECT_IVL, 50)
            try socket.set(ZMQ_RECONNECT_IVL_MAX, 1000)
            let monitorEndpoint = "inproc://monitor-\(UUID().uuidString)"
            guard zmq_socket_monitor(socket.handle, monitorEndpoint,
                                     ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED) == 0 else {
                throw zmqError("zmq_socket_monitor")
            }
            monitor = try ZMQSocket(type: ZMQ_PAIR)
            try monitor.connect(monitorEndpoint)
            try socket.connect(endpoint)
        } catch {
            started.resume(returning: .failure(error))
            return
        }
        started.resume(returning: .success(()))
        var lastScan = monotonicMs()
        while true {
            // A failed poll reads as "nothing ready": deadlines are still checked below.
            let ready = (try? poll([socket, monitor], fds: [wakeup.fd], timeoutMs: 20)) ?? [false, false, false]
            if ready[2] { wakeup.drain() }
            let (outgoing, closed) = state.withLock { state in
                defer { state.outbox.removeAll(keepingCapacity: true) }
                return (state.outbox, state.closed)
            }
            if closed { break }
            for (id, message) in outgoing {
                let accepted = (try? socket.send([], message)) ?? false
                if accepted {
                    state.withLock { $0.pending[id]?.sent = true }
                } else {
                    resolve(id, with: .unavailable("\(peerName) at \(endpoint) is not reachable"))
                }
            }
            if ready[0] { receiveAll(socket) }
            if ready[1] { monitorEvents(monitor) }
            let now = monotonicMs()
            if now &- lastScan >= 10 {
                lastScan = now
                expire(now: now)
            }
        }
        // Stop the monitor before closing its sockets: ZeroMQ's I/O thread would otherwise block
        // for good delivering a disconnect event to a PAIR socket that nobody reads any more.
        zmq_socket_monitor(socket.handle, nil, 0)
        withExtendedLifetime(monitor) {}
        withExtendedLifetime(socket) {}
        let (remaining, waiters) = state.withLock { state in
            defer {
                state.pending.removeAll()
                state.connectionWaiters.removeAll()
            }
            return (state.pending, Array(state.connectionWaiters.values))
        }
        for waiter in waiters { waiter.resume(returning: false) }
        for (id, pending) in remaining {
            pending.fail(id, SofaError(.shuttingDown, "the connection to \(peerName) was closed"))
        }
    }

    private func receiveAll(_ socket: ZMQSocket) {
        // Each response is decoded where ZeroMQ holds it: a big one is not copied first.
        // The answer to a `forward` is not decoded at all: its bytes go back as they came.
        let decode = { (bytes: UnsafeRawBufferPointer) -> Result<Incoming, SofaError> in
            if let id = ForwardedResponse.peekID(bytes), id != 0 {
                let wanted = self.state.withLock { state -> (bytes: Bool, handler: Pending.Delivery?) in
                    guard let pending = state.pending[id], pending.wantsBytes else { return (false, nil) }
                    guard case .handler = pending.delivery else { return (true, nil) }
                    return (true, state.pending.removeValue(forKey: id)?.delivery)
                }
                if case .handler(let handler)? = wanted.handler {
                    handler(.success(bytes))
                    return .success(.delivered)
                }
                if wanted.bytes { return .success(.encoded(id, Array(bytes.bindMemory(to: UInt8.self)))) }
            }
            return Result { () throws(SofaError) in .decoded(try Response.decode(bytes)) }
        }
        while let received = try? socket.receive(limit: maxResponseBytes, last: decode) {
            guard case .message(_, let decoded) = received else { continue }
            switch decoded {
            case .success(.decoded(let response)):
                resolve(response)
            case .success(.encoded(let id, let bytes)):
                resolve(id, bytes: bytes)
            case .success(.delivered):
                break
            case .failure(let error):
                let now = monotonicMs()
                state.withLock { $0.lastMalformed = (now, error.message) }
            }
        }
    }

    /// Connection events. A monitor message's first frame starts with the event as a 16-bit
    /// little-endian number. After a disconnect, calls already sent will get no answer on this
    /// connection; after a handshake, waiters for the connection are let go.
    private func monitorEvents(_ monitor: ZMQSocket) {
        var dropped = false
        var last: Int32?
        while case .message(let frames)? = try? monitor.receive() {
            guard let head = frames.first, head.count >= 2 else { continue }
            let event = Int32(head[0]) | Int32(head[1]) << 8
            if event == ZMQ_EVENT_DISCONNECTED { dropped = true }
            last = event
        }
        if let last {
            let connected = last == ZMQ_EVENT_HANDSHAKE_SUCCEEDED
            let waiters = state.withLock { state in
                state.connected = connected
                guard connected else { return [CheckedContinuation<Bool, Never>]() }
                defer { state.connectionWaiters.removeAll() }
                return Array(state.connectionWaiters.values)
            }
            for waiter in waiters { waiter.resume(returning: true) }
        }
        guard dropped else { return }
        let lost = state.withLock { state in
            let ids = state.pending.filter { $0.value.sent }.map(\.key)
            return ids.compactMap { id in state.pending.removeValue(forKey: id).map { (id, $0) } }
        }
        for (id, pending) in lost {
            pending.fail(id, .unavailable(
                "lost the connection to \(peerName) at \(endpoint) with the call in flight; it may or may not have been applied"))
        }
    }

    private func expire(now: UInt64) {
        let (expired, malformed) = state.withLock { state in
            let ids = state.pending.filter { $0.value.deadline <= now }.map(\.key)
            return (ids.compactMap { id in state.pending.removeValue(forKey: id).map { (id, $0) } }, state.lastMalformed)
        }
        for (id, pending) in expired {
            let error: SofaError
            if let malformed, malformed.atMs >= pending.startedMs {
                error = SofaError(.malformedMessage, "\(peerName) at \(endpoint) did not answer before the deadline; "
                                  + "it sent a malformed message meanwhile: \(malformed.message)")
            } else {
                error = .timeout("\(peerName) did not answer before the deadline")
            }
            pending.fail(id, error)
        }
    }

    private enum Incoming {
        case decoded(Response)
        case encoded(UInt64, [UInt8])
        /// Handed to a `forward` handler where it was received.
        case delivered
    }
}

/// The bounds client and server agree on unless told otherwise.
public enum BusLimits {
    /// The largest request a server takes (`SOFA_MAX_REQUEST_BYTES`), and a client sends.
    public static let defaultMaxRequestBytes = 16 << 20
}
