import SofaBus
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
    private let wakeup: Wakeup
    private let inbox = Mutex<(jobs: [BrokerState.Job], cancelled: [UInt64], closed: Bool)>(([], [], false))
    private let waiting = Mutex<[UInt64: CheckedContinuation<Response, Never>]>([:])
    private let nextID = Mutex<UInt64>(1)
    private let snapshotBox = Mutex(Snapshot(workers: [], pids: [], busy: 0, busyPids: [], busyWorkers: [], queued: 0))

    private init(endpoint: String, wakeup: Wakeup) {
        self.endpoint = endpoint
        self.wakeup = wakeup
    }

    /// `clientShare`: the percent of the workers one client's queries may occupy (see `BrokerState`).
    public static func bind(
        _ endpoint: String, heartbeatMs: UInt64 = 500, liveness: UInt64 = 3, clientShare: Int = 100, logger: Logger
    ) async throws(SofaError) -> Broker {
        let wakeup = try Wakeup()
        let bound: Result<Broker, SofaError> = await withCheckedContinuation { continuation in
            let thread = Thread {
                let socket: ZMQSocket
                do throws(SofaError) {
                    socket = try ZMQSocket(type: ZMQ_ROUTER)
                    try socket.bind(endpoint)
                } catch {
                    continuation.resume(returning: .failure(error))
                    return
                }
                let broker = Broker(endpoint: socket.lastEndpoint(), wakeup: wakeup)
                continuation.resume(returning: .success(broker))
                broker.run(socket, BrokerState(heartbeatMs: heartbeatMs, liveness: liveness, clientShare: clientShare), logger: logger)
            }
            thread.name = "broker"
            thread.start()
        }
        return try bound.get()
    }

    /// What the broker knows of its workers now.
    public var snapshot: Snapshot { snapshotBox.withLock { $0 } }

    /// Runs a request on some worker and returns its response (or a timeout/unavailable error).
    /// `client` names who sent it (its share of the workers is counted by that name).
    public func submit(_ request: Request, client: [UInt8] = [], timeout: Duration = .seconds(30)) async -> Response {
        let id = nextID.withLock { value in
            defer { value += 1 }
            return value
        }
        let budget = UInt64(timeout.components.seconds) * 1000
            + UInt64(timeout.components.attoseconds / 1_000_000_000_000_000)
        let remaining = request.deadline == 0 ? budget : min(budget, request.deadline &- min(request.deadline, wallClockMs()))
        let job = BrokerState.Job(id: id, request: request, deadline: monotonicMs() + remaining, client: client)
        // A cancelled caller (its client went away) cancels the job, and the worker's run of it.
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiting.withLock { $0[id] = continuation }
                let closed = inbox.withLock { inbox in
                    if !inbox.closed { inbox.jobs.append(job) }
                    return inbox.closed
                }
                if closed {
                    complete(id, .failure(id, SofaError(.shuttingDown, "the broker is shutting down")))
                } else {
                    wakeup.signal()
                }
            }
        } onCancel: {
            inbox.withLock { $0.cancelled.append(id) }
            wakeup.signal()
        }
    }

    public func close() {
        inbox.withLock { $0.closed = true }
        wakeup.signal()
    }

    private func complete(_ id: UInt64, _ response: Response) {
        let continuation = waiting.withLock { $0.removeValue(forKey: id) }
        continuation?.resume(returning: response)
    }

    private func run(_ socket: ZMQSocket, _ initial: BrokerState, logger: Logger) {
        var state = initial
        let tickMs = max(10, Int(state.heartbeatMs / 4))
        while true {
            guard let ready = try? poll([socket], fds: [wakeup.fd], timeoutMs: tickMs) else { continue }
            if ready[1] { wakeup.drain() }
            let (jobs, cancelled, closed) = inbox.withLock { inbox in
                defer {
                    inbox.jobs.removeAll()
                    inbox.cancelled.removeAll()
                }
                return (inbox.jobs, inbox.cancelled, inbox.closed)
            }
            if closed { break }
            var actions: [BrokerState.Action] = []
            let clock = monotonicMs()
            for job in jobs { actions += state.submit(job, now: clock) }
            for id in cancelled { actions += state.cancel(id) }
            let now = monotonicMs()
            if ready[0] {
                while let received = try? socket.receive(limit: 256 << 20) {
                    guard case .message(let frames) = received, frames.count == 2,
                          let frame = try? WorkerFrame.decode(frames[1]) else { continue }
                    if frame.kind == .ready {
                        logger.info("query worker joined", metadata: ["instance": "\(frame.instance)", "pid": "\(frame.pid)"])
                    }
                    actions += state.received(frame, from: frames[0], now: now)
                }
            }
            let before = state.workers.count
            actions += state.tick(now: now)
            if state.workers.count < before {
                logger.warning("query worker lost", metadata: ["remaining": "\(state.workers.count)"])
            }
            for action in actions {
                switch action {
                case .send(let identity, let frame):
                    _ = try? socket.send([identity, frame.encoded()])
                case .complete(let id, let response):
                    complete(id, response)
                }
            }
            let workers = state.workers.values.sorted { $0.instance < $1.instance }
            snapshotBox.withLock {
                $0 = Snapshot(workers: workers.map(\.instance), pids: workers.map(\.pid),
                              busy: state.busyCount, busyPids: workers.filter { $0.job != nil }.map(\.pid),
                              busyWorkers: workers.filter { $0.job != nil }.map(\.instance),
                              queued: state.queuedCount)
            }
        }
        let left = waiting.withLock { waiting in
            defer { waiting.removeAll() }
            return waiting
        }
        for (id, continuation) in left {
            continuation.resume(returning: .failure(id, SofaError(.shuttingDown, "the broker is shutting down")))
        }
    }
}
