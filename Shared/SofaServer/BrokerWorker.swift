import SofaBus
public import SofaCore
import SofaWire
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
    private let wakeup: Wakeup
    private let state = Mutex<(outbox: [WorkerFrame], closed: Bool, connected: Bool)>(([], false, false))
    private let stopped = Mutex<CheckedContinuation<Void, Never>?>(nil)
    /// The handler tasks running, by request id: CANCEL cancels one.
    private let running = Mutex<[UInt64: Task<Void, Never>]>([:])

    /// Jobs the broker may hand this worker at once (READY says so): with more than one, the next
    /// job is already here when one ends.
    public let capacity: Int

    private init(instance: String, wakeup: Wakeup, capacity: Int) {
        self.instance = instance
        self.wakeup = wakeup
        self.capacity = max(1, capacity)
    }

    /// Whether the broker has been heard from recently.
    public var isConnected: Bool { state.withLock { $0.connected } }

    public static func start(
        broker endpoint: String, service: String, instance: String, heartbeatMs: UInt64 = 500,
        liveness: UInt64 = 3, capacity: Int = 1, logger: Logger, handler: @escaping BusServer.Handler
    ) throws(SofaError) -> BrokerWorker {
        let worker = BrokerWorker(instance: instance, wakeup: try Wakeup(), capacity: capacity)
        let thread = Thread {
            worker.run(endpoint, service: service, heartbeatMs: heartbeatMs, liveness: liveness,
                       logger: logger, handler: handler)
        }
        thread.name = "worker-\(instance)"
        thread.start()
        return worker
    }

    /// Says DISCONNECT to the broker and stops.
    public func close() async {
        await withCheckedContinuation { continuation in
            stopped.withLock { $0 = continuation }
            state.withLock { $0.closed = true }
            wakeup.signal()
        }
    }

    private func makeSocket(_ endpoint: String, service: String, logger: Logger) -> ZMQSocket? {
        do throws(SofaError) {
            let socket = try ZMQSocket(type: ZMQ_DEALER)
            try socket.set(ZMQ_RECONNECT_IVL, 50)
            try socket.set(ZMQ_RECONNECT_IVL_MAX, 1000)
            try socket.connect(endpoint)
            let ready = WorkerFrame(kind: .ready, instance: instance, pid: UInt32(getpid()), service: service,
                                    capacity: UInt32(capacity))
            _ = try socket.send([ready.encoded()])
            return socket
        } catch {
            logger.error("cannot connect to the broker", metadata: ["endpoint": "\(endpoint)", "error": "\(error)"])
            return nil
        }
    }

    private func run(_ endpoint: String, service: String, heartbeatMs: UInt64, liveness: UInt64,
                     logger: Logger, handler: @escaping BusServer.Handler) {
        var socket = makeSocket(endpoint, service: service, logger: logger)
        var lastHeard = monotonicMs()
        var lastSent = monotonicMs()
        while true {
            guard let current = socket else {
                // A bad endpoint: retry now and then until closed.
                if state.withLock({ $0.closed }) { break }
                _ = try? poll([], fds: [wakeup.fd], timeoutMs: 1000)
                wakeup.drain()
                socket = makeSocket(endpoint, service: service, logger: logger)
                continue
            }
            guard let ready = try? poll([current], fds: [wakeup.fd], timeoutMs: Int(heartbeatMs / 2)) else { continue }
            if ready[1] { wakeup.drain() }
            let (outgoing, closed) = state.withLock { state in
                defer { state.outbox.removeAll() }
                return (state.outbox, state.closed)
            }
            for frame in outgoing {
                _ = try? current.send([frame.encoded()])
                lastSent = monotonicMs()
            }
            if closed {
                _ = try? current.send([WorkerFrame(kind: .disconnect, instance: instance).encoded()])
                break
            }
            let now = monotonicMs()
            if ready[0] {
                while let received = try? current.receive(limit: 256 << 20) {
                    guard case .message(let frames) = received, let last = frames.last,
                          let frame = try? WorkerFrame.decode(last) else { continue }
                    lastHeard = now
                    state.withLock { $0.connected = true }
                    switch frame.kind {
                    case .request:
                        guard let request = try? Request.decode(frame.payload) else {
                            enqueue(WorkerFrame(kind: .reply, payload: Response.failure(0, SofaError(
                                .malformedMessage, "the worker got a malformed request")).encoded()))
                            continue
                        }
                        // The task is registered before it can finish (and unregister itself).
                        running.withLock { running in
                            running[request.id] = Task {
                                var response = await handler(request)
                                response.id = request.id
                                self.running.withLock { _ = $0.removeValue(forKey: request.id) }
                                self.enqueue(WorkerFrame(kind: .reply, payload: response.encoded()))
                            }
                        }
                    case .cancel:
                        running.withLock { $0[frame.requestID] }?.cancel()
                    case .disconnect:
                        // The broker does not know us (it restarted): announce again.
                        _ = try? current.send([WorkerFrame(kind: .ready, instance: instance, pid: UInt32(getpid()),
                                                           service: service, capacity: UInt32(capacity)).encoded()])
                    case .heartbeat, .ready, .reply:
                        break
                    }
                }
            }
            if now &- lastSent >= heartbeatMs {
                _ = try? current.send([WorkerFrame(kind: .heartbeat, instance: instance).encoded()])
                lastSent = now
            }
            if now &- lastHeard > heartbeatMs * liveness {
                // The broker is gone or restarted: start over with a fresh socket.
                state.withLock { $0.connected = false }
                socket = nil
                socket = makeSocket(endpoint, service: service, logger: logger)
                lastHeard = now
            }
        }
        socket = nil
        state.withLock { $0.connected = false }
        stopped.withLock { $0.take() }?.resume()
    }

    private func enqueue(_ frame: WorkerFrame) {
        state.withLock { $0.outbox.append(frame) }
        wakeup.signal()
    }
}
