public import SofaCore
public import SofaWire
internal import CZeroMQ
internal import Foundation
internal import Synchronization

// A `BusClient`'s socket side: the driver its loop (or a hosting loop) runs, and what it does
// with answers, connection events and deadlines.

/// A `BusClient` whose socket another socket loop runs, beside its own sockets (a server that
/// passes requests on to a service, so that they cross no other thread): made on that loop's
/// thread, and driven by its driver there — `sockets` polled with its own, `turn` with what
/// was posted for this client and which of `sockets` are readable, `finish` as the loop ends.
public final class HostedBusClient {
    public let client: BusClient
    private let driver: ClientDriver

    /// `post` hands a request to the hosting loop (for this client's `turn`); false once closed.
    public init(_ endpoint: String, peerName: String, maxResponseBytes: Int = 256 << 20,
                maxRequestBytes: Int = BusLimits.defaultMaxRequestBytes, curve: ClientKeys? = Curve.internalClient,
                loop: any SocketLoopControl,
                post: @escaping @Sendable ((UInt64, EncodedMessage)) -> Bool) throws(SofaError) {
        client = BusClient(endpoint: endpoint, peerName: peerName, maxResponseBytes: maxResponseBytes,
                           maxRequestBytes: maxRequestBytes, loop: loop, hosted: true, post: post)
        driver = try ClientDriver(client, curve: curve)
    }

    public var sockets: [ZMQSocket] { driver.sockets }
    /// How often `turn` must come at the least (the client's deadline checks).
    public var pollTimeoutMs: Int { driver.pollTimeoutMs }

    public func turn(posted: [(UInt64, EncodedMessage)], readable: [Bool]) {
        driver.turn(posted: posted, readable: readable)
    }

    public func finish() {
        driver.finish(posted: [])
    }
}

/// The socket side of a `BusClient`, on its loop's thread: sends what callers posted, matches
/// answers to calls, follows the connection through the socket monitor, expires calls.
final class ClientDriver: SocketLoopDriver {
    let client: BusClient
    let socket: ZMQSocket
    let monitor: ZMQSocket
    let sockets: [ZMQSocket]
    var pollTimeoutMs: Int { 20 }
    /// With batches, tasks on this thread send theirs 16 at a time: the peer starts on the first
    /// while the others are being made.
    var postsPerTurn: Int { client.batches ? 16 : .max }
    private var lastScan = monotonicMs()

    init(_ client: BusClient, curve: ClientKeys?) throws(SofaError) {
        self.client = client
        socket = try ZMQSocket(type: ZMQ_DEALER)
        try socket.set(ZMQ_IMMEDIATE, 1)  // never queue a request for a peer that is not connected
        try socket.set(ZMQ_SNDHWM, 100_000)
        try socket.set(ZMQ_RCVHWM, 100_000)
        try socket.set(ZMQ_RECONNECT_IVL, 50)
        try socket.set(ZMQ_RECONNECT_IVL_MAX, 1000)
        let monitorEndpoint = "inproc://monitor-\(UUID().uuidString)"
        guard zmq_socket_monitor(socket.handle, monitorEndpoint,
                                 ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED | Self.handshakeFailures) == 0 else {
            throw zmqError("zmq_socket_monitor")
        }
        do throws(SofaError) {
            monitor = try ZMQSocket(type: ZMQ_PAIR)
            try monitor.connect(monitorEndpoint)
            try socket.connectSecured(client.endpoint, curve)
        } catch {
            // Not started: the monitor stops before its sockets close (see `finish`).
            zmq_socket_monitor(socket.handle, nil, 0)
            throw error
        }
        sockets = [socket, monitor]
    }

    /// The monitor's events of a handshake that failed (a CURVE server that does not hold the
    /// pinned key, or that refused this client's).
    static let handshakeFailures = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
        | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH

    func turn(posted: [(UInt64, EncodedMessage)], readable: [Bool]) {
        if client.batches, posted.count > 1 {
            send(batching: posted)
        } else {
            for (id, message) in posted { client.sent(id, accepted: (try? socket.send([], message)) ?? false) }
        }
        if readable[0] { client.receiveAll(socket) }
        if readable[1] { client.monitorEvents(monitor) }
        let now = monotonicMs()
        if now &- lastScan >= 10 {
            lastScan = now
            client.expire(now: now)
        }
    }

    /// Sends the calls posted together, in order, as `WireBatch.groups` makes them up: the small
    /// ones in batches, the others alone.
    private func send(batching posted: [(UInt64, EncodedMessage)]) {
        for range in WireBatch.groups(posted.map(\.1.count)) {
            guard range.count > 1 else {
                let (id, message) = posted[range.lowerBound]
                client.sent(id, accepted: (try? socket.send([], message)) ?? false)
                continue
            }
            let accepted = (try? socket.send([], WireBatch.encoded(posted[range].map(\.1.bytes)))) ?? false
            for (id, _) in posted[range] { client.sent(id, accepted: accepted) }
        }
    }

    func finish(posted: [(UInt64, EncodedMessage)]) {
        // Stop the monitor before closing its sockets: ZeroMQ's I/O thread would otherwise block
        // for good delivering a disconnect event to a PAIR socket that nobody reads any more.
        zmq_socket_monitor(socket.handle, nil, 0)
        client.closed()
    }
}

extension BusClient {
    /// A request went to the socket (`accepted`) or could not.
    func sent(_ id: UInt64, accepted: Bool) {
        if accepted {
            state.withLock { $0.pending[id]?.sent = true }
        } else {
            resolve(id, with: .unavailable("\(peerName) at \(endpoint) is not reachable"))
        }
    }

    /// The socket loop ended: every call still waiting fails.
    func closed() {
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

    func receiveAll(_ socket: ZMQSocket) {
        // Each response is taken where ZeroMQ holds it: a big one is not copied first, and a
        // batch's are taken one by one in place.
        let take = { (bytes: UnsafeRawBufferPointer) in
            switch WireBatch.contents(bytes) {
            case .single: self.take(bytes)
            case .items(let items): for item in items { self.take(item) }
            case .malformed(let reason): self.malformed(reason)
            }
        }
        while (try? socket.receive(limit: maxResponseBytes, last: take)) != nil {}
    }

    /// One response: to the caller that waits for it (the answer to a `forward` is not decoded
    /// at all: its bytes go back as they came).
    private func take(_ bytes: UnsafeRawBufferPointer) {
        if let id = ForwardedResponse.peekID(bytes), id != 0 {
            let wanted = state.withLock { state -> (bytes: Bool, handler: Pending.Delivery?) in
                guard let pending = state.pending[id], pending.wantsBytes else { return (false, nil) }
                guard case .handler = pending.delivery else { return (true, nil) }
                return (true, state.pending.removeValue(forKey: id)?.delivery)
            }
            if case .handler(let handler)? = wanted.handler { return handler(.success(bytes)) }
            if wanted.bytes { return resolve(id, bytes: Array(bytes.bindMemory(to: UInt8.self))) }
        }
        do throws(SofaError) {
            resolve(try Response.decode(bytes))
        } catch {
            malformed(error.message)
        }
    }

    /// An answer that is no `Response` at all: calls that time out after it say so.
    private func malformed(_ message: String) {
        let now = monotonicMs()
        state.withLock { $0.lastMalformed = (now, message) }
    }

    /// Connection events. A monitor message's first frame starts with the event as a 16-bit
    /// little-endian number. After a disconnect, calls already sent will get no answer on this
    /// connection; after a handshake, waiters for the connection are let go.
    func monitorEvents(_ monitor: ZMQSocket) {
        var dropped = false
        var last: Int32?
        while case .message(let frames)? = try? monitor.receive() {
            guard let head = frames.first, head.count >= 2 else { continue }
            let event = Int32(head[0]) | Int32(head[1]) << 8
            if event == ZMQ_EVENT_DISCONNECTED { dropped = true }
            if event & ClientDriver.handshakeFailures != 0 {
                state.withLock { $0.handshakeFailed = true }
                continue
            }
            last = event
        }
        if let last {
            let connected = last == ZMQ_EVENT_HANDSHAKE_SUCCEEDED
            let waiters = state.withLock { state in
                state.connected = connected
                if connected { state.handshakeFailed = false }
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

    func expire(now: UInt64) {
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
}
