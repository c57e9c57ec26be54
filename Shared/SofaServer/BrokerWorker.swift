public import SofaBus
public import SofaCore
public import SofaWire
public import Logging
internal import CZeroMQ
internal import Foundation
internal import Synchronization

/// The worker side of the broker protocol: a DEALER connected to the broker, on its own thread.
/// It announces itself (READY, with its capacity), heartbeats, hands each request to the
/// handler in a task of its own, and sends the reply back; CANCEL cancels the handler's task (its client went away).
/// When the broker is silent for too long it reconnects with a
/// fresh socket and announces itself again; on close it says DISCONNECT.
public final class BrokerWorker: Sendable {
    public let instance: String
    /// The socket's thread; posted: replies to send.
    private let loop: SocketLoop<WorkerFrame>
    private let connected = Mutex(false)
    /// The handler tasks running, by request id: CANCEL cancels one.
    private let running = Mutex<[UInt64: Task<Void, Never>]>([:])
    /// The requests taken by the direct handler and not yet answered: how to cancel each.
    private let runningDirect = Mutex<[UInt64: DirectRun]>([:])
    /// Takes a request without a task, on the socket thread (it must not block): answers it
    /// through the function given (from any thread, once) and returns how to cancel it; or
    /// returns nil, leaving the request to the handler.
    public typealias DirectHandler = @Sendable (Request, @escaping @Sendable (Response) -> Void) -> (@Sendable () -> Void)?
    private let direct: DirectHandler?

    /// Jobs the broker may hand this worker at once (READY says so): with more than one, the next
    /// job is already here when one ends.
    public let capacity: Int

    /// See `start`.
    fileprivate let batchBegins: (@Sendable () -> Void)?
    fileprivate let batchEnds: (@Sendable () -> Void)?

    private init(instance: String, loop: SocketLoop<WorkerFrame>, capacity: Int, direct: DirectHandler?,
                 batchBegins: (@Sendable () -> Void)?, batchEnds: (@Sendable () -> Void)?) {
        self.instance = instance
        self.loop = loop
        self.capacity = max(1, capacity)
        self.direct = direct
        self.batchBegins = batchBegins
        self.batchEnds = batchEnds
    }

    /// Whether the broker has been heard from recently.
    public var isConnected: Bool { connected.withLock { $0 } }

    /// The thread of this worker's socket, for a lifecycle service to follow.
    public var socketLoop: any SocketLoopControl { loop }

    /// `batchBegins` and `batchEnds` are called on the socket thread before the worker takes up
    /// the jobs waiting on its socket and after it has taken them all: `direct` may hold jobs in
    /// between and run them together then.
    public static func start(
        broker endpoint: String, service: String, instance: String, heartbeatMs: UInt64 = 500,
        liveness: UInt64 = 3, capacity: Int = 1, logger: Logger, direct: DirectHandler? = nil,
        batchBegins: (@Sendable () -> Void)? = nil, batchEnds: (@Sendable () -> Void)? = nil,
        handler: @escaping BusServer.Handler
    ) async throws(SofaError) -> BrokerWorker {
        try await SocketLoop.start(name: "worker-\(instance)") { loop in
            let worker = BrokerWorker(instance: instance, loop: loop, capacity: capacity, direct: direct,
                                      batchBegins: batchBegins, batchEnds: batchEnds)
            return (worker, WorkerDriver(worker: worker, endpoint: endpoint, service: service, heartbeatMs: heartbeatMs,
                                         liveness: liveness, logger: logger, handler: handler))
        }
    }

    /// Says DISCONNECT to the broker and stops.
    public func close() async {
        await loop.close()
    }

    fileprivate func setConnected(_ value: Bool) {
        connected.withLock { $0 = value }
    }

    /// Runs `request`: by the direct handler if it takes it, else in a task of its own; its reply
    /// goes back through the loop.
    fileprivate func run(_ request: Request, handler: @escaping BusServer.Handler) {
        if let direct {
            let run = DirectRun()
            // Registered before it can finish (and unregister itself).
            runningDirect.withLock { $0[request.id] = run }
            let cancel = direct(request) { response in
                var response = response
                response.id = request.id
                self.runningDirect.withLock { _ = $0.removeValue(forKey: request.id) }
                self.loop.post(WorkerFrame(kind: .reply, payload: response.encoded()))
            }
            if let cancel {
                run.set(cancel)
                return
            }
            runningDirect.withLock { _ = $0.removeValue(forKey: request.id) }
        }
        runInTask(request, handler: handler)
    }

    /// Requests larger than this are decoded off the socket thread (`decodeAndRun`).
    public static let inlineDecodeBytes = 64 << 10

    /// Decodes a large request in a task of its own and hands it to the handler there. Decoding
    /// parses the query's parameters (JSON), which nothing bounds but the request's size: on the
    /// socket thread, which carries the heartbeats, megabytes of them would keep the worker
    /// silent. The task is registered under the id read from the request's first bytes, so that
    /// CANCEL reaches it as any other.
    fileprivate func decodeAndRun(_ payload: [UInt8], handler: @escaping BusServer.Handler) {
        let id = Request.peekID(Array(payload.prefix(11))) ?? 0
        runInTask(id) { () async -> Response in
            do throws(SofaError) {
                return await handler(try Request.decode(payload))
            } catch {
                return .failure(id, SofaError(.malformedMessage, "the worker got a malformed request: \(error.message)"))
            }
        }
    }

    private func runInTask(_ request: Request, handler: @escaping BusServer.Handler) {
        runInTask(request.id) { await handler(request) }
    }

    /// Answers request `id` with what `respond` makes, in a task registered under `id` (CANCEL
    /// cancels it).
    private func runInTask(_ id: UInt64, _ respond: @escaping @Sendable () async -> Response) {
        // The task is registered before it can finish (and unregister itself).
        running.withLock { running in
            running[id] = Task {
                var response = await respond()
                response.id = id
                self.running.withLock { _ = $0.removeValue(forKey: id) }
                self.loop.post(WorkerFrame(kind: .reply, payload: response.encoded()))
            }
        }
    }

    fileprivate func post(_ frame: WorkerFrame) {
        loop.post(frame)
    }

    fileprivate func cancel(_ id: UInt64) {
        running.withLock { $0[id] }?.cancel()
        runningDirect.withLock { $0[id] }?.cancel()
    }
}

/// How to cancel a request the direct handler took; a cancel that comes before the handler has
/// returned its canceller is applied as soon as it has.
private final class DirectRun: Sendable {
    private let state = Mutex<(cancel: (@Sendable () -> Void)?, cancelled: Bool)>((nil, false))

    func set(_ cancel: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            state.cancel = cancel
            return state.cancelled
        }
        if now { cancel() }
    }

    func cancel() {
        let cancel = state.withLock { state in
            state.cancelled = true
            return state.cancel
        }
        cancel?()
    }
}

/// The worker's socket side, on its loop's thread: announces, heartbeats, takes requests, sends
/// replies, and starts over with a fresh socket when the broker has been silent too long.
private final class WorkerDriver: SocketLoopDriver {
    let worker: BrokerWorker
    let endpoint: String
    let service: String
    let heartbeatMs: UInt64
    let liveness: UInt64
    let logger: Logger
    let handler: BusServer.Handler
    private var socket: ZMQSocket?
    private var lastHeard = monotonicMs()
    private var lastSent = monotonicMs()
    /// The broker sent a batch of frames: it takes them, and gets the replies in batches too.
    private var brokerBatches = false

    init(worker: BrokerWorker, endpoint: String, service: String, heartbeatMs: UInt64, liveness: UInt64,
         logger: Logger, handler: @escaping BusServer.Handler) {
        self.worker = worker
        self.endpoint = endpoint
        self.service = service
        self.heartbeatMs = heartbeatMs
        self.liveness = liveness
        self.logger = logger
        self.handler = handler
        self.socket = makeSocket()
    }

    var sockets: [ZMQSocket] { socket.map { [$0] } ?? [] }
    /// Without a socket (a bad endpoint), a new try now and then.
    var pollTimeoutMs: Int { socket == nil ? 1000 : Int(heartbeatMs / 2) }

    private var ready: WorkerFrame {
        WorkerFrame(kind: .ready, instance: worker.instance, pid: UInt32(getpid()), service: service,
                    capacity: UInt32(worker.capacity), batches: true)
    }

    private func makeSocket() -> ZMQSocket? {
        do throws(SofaError) {
            let socket = try ZMQSocket(type: ZMQ_DEALER)
            try socket.set(ZMQ_RECONNECT_IVL, 50)
            try socket.set(ZMQ_RECONNECT_IVL_MAX, 1000)
            try socket.connectSecured(endpoint, Curve.internalClient)
            _ = try socket.send([ready.encoded()])
            return socket
        } catch {
            logger.error("cannot connect to the broker", metadata: ["endpoint": "\(endpoint)", "error": "\(error)"])
            return nil
        }
    }

    func turn(posted: [WorkerFrame], readable: [Bool]) {
        guard let current = socket else {
            socket = makeSocket()
            return
        }
        if !posted.isEmpty {
            let encoded = posted.map { $0.encoded() }
            for message in brokerBatches ? WireBatch.grouped(encoded) : encoded { _ = try? current.send([message]) }
            lastSent = monotonicMs()
        }
        let now = monotonicMs()
        if readable[0] {
            worker.batchBegins?()
            defer { worker.batchEnds?() }
            while let received = try? current.receive(limit: 256 << 20) {
                guard case .message(let frames) = received, let last = frames.last else { continue }
                let (messages, isBatch) = WireBatch.unpacked(last)
                if isBatch { brokerBatches = true }
                for message in messages { take(message, on: current, now: now) }
            }
        }
        if now &- lastSent >= heartbeatMs {
            _ = try? current.send([WorkerFrame(kind: .heartbeat, instance: worker.instance).encoded()])
            lastSent = now
        }
        if now &- lastHeard > heartbeatMs * liveness {
            // The broker is gone or restarted: start over with a fresh socket.
            worker.setConnected(false)
            socket = nil
            socket = makeSocket()
            lastHeard = now
            brokerBatches = false
        }
    }

    /// One frame from the broker.
    private func take(_ message: [UInt8], on current: ZMQSocket, now: UInt64) {
        guard let frame = try? WorkerFrame.decode(message) else { return }
        lastHeard = now
        worker.setConnected(true)
        switch frame.kind {
        case .request:
            guard frame.payload.count <= BrokerWorker.inlineDecodeBytes else {
                return worker.decodeAndRun(frame.payload, handler: handler)
            }
            guard let request = try? Request.decode(frame.payload) else {
                worker.post(WorkerFrame(kind: .reply, payload: Response.failure(0, SofaError(
                    .malformedMessage, "the worker got a malformed request")).encoded()))
                return
            }
            worker.run(request, handler: handler)
        case .cancel:
            worker.cancel(frame.requestID)
        case .disconnect:
            // The broker does not know us (it restarted): announce again.
            brokerBatches = false
            _ = try? current.send([ready.encoded()])
        case .heartbeat, .ready, .reply:
            break
        }
    }

    func finish(posted: [WorkerFrame]) {
        if let current = socket {
            for frame in posted { _ = try? current.send([frame.encoded()]) }
            _ = try? current.send([WorkerFrame(kind: .disconnect, instance: worker.instance).encoded()])
        }
        socket = nil
        worker.setConnected(false)
    }
}
