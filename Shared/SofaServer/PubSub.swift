public import SofaBus
public import SofaCore
public import Logging
internal import CZeroMQ

/// A PUB socket on its own thread. `publish` never blocks: messages are queued for the socket
/// thread, and ZeroMQ drops what a slow subscriber cannot take (subscribers recover from the
/// changes feed, so a notice is a wake-up call, never the only copy of a change).
public final class Publisher: Sendable {
    public let endpoint: String
    /// The socket's thread; posted: messages (topic, payload) to publish.
    private let loop: SocketLoop<[[UInt8]]>

    private init(endpoint: String, loop: SocketLoop<[[UInt8]]>) {
        self.endpoint = endpoint
        self.loop = loop
    }

    public static func bind(_ endpoint: String, name: String) async throws(SofaError) -> Publisher {
        try await SocketLoop.start(name: "publisher-\(name)") { loop throws(SofaError) in
            let socket = try ZMQSocket(type: ZMQ_PUB)
            try socket.set(ZMQ_SNDHWM, 100_000)
            try socket.bindSecured(endpoint)
            return (Publisher(endpoint: socket.lastEndpoint(), loop: loop), PublisherDriver(socket: socket))
        }
    }

    /// The thread of this publisher's socket, for a lifecycle service to follow.
    public var socketLoop: any SocketLoopControl { loop }

    public func publish(topic: [UInt8], payload: [UInt8]) {
        loop.post([topic, payload])
    }

    /// Publishes what was posted before, then closes the socket; returns once it is closed.
    public func close() async {
        await loop.close()
    }
}

private final class PublisherDriver: SocketLoopDriver {
    let socket: ZMQSocket
    var sockets: [ZMQSocket] { [] }
    var pollTimeoutMs: Int { 1000 }

    init(socket: ZMQSocket) { self.socket = socket }

    func turn(posted: [[[UInt8]]], readable: [Bool]) {
        for message in posted { _ = try? socket.send(message) }
    }

    func finish(posted: [[[UInt8]]]) {
        turn(posted: posted, readable: [])
    }
}

/// A SUB socket on its own thread, subscribed to every topic, handing each message's frames to
/// `deliver` on that thread (which must return quickly). Reconnects by itself.
public final class Subscriber: Sendable {
    private let loop: SocketLoop<Never>

    private init(loop: SocketLoop<Never>) { self.loop = loop }

    public static func connect(
        _ endpoint: String, name: String, logger: Logger, deliver: @escaping @Sendable ([[UInt8]]) -> Void
    ) async throws(SofaError) -> Subscriber {
        try await SocketLoop.start(name: "subscriber-\(name)") { loop throws(SofaError) in
            let socket = try ZMQSocket(type: ZMQ_SUB)
            try socket.set(ZMQ_RCVHWM, 100_000)
            try socket.set(ZMQ_RECONNECT_IVL, 50)
            try socket.set(ZMQ_RECONNECT_IVL_MAX, 1000)
            try socket.set(ZMQ_SUBSCRIBE, bytes: [])
            try socket.connectSecured(endpoint, Curve.internalClient)
            return (Subscriber(loop: loop), SubscriberDriver(socket: socket, deliver: deliver))
        }
    }

    /// The thread of this subscriber's socket, for a lifecycle service to follow.
    public var socketLoop: any SocketLoopControl { loop }

    /// Stops receiving (without waiting for the socket to close).
    public func close() {
        loop.requestClose()
    }
}

private final class SubscriberDriver: SocketLoopDriver {
    let socket: ZMQSocket
    let sockets: [ZMQSocket]
    let deliver: @Sendable ([[UInt8]]) -> Void
    var pollTimeoutMs: Int { 1000 }

    init(socket: ZMQSocket, deliver: @escaping @Sendable ([[UInt8]]) -> Void) {
        self.socket = socket
        self.sockets = [socket]
        self.deliver = deliver
    }

    func turn(posted: [Never], readable: [Bool]) {
        guard readable[0] else { return }
        while let received = try? socket.receive(limit: 64 << 20) {
            if case .message(let frames) = received { deliver(frames) }
        }
    }

    func finish(posted: [Never]) {}
}
