public import SofaBus
public import SofaCore
public import SofaWire
public import Logging
internal import CZeroMQ
internal import Foundation
internal import Synchronization

/// The gateway's broker: a ROUTER socket that workers connect to, driven by `BrokerState`.
/// Like every socket here it lives on its own thread; `submit` hands jobs over through a
/// mutex-protected inbox and an eventfd.
public final class Broker: Sendable {
    public struct Snapshot: Sendable, Equatable {
        public var workers: [String]
        public var pids: [UInt32]
        public var busy: Int
        public var busyPids: [UInt32]
        public var busyWorkers: [String]
        public var queued: Int
    }

    public let endpoint: String
    /// Hands work to the socket's thread (jobs submitted, jobs whose caller went away); false once
    /// its loop is closed.
    private let post: @Sendable (Posted) -> Bool
    /// The socket's thread: the broker's own, or the server's that hosts it (`BusServer.bind`).
    private let loop: any SocketLoopControl
    /// Whether another loop runs the broker's socket (closing the broker then leaves it running).
    private let hosted: Bool
    enum Posted: Sendable {
        case job(BrokerState.Job)
        case cancel(UInt64)
    }
    /// Who waits for each job's outcome.
    private let waiting = Mutex<[UInt64: @Sendable (BrokerState.Outcome) -> Void]>([:])
    private let nextID = Mutex<UInt64>(1)
    private let snapshotBox = Mutex(Snapshot(workers: [], pids: [], busy: 0, busyPids: [], busyWorkers: [], queued: 0))

    private init(endpoint: String, loop: any SocketLoopControl, hosted: Bool, post: @escaping @Sendable (Posted) -> Bool) {
        self.endpoint = endpoint
        self.loop = loop
        self.hosted = hosted
        self.post = post
    }

    /// What the broker needs to bind, for a server that runs it on its own loop (`BusServer.bind`).
    public struct Options: Sendable {
        public var endpoint: String
        public var heartbeatMs: UInt64
        public var liveness: UInt64
        public var clientShare: Int
        public init(_ endpoint: String, heartbeatMs: UInt64 = 500, liveness: UInt64 = 3, clientShare: Int = 100) {
            self.endpoint = endpoint
            self.heartbeatMs = heartbeatMs
            self.liveness = liveness
            self.clientShare = clientShare
        }
    }

    /// A broker whose socket `loop` runs (made on its thread; `post` hands work to it), and its driver.
    static func hosted(_ options: Options, loop: any SocketLoopControl, logger: Logger,
                       post: @escaping @Sendable (Posted) -> Bool) throws(SofaError) -> (Broker, BrokerDriver) {
        let socket = try ZMQSocket(type: ZMQ_ROUTER)
        try socket.bindSecured(options.endpoint)
        let broker = Broker(endpoint: socket.lastEndpoint(), loop: loop, hosted: true, post: post)
        return (broker, BrokerDriver(broker: broker, socket: socket, logger: logger, state: BrokerState(
            heartbeatMs: options.heartbeatMs, liveness: options.liveness, clientShare: options.clientShare)))
    }

    /// `clientShare`: the percent of the workers one client's queries may occupy (see `BrokerState`).
    public static func bind(
        _ endpoint: String, heartbeatMs: UInt64 = 500, liveness: UInt64 = 3, clientShare: Int = 100, logger: Logger
    ) async throws(SofaError) -> Broker {
        try await SocketLoop.start(name: "broker") { loop throws(SofaError) in
            let socket = try ZMQSocket(type: ZMQ_ROUTER)
            try socket.bindSecured(endpoint)
            let broker = Broker(endpoint: socket.lastEndpoint(), loop: loop, hosted: false, post: { loop.post($0) })
            return (broker, BrokerDriver(broker: broker, socket: socket, logger: logger,
                                         state: BrokerState(heartbeatMs: heartbeatMs, liveness: liveness, clientShare: clientShare)))
        }
    }

    /// The thread of the broker's socket, for a lifecycle service to follow.
    public var socketLoop: any SocketLoopControl { loop }

    /// What the broker knows of its workers now.
    public var snapshot: Snapshot { snapshotBox.withLock { $0 } }

    /// Runs a request on some worker and returns its response (or a timeout/unavailable error).
    /// `client` names who sent it (its share of the workers is counted by that name).
    public func submit(_ request: Request, client: [UInt8] = [], timeout: Duration = .seconds(30)) async -> Response {
        let id = nextJobID()
        let job = BrokerState.Job(id: id, request: request, deadline: Self.localDeadline(request.deadline, timeout), client: client)
        // A cancelled caller (its client went away) cancels the job, and the worker's run of it.
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                enqueue(job) { outcome in continuation.resume(returning: outcome.response(id: id)) }
            }
        } onCancel: {
            cancel(id)
        }
    }

    /// Runs a request received encoded on some worker, without a task or a decoding: `then` gets
    /// the outcome (the worker's response as it sent it, or the broker's error), on the broker's
    /// thread, and must be quick. The worker's deadline is the request's own. `id` is the job's
    /// (`nextJobID`), for `cancel`.
    public func submit(_ request: ForwardedRequest, id: UInt64, timeout: Duration,
                       then: @escaping @Sendable (BrokerState.Outcome) -> Void) {
        enqueue(BrokerState.Job(id: id, request: request, wireDeadline: request.deadline,
                                deadline: Self.localDeadline(request.deadline, timeout), client: request.client), then)
    }

    /// The job's caller went away: it completes with `.cancelled`, and its worker stops it.
    public func cancel(_ id: UInt64) {
        _ = post(.cancel(id))
    }

    /// Stops the broker (without waiting for its socket to close); jobs still waiting fail.
    public func close() {
        if !hosted { loop.requestClose() }
    }

    /// A fresh job id (for `submit(_:id:timeout:then:)`, whose caller keeps it to cancel the job).
    public func nextJobID() -> UInt64 {
        nextID.withLock { value in
            defer { value += 1 }
            return value
        }
    }

    /// The monotonic deadline of a job whose wire deadline is `deadline` (0: none), at most `timeout` away.
    private static func localDeadline(_ deadline: UInt64, _ timeout: Duration) -> UInt64 {
        let budget = UInt64(timeout.components.seconds) * 1000
            + UInt64(timeout.components.attoseconds / 1_000_000_000_000_000)
        let remaining = deadline == 0 ? budget : min(budget, deadline &- min(deadline, wallClockMs()))
        return monotonicMs() + remaining
    }

    private func enqueue(_ job: BrokerState.Job, _ then: @escaping @Sendable (BrokerState.Outcome) -> Void) {
        waiting.withLock { $0[job.id] = then }
        if !post(.job(job)) {
            complete(job.id, .failed(SofaError(.shuttingDown, "the broker is shutting down")))
        }
    }

    fileprivate func complete(_ id: UInt64, _ outcome: BrokerState.Outcome) {
        let then = waiting.withLock { $0.removeValue(forKey: id) }
        then?(outcome)
    }

    /// The loop ended: every job still waiting fails.
    fileprivate func closed() {
        let left = waiting.withLock { waiting in
            defer { waiting.removeAll() }
            return waiting
        }
        for then in left.values { then(.failed(SofaError(.shuttingDown, "the broker is shutting down"))) }
    }

    fileprivate func publish(_ snapshot: Snapshot) {
        snapshotBox.withLock { $0 = snapshot }
    }
}

/// The broker's socket side, on its loop's thread: drives `BrokerState` with the jobs posted, the
/// workers' frames and the clock, and carries out what it decides.
final class BrokerDriver: SocketLoopDriver {
    let broker: Broker
    let socket: ZMQSocket
    let sockets: [ZMQSocket]
    let logger: Logger
    var state: BrokerState
    let pollTimeoutMs: Int
    /// The workers whose READY said they take batches: the jobs of a turn go to each in batches.
    let batchingWorkers = BatchingPeers()

    init(broker: Broker, socket: ZMQSocket, logger: Logger, state: BrokerState) {
        self.broker = broker
        self.socket = socket
        self.sockets = [socket]
        self.logger = logger
        self.state = state
        self.pollTimeoutMs = max(10, Int(state.heartbeatMs / 4))
    }

    func turn(posted: [Broker.Posted], readable: [Bool]) {
        var actions: [BrokerState.Action] = []
        let clock = monotonicMs()
        for item in posted {
            switch item {
            case .job(let job): actions += state.submit(job, now: clock)
            case .cancel(let id): actions += state.cancel(id)
            }
        }
        let now = monotonicMs()
        if readable[0] {
            while let received = try? socket.receive(limit: 256 << 20) {
                guard case .message(let frames) = received, frames.count == 2 else { continue }
                for message in WireBatch.unpacked(frames[1]).messages {
                    guard let frame = try? WorkerFrame.decode(message) else { continue }
                    if frame.kind == .ready {
                        logger.info("query worker joined", metadata: ["instance": "\(frame.instance)", "pid": "\(frame.pid)"])
                        if frame.batches { batchingWorkers.add(frames[0]) }
                    }
                    actions += state.received(frame, from: frames[0], now: now)
                }
            }
        }
        let before = state.workers.count
        actions += state.tick(now: now)
        if state.workers.count < before {
            logger.warning("query worker lost", metadata: ["remaining": "\(state.workers.count)"])
        }
        // A worker's jobs of this turn go together (in order, and before any other frame to it).
        var jobs: [(identity: [UInt8], frames: [[UInt8]])] = []
        func flush(_ index: Int) {
            for message in WireBatch.grouped(jobs[index].frames) { _ = try? socket.send([jobs[index].identity, message]) }
            jobs.remove(at: index)
        }
        for action in actions {
            switch action {
            case .send(let identity, let frame):
                let queued = jobs.firstIndex { $0.identity == identity }
                if frame.kind == .request, queued != nil || batchingWorkers.contains(identity) {
                    if let queued { jobs[queued].frames.append(frame.encoded()) } else { jobs.append((identity, [frame.encoded()])) }
                    continue
                }
                if let queued { flush(queued) }
                _ = try? socket.send([identity, frame.encoded()])
            case .complete(let id, let outcome):
                broker.complete(id, outcome)
            }
        }
        while !jobs.isEmpty { flush(jobs.count - 1) }
        // The snapshot (for status and tests) is made at most every `snapshotEveryMs`, and at once
        // when a worker joined or left: made on every turn (sorting the workers, five arrays),
        // it was work on the path of every query the gateway's thread passed on.
        let changed = state.membership != publishedMembership
        // (An idle broker still turns on its clock, so the last change shows within its poll period.)
        if changed || now &- publishedAt >= Self.snapshotEveryMs { publish(now: now) }
    }

    /// How often, at most, the snapshot is made while the broker is busy.
    static let snapshotEveryMs: UInt64 = 5
    private var publishedAt: UInt64 = 0
    private var publishedMembership = -1

    private func publish(now: UInt64) {
        publishedAt = now
        publishedMembership = state.membership
        let workers = state.workers.values.sorted { $0.instance < $1.instance }
        broker.publish(Broker.Snapshot(workers: workers.map(\.instance), pids: workers.map(\.pid),
                                       busy: state.busyCount, busyPids: workers.filter { $0.job != nil }.map(\.pid),
                                       busyWorkers: workers.filter { $0.job != nil }.map(\.instance),
                                       queued: state.queuedCount))
    }

    func finish(posted: [Broker.Posted]) {
        broker.closed()
    }
}
