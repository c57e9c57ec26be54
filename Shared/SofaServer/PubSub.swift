import SofaBus
public import SofaCore
public import Logging
internal import CZeroMQ
internal import Foundation
internal import Synchronization

/// A PUB socket on its own thread. `publish` never blocks: messages are queued for the socket
/// thread, and ZeroMQ drops what a slow subscriber cannot take (subscribers recover from the
/// changes feed, so a notice is a wake-up call, never the only copy of a change).
public final class Publisher: Sendable {
    public let endpoint: String
    private let wakeup: Wakeup
    private let state = Mutex<(outbox: [[[UInt8]]], closed: Bool)>(([], false))
    private let stopped = Mutex<CheckedContinuation<Void, Never>?>(nil)

    private init(endpoint: String, wakeup: Wakeup) {
        self.endpoint = endpoint
        self.wakeup = wakeup
    }

    public static func bind(_ endpoint: String, name: String) async throws(SofaError) -> Publisher {
        let wakeup = try Wakeup()
        let bound: Result<Publisher, SofaError> = await withCheckedContinuation { continuation in
            let thread = Thread {
                let socket: ZMQSocket
                do throws(SofaError) {
                    socket = try ZMQSocket(type: ZMQ_PUB)
                    try socket.set(ZMQ_SNDHWM, 100_000)
                    try socket.bind(endpoint)
                } catch {
                    continuation.resume(returning: .failure(error))
                    return
                }
                let publisher = Publisher(endpoint: socket.lastEndpoint(), wakeup: wakeup)
                continuation.resume(returning: .success(publisher))
                publisher.run(socket)
            }
            thread.name = "publisher-\(name)"
            thread.start()
        }
        return try bound.get()
    }

    public func publish(topic: [UInt8], payload: [UInt8]) {
        let closed = state.withLock { state in
            if !state.closed { state.outbox.append([topic, payload]) }
            return state.closed
        }
        if !closed { wakeup.signal() }
    }

    public func close() async {
        await withCheckedContinuation { continuation in
            stopped.withLock { $0 = continuation }
            let already = state.withLock { state in
                defer { state.closed = true }
                return state.closed
            }
            if already { stopped.withLock { $0.take() }?.resume() } else { wakeup.signal() }
        }
    }

    private func run(_ socket: ZMQSocket) {
        while true {
            _ = try? poll([], fds: [wakeup.fd], timeoutMs: 1000)
            wakeup.drain()
            let (messages, closed) = state.withLock { state in
                defer { state.outbox.removeAll(keepingCapacity: true) }
                return (state.outbox, state.closed)
            }
            for message in messages { _ = try? socket.send(message) }
            if closed { break }
        }
        withExtendedLifetime(socket) {}
        stopped.withLock { $0.take() }?.resume()
    }
}

/// A SUB socket on its own thread, subscribed to every topic, handing each message's frames to
/// `deliver` on that thread (which must return quickly). Reconnects by itself.
public final class Subscriber: Sendable {
    private let wakeup: Wakeup
    private let closed = Mutex(false)

    private init(wakeup: Wakeup) { self.wakeup = wakeup }

    public static func connect(
        _ endpoint: String, name: String, logger: Logger, deliver: @escaping @Sendable ([[UInt8]]) -> Void
    ) async throws(SofaError) -> Subscriber {
        let subscriber = Subscriber(wakeup: try Wakeup())
        let started: Result<Void, SofaError> = await withCheckedContinuation { continuation in
            let thread = Thread {
                let socket: ZMQSocket
                do throws(SofaError) {
                    socket = try ZMQSocket(type: ZMQ_SUB)
                    try socket.set(ZMQ_RCVHWM, 100_000)
                    try socket.set(ZMQ_RECONNECT_IVL, 50)
                    try socket.set(ZMQ_RECONNECT_IVL_MAX, 1000)
                    try socket.set(ZMQ_SUBSCRIBE, bytes: [])
                    try socket.connect(endpoint)
                } catch {
                    continuation.resume(returning: .failure(error))
                    return
                }
                continuation.resume(returning: .success(()))
                subscriber.run(socket, deliver: deliver)
            }
            thread.name = "subscriber-\(name)"
            thread.start()
        }
        try started.get()
        return subscriber
    }

    public func close() {
        closed.withLock { $0 = true }
        wakeup.signal()
    }

    private func run(_ socket: ZMQSocket, deliver: @Sendable ([[UInt8]]) -> Void) {
        while !closed.withLock({ $0 }) {
            guard let ready = try? poll([socket], fds: [wakeup.fd], timeoutMs: 1000) else { continue }
            if ready[1] { wakeup.drain() }
            guard ready[0] else { continue }
            while let received = try? socket.receive(limit: 64 << 20) {
                if case .message(let frames) = received { deliver(frames) }
            }
        }
        withExtendedLifetime(socket) {}
    }
}
