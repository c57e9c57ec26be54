internal import CZeroMQ
internal import Foundation
internal import SofaCluster

/// A raw DEALER socket, used by one thread for its life.
final class RawSocket {
    private let context = zmq_ctx_new()
    private let socket: UnsafeMutableRawPointer

    /// `reading` false: ZeroMQ takes one message off the connection, into a small kernel buffer,
    /// before the socket is read (a client that truly does not read).
    /// It speaks as the cluster (its secret key) on a CURVE gateway: a hostile client that got in.
    convenience init(_ access: ClusterAccess, reading: Bool = true) {
        self.init(access.endpoint, serverKey: access.serverKey, secretKey: access.clusterSecretKey, reading: reading)
    }

    /// On TCP with `serverKey`, a CURVE client as `secretKey` (nil: a fresh key of its own).
    init(_ endpoint: String, serverKey: String?, secretKey: String?, reading: Bool = true) {
        socket = zmq_socket(context, ZMQ_DEALER)
        var linger: Int32 = 0
        zmq_setsockopt(socket, ZMQ_LINGER, &linger, 4)
        if let server = serverKey, endpoint.hasPrefix("tcp://") {
            var publicKey = [CChar](repeating: 0, count: 41)
            var secret = [CChar](repeating: 0, count: 41)
            if let secretKey {
                secret = Array(secretKey.utf8CString)
                zmq_curve_public(&publicKey, secretKey)
            } else {
                zmq_curve_keypair(&publicKey, &secret)
            }
            zmq_setsockopt(socket, ZMQ_CURVE_SERVERKEY, server, 40)
            zmq_setsockopt(socket, ZMQ_CURVE_PUBLICKEY, publicKey, 40)
            zmq_setsockopt(socket, ZMQ_CURVE_SECRETKEY, secret, 40)
        }
        if !reading {
            var queue: Int32 = 1
            zmq_setsockopt(socket, ZMQ_RCVHWM, &queue, 4)
            var buffer: Int32 = 64 << 10
            zmq_setsockopt(socket, ZMQ_RCVBUF, &buffer, 4)
        }
        zmq_connect(socket, endpoint)
    }

    deinit {
        zmq_close(socket)
        zmq_ctx_term(context)
    }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { zmq_send(socket, $0.baseAddress, bytes.count, 0) }
    }

    /// Sends the frames as one message without waiting (dropped when ZeroMQ cannot take it now).
    func send(frames: [[UInt8]]) {
        for (index, frame) in frames.enumerated() {
            let flags = ZMQ_DONTWAIT | (index < frames.count - 1 ? ZMQ_SNDMORE : 0)
            _ = frame.withUnsafeBytes { zmq_send(socket, $0.baseAddress, frame.count, flags) }
        }
    }

    /// Reads and drops every message waiting now; how many.
    func drain() -> Int {
        var count = 0
        var message = zmq_msg_t()
        zmq_msg_init(&message)
        defer { zmq_msg_close(&message) }
        while zmq_msg_recv(&message, socket, ZMQ_DONTWAIT) >= 0 {
            if zmq_msg_more(&message) == 0 { count += 1 }
        }
        return count
    }

    /// Reads one whole message, or nil when `end` comes first.
    func receive(until end: ContinuousClock.Instant) -> [UInt8]? {
        var item = zmq_pollitem_t(socket: socket, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0)
        let remaining = end - ContinuousClock.now
        let ms = max(0, Int(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000))
        guard zmq_poll(&item, 1, ms) == 1 else { return nil }
        var message = zmq_msg_t()
        zmq_msg_init(&message)
        defer { zmq_msg_close(&message) }
        var last: [UInt8] = []
        repeat {
            guard zmq_msg_recv(&message, socket, 0) >= 0 else { return nil }
            last = Array(UnsafeRawBufferPointer(start: zmq_msg_data(&message), count: zmq_msg_size(&message)))
        } while zmq_msg_more(&message) != 0
        return last
    }

    /// Holds the connection open, reading nothing, until `end`.
    func wait(until end: ContinuousClock.Instant) {
        var item = zmq_pollitem_t(socket: nil, fd: -1, events: 0, revents: 0)
        let remaining = end - ContinuousClock.now
        let ms = max(0, Int(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000))
        _ = zmq_poll(&item, 0, ms)
    }
}
