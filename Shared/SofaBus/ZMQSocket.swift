import CZeroMQ
public import SofaCore

#if canImport(Glibc)
internal import Glibc
#endif
public import SofaWire

/// The process-wide ZeroMQ context (thread-safe by ZeroMQ's contract; sockets are not).
public enum ZMQContext {
    nonisolated(unsafe) static let shared: UnsafeMutableRawPointer = {
        let context = zmq_ctx_new()!
        zmq_ctx_set(context, ZMQ_BLOCKY, 0)  // closing a socket never waits on unsent messages
        // Two I/O threads (ZeroMQ's default is one): connections are shared between them, so a
        // client that sends or receives large messages (the I/O thread copies every byte between
        // the kernel and ZeroMQ's buffers) holds up only the connections on its thread.
        zmq_ctx_set(context, ZMQ_IO_THREADS, 2)
        return context
    }()
}

public func zmqError(_ what: String) -> SofaError {
    let code = zmq_errno()
    return SofaError(.zmq, code, "\(what): \(String(cString: zmq_strerror(code)))")
}

/// One ZeroMQ socket. It is created, used and closed by a single thread (the loop of the
/// `SocketLoop` that owns it); the owner is recorded and checked on every use.
public final class ZMQSocket {
    public let handle: UnsafeMutableRawPointer
    private let owner = pthread_self()
    /// The file descriptor of the connection the last received message came in on (-1 = not
    /// known): a ROUTER matches it with the monitor's DISCONNECTED events.
    public private(set) var lastSourceFD: Int32 = -1
    /// Whether received messages carry a peer key (a CURVE server: the ZAP handler names each
    /// connection's client key as its user id).
    var readsPeerKey = false
    /// The Z85 public key of the client the last received message came from ("" when not
    /// known: not a CURVE server).
    public private(set) var lastPeerKey = ""
    /// The address of that peer (an IP address; "" for ipc:// and inproc://).
    public private(set) var lastPeerAddress = ""
    /// False only while the socket is known to hold no message: a receive found none, or
    /// `hasMessage` said so, and nothing was sent, bound or connected since. ZeroMQ takes up a
    /// socket's pending commands (a message arrived, a peer came or went) in those calls, so
    /// until then the socket's file descriptor signals anything new (see `poll`).
    fileprivate var mayHaveMessages = true
    /// ZeroMQ's file descriptor for the socket (ZMQ_FD): readable when commands wait for it.
    fileprivate lazy var signalFD: Int32 = {
        var fd: Int32 = -1
        var size = MemoryLayout<Int32>.size
        return zmq_getsockopt(handle, ZMQ_FD, &fd, &size) == 0 ? fd : -1
    }()

    public init(type: Int32) throws(SofaError) {
        guard let handle = zmq_socket(ZMQContext.shared, type) else { throw zmqError("zmq_socket") }
        self.handle = handle
        try set(ZMQ_LINGER, 0)
    }

    deinit { zmq_close(handle) }

    fileprivate func checkOwner() {
        precondition(pthread_equal(owner, pthread_self()) != 0, "a ZeroMQ socket used off its owning thread")
    }

    public func set(_ option: Int32, _ value: Int32) throws(SofaError) {
        var value = value
        guard zmq_setsockopt(handle, option, &value, MemoryLayout<Int32>.size) == 0 else {
            throw zmqError("zmq_setsockopt(\(option))")
        }
    }

    public func set64(_ option: Int32, _ value: Int64) throws(SofaError) {
        var value = value
        guard zmq_setsockopt(handle, option, &value, MemoryLayout<Int64>.size) == 0 else {
            throw zmqError("zmq_setsockopt(\(option))")
        }
    }

    public func set(_ option: Int32, bytes: [UInt8]) throws(SofaError) {
        let rc = bytes.withUnsafeBytes { zmq_setsockopt(handle, option, $0.baseAddress, bytes.count) }
        guard rc == 0 else { throw zmqError("zmq_setsockopt(\(option))") }
    }

    public func bind(_ endpoint: String) throws(SofaError) {
        checkOwner()
        mayHaveMessages = true
        guard zmq_bind(handle, endpoint) == 0 else { throw zmqError("bind \(endpoint)") }
    }

    public func connect(_ endpoint: String) throws(SofaError) {
        checkOwner()
        mayHaveMessages = true
        guard zmq_connect(handle, endpoint) == 0 else { throw zmqError("connect \(endpoint)") }
    }

    /// The endpoint actually bound (resolves `tcp://127.0.0.1:*` to the chosen port).
    public func lastEndpoint() -> String {
        var buffer = [CChar](repeating: 0, count: 512)
        var size = buffer.count
        guard zmq_getsockopt(handle, ZMQ_LAST_ENDPOINT, &buffer, &size) == 0 else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Sends the frames as one multipart message without blocking.
    /// Returns false when ZeroMQ cannot take it now (no peer connected, or the queue is full).
    public func send(_ frames: [[UInt8]]) throws(SofaError) -> Bool {
        checkOwner()
        return try send(frames, more: false)
    }

    /// Sends `head` then `message` as one multipart message without blocking; `message` is handed
    /// to ZeroMQ without a copy (its memory is freed once it is on the wire). Returns false when
    /// ZeroMQ cannot take it now (no peer connected, or the queue is full). `released` is called
    /// exactly once when the message's memory is let go of: once ZeroMQ has passed it to the
    /// kernel or dropped it (on ZeroMQ's I/O thread), or here when it was not taken.
    public func send(_ head: [[UInt8]], _ message: EncodedMessage, released: (@Sendable () -> Void)? = nil) throws(SofaError) -> Bool {
        checkOwner()
        mayHaveMessages = true
        let notice = released.map { Unmanaged.passRetained(ReleaseNotice($0)).toOpaque() }
        let notTaken = { if let notice { Unmanaged<ReleaseNotice>.fromOpaque(notice).takeRetainedValue().action() } }
        if !head.isEmpty {
            let sent: Bool
            do { sent = try send(head, more: true) } catch {
                notTaken()
                throw error
            }
            guard sent else {
                notTaken()
                return false
            }
        }
        var frame = zmq_msg_t()
        guard let pointer = message.take() else {
            notTaken()
            return try send([[]], more: false)
        }
        // On success ZeroMQ frees the buffer when it is sent; on failure zmq_msg_close does.
        guard zmq_msg_init_data(&frame, pointer, message.count, { data, hint in
            free(data)
            if let hint { Unmanaged<ReleaseNotice>.fromOpaque(hint).takeRetainedValue().action() }
        }, notice) == 0 else {
            free(pointer)
            notTaken()
            throw zmqError("zmq_msg_init_data")
        }
        if zmq_msg_send(&frame, handle, ZMQ_DONTWAIT) < 0 {
            let code = zmq_errno()
            zmq_msg_close(&frame)
            // A message is queued whole: only its first frame can fail with EAGAIN.
            if code == EAGAIN && head.isEmpty { return false }
            throw zmqError("zmq_send")
        }
        return true
    }

    private func send(_ frames: [[UInt8]], more: Bool) throws(SofaError) -> Bool {
        mayHaveMessages = true
        for (index, frame) in frames.enumerated() {
            let flags = ZMQ_DONTWAIT | (index < frames.count - 1 || more ? ZMQ_SNDMORE : 0)
            let rc = frame.withUnsafeBytes { zmq_send(handle, $0.baseAddress, frame.count, flags) }
            if rc < 0 {
                let code = zmq_errno()
                if code == EAGAIN && index == 0 { return false }
                throw zmqError("zmq_send")
            }
        }
        return true
    }

    /// Receives one multipart message if one is waiting; nil when none is.
    /// A message of more than `limit` bytes is drained and returned as `.tooLarge`, keeping only
    /// its first frame and the first bytes of the second (enough to read a request id).
    public func receive(limit: Int = .max) throws(SofaError) -> Received? {
        switch try receive(limit: limit, last: { Array($0.bindMemory(to: UInt8.self)) }) {
        case nil: return nil
        case .message(let head, let last)?: return .message(head + [last])
        case .tooLarge(let frames, let size)?: return .tooLarge(frames, size)
        }
    }

    /// Like `receive`, but the last frame is not copied: `last` reads it where ZeroMQ holds it
    /// (the big frame of a message is decoded in place). The other frames come as arrays.
    public func receive<Last>(limit: Int, last: (UnsafeRawBufferPointer) -> Last) throws(SofaError) -> Parts<Last>? {
        checkOwner()
        mayHaveMessages = true
        var frames: [[UInt8]] = []
        var total = 0
        var message = zmq_msg_t()
        zmq_msg_init(&message)
        defer { zmq_msg_close(&message) }
        while true {
            let rc = zmq_msg_recv(&message, handle, frames.isEmpty && total == 0 ? ZMQ_DONTWAIT : 0)
            if rc < 0 {
                if zmq_errno() == EAGAIN && frames.isEmpty && total == 0 {
                    mayHaveMessages = false
                    return nil
                }
                throw zmqError("zmq_msg_recv")
            }
            let size = zmq_msg_size(&message)
            total += size
            let data = UnsafeRawBufferPointer(start: zmq_msg_data(&message), count: size)
            let more = zmq_msg_more(&message) != 0
            if !more {
                lastSourceFD = zmq_msg_get(&message, ZMQ_SRCFD)
                if readsPeerKey { readPeer(&message) }
                if total <= limit { return .message(frames, last(data)) }
            }
            if total <= limit {
                frames.append(Array(data.bindMemory(to: UInt8.self)))
            } else if frames.count < 2 {
                frames.append(Array(data.prefix(16)))
            }
            if !more { return .tooLarge(frames, total) }
        }
    }

    /// The peer's key and address from a message's metadata (the same for every message of a
    /// connection: the text is made again only when the connection changes).
    private func readPeer(_ message: inout zmq_msg_t) {
        guard let key = zmq_msg_gets(&message, "User-Id") else {
            (peerFD, peerKeyText, lastPeerKey, lastPeerAddress) = (-1, [0], "", "")
            return
        }
        // Compared as C text, without making a string, on every message of the same connection.
        guard lastSourceFD != peerFD || strcmp(key, peerKeyText) != 0 else { return }
        peerFD = lastSourceFD
        peerKeyText = Array(UnsafeBufferPointer(start: key, count: strlen(key) + 1))
        lastPeerKey = String(cString: key)
        lastPeerAddress = zmq_msg_gets(&message, "Peer-Address").map { String(cString: $0) } ?? ""
    }
    private var peerFD: Int32 = -1
    /// `lastPeerKey` as NUL-terminated C text.
    private var peerKeyText: [CChar] = [0]

    /// Whether a message waits (ZMQ_EVENTS, which takes up the socket's pending commands).
    fileprivate func hasMessage() -> Bool {
        var events: Int32 = 0
        var size = MemoryLayout<Int32>.size
        guard zmq_getsockopt(handle, ZMQ_EVENTS, &events, &size) == 0 else {
            mayHaveMessages = false
            return false
        }
        mayHaveMessages = events & Int32(ZMQ_POLLIN) != 0
        return mayHaveMessages
    }

    public enum Parts<Last> {
        /// The frames before the last one, and what `last` made of the last one.
        case message([[UInt8]], Last)
        /// The first frame, the head of the second, and the total size of the message.
        case tooLarge([[UInt8]], Int)
    }

    public enum Received {
        case message([[UInt8]])
        /// The first frame, the head of the second, and the total size of the message.
        case tooLarge([[UInt8]], Int)
    }
}

/// What `ZMQSocket.send` calls when ZeroMQ lets go of a message, carried through ZeroMQ's free
/// function as its hint.
private final class ReleaseNotice: Sendable {
    public let action: @Sendable () -> Void
    public init(_ action: @escaping @Sendable () -> Void) { self.action = action }
}

/// An eventfd that other threads signal to wake a socket loop blocked in `zmq_poll`.
public final class Wakeup: Sendable {
    public let fd: Int32

    public init() throws(SofaError) {
        fd = sofa_eventfd()
        guard fd >= 0 else { throw SofaError(.posix, sofa_errno(), "eventfd failed") }
    }

    deinit { close(fd) }

    public func signal() {
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }

    public func drain() {
        var value: UInt64 = 0
        _ = read(fd, &value, 8)
    }
}

/// Milliseconds since the Unix epoch (the unit of wire deadlines).
public func wallClockMs() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return UInt64(spec.tv_sec) * 1000 + UInt64(spec.tv_nsec) / 1_000_000
}

/// Milliseconds on a monotonic clock (heartbeats and local timeouts).
public func monotonicMs() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1000 + UInt64(spec.tv_nsec) / 1_000_000
}

/// Polls sockets and file descriptors; returns which of them are readable. Called on the
/// sockets' thread.
///
/// Not `zmq_poll`: it asks every socket for its events (ZMQ_EVENTS) before and after its wait,
/// and each ask of a socket with nothing pending is two system calls (a `poll` of the socket's
/// own descriptor, and a `getpid`): 16 or more per wait for the gateway's seven sockets.
/// Measured on the gateway (16 point lookups in flight): 13.7 system calls per lookup, 10 of
/// them `poll` and `getpid`; 8.1 with this one. Here a socket is asked only when something may have changed it: it was used since it
/// was last found empty, or its descriptor signals. The wait itself is one `poll` of all the
/// descriptors.
public func poll(_ sockets: [ZMQSocket], fds: [Int32], timeoutMs: Int) throws(SofaError) -> [Bool] {
    var ready = [Bool](repeating: false, count: sockets.count + fds.count)
    var found = false
    for (index, socket) in sockets.enumerated() where socket.mayHaveMessages {
        socket.checkOwner()
        if socket.hasMessage() {
            ready[index] = true
            found = true
        }
    }
    var items = sockets.map { pollfd(fd: $0.signalFD, events: Int16(POLLIN), revents: 0) }
    items += fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    let rc = Glibc.poll(&items, nfds_t(items.count), found ? 0 : Int32(clamping: timeoutMs))
    if rc < 0 {
        if errno == EINTR { return ready }
        throw SofaError(.posix, errno, "poll: \(String(cString: strerror(errno)))")
    }
    guard rc > 0 else { return ready }
    for (index, socket) in sockets.enumerated() where !ready[index] && items[index].revents != 0 {
        ready[index] = socket.hasMessage()
    }
    for index in fds.indices where items[sockets.count + index].revents != 0 {
        ready[sockets.count + index] = true
    }
    return ready
}
