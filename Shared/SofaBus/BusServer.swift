public import SofaCore
public import SofaWire
public import Logging
internal import CZeroMQ
internal import Foundation
internal import Synchronization

/// The serving side of the bus: a ROUTER socket bound to an endpoint, owned by its own thread.
///
/// Each well-formed request is handed to the handler in its own task; the handler's response is
/// queued back to the socket thread. A frame that is not a request (garbage, the wrong number of
/// parts, more than `maxRequestBytes`) is answered with an error response and the server keeps
/// serving. A request whose deadline has already passed is answered with `.timeout` unhandled.
public final class BusServer: Sendable {
    public typealias Handler = @Sendable (Request) async -> Response

    /// The endpoint actually bound (with the port chosen when asked for `*`).
    public let endpoint: String
    private let state = Mutex<(outbox: [[[UInt8]]], closed: Bool)>(([], false))
    private let wakeup: Wakeup
    private let stopped = Mutex<CheckedContinuation<Void, Never>?>(nil)

    private init(endpoint: String, wakeup: Wakeup) {
        self.endpoint = endpoint
        self.wakeup = wakeup
    }

    public static func bind(
        _ endpoint: String, name: String, maxRequestBytes: Int = 16 << 20, logger: Logger,
        handler: @escaping Handler
    ) async throws(SofaError) -> BusServer {
        let wakeup = try Wakeup()
        let bound: Result<BusServer, SofaError> = await withCheckedContinuation { continuation in
            let thread = Thread {
                let socket: ZMQSocket
                do throws(SofaError) {
                    socket = try ZMQSocket(type: ZMQ_ROUTER)
                    try socket.set(ZMQ_SNDHWM, 100_000)
                    try socket.set(ZMQ_RCVHWM, 100_000)
                    // A hard cap far above the answered limit: beyond it ZeroMQ drops the peer.
                    try socket.set64(ZMQ_MAXMSGSIZE, Int64(maxRequestBytes) * 4 + 4096)
                    try socket.bind(endpoint)
                } catch {
                    continuation.resume(returning: .failure(error))
                    return
                }
                let server = BusServer(endpoint: socket.lastEndpoint(), wakeup: wakeup)
                continuation.resume(returning: .success(server))
                server.run(socket, name: name, maxRequestBytes: maxRequestBytes, logger: logger, handler: handler)
            }
            thread.name = "bus-server-\(name)"
            thread.start()
        }
        return try bound.get()
    }

    /// Stops serving and waits until the socket is closed (so the endpoint can be bound again).
    public func close() async {
        await withCheckedContinuation { continuation in
            // The waiter is in place before the socket thread can see `closed` and leave.
            stopped.withLock { $0 = continuation }
            let alreadyClosed = state.withLock { state in
                defer { state.closed = true }
                return state.closed
            }
            if alreadyClosed {
                stopped.withLock { $0.take() }?.resume()
            } else {
                wakeup.signal()
            }
        }
    }

    private func reply(_ identity: [UInt8], _ response: Response) {
        state.withLock { $0.outbox.append([identity, response.encoded()]) }
        wakeup.signal()
    }

    private func run(_ socket: ZMQSocket, name: String, maxRequestBytes: Int, logger: Logger, handler: @escaping Handler) {
        while true {
            guard let ready = try? poll([socket], fds: [wakeup.fd], timeoutMs: 500) else { continue }
            if ready[1] { wakeup.drain() }
            let (outgoing, closed) = state.withLock { state in
                defer { state.outbox.removeAll(keepingCapacity: true) }
                return (state.outbox, state.closed)
            }
            for frames in outgoing {
                _ = try? socket.send(frames)
            }
            if closed { break }
            guard ready[0] else { continue }
            while let received = try? socket.receive(limit: maxRequestBytes) {
                switch received {
                case .tooLarge(let frames, let size):
                    guard let identity = frames.first else { continue }
                    logger.warning("rejected an oversized message", metadata: ["bytes": "\(size)"])
                    let id = frames.count > 1 ? Request.peekID(frames[1]) ?? 0 : 0
                    _ = try? socket.send([identity, Response.failure(id, SofaError(
                        .messageTooLarge, "message of \(size) bytes is over the limit of \(maxRequestBytes)")).encoded()])
                case .message(let frames):
                    guard frames.count == 2 else {
                        if let identity = frames.first {
                            _ = try? socket.send([identity, Response.failure(0, SofaError(
                                .malformedMessage, "malformed message: expected one frame, got \(frames.count - 1)")).encoded()])
                        }
                        continue
                    }
                    let identity = frames[0]
                    let request: Request
                    do {
                        request = try Request.decode(frames[1])
                    } catch {
                        logger.debug("rejected a malformed request", metadata: ["bytes": "\(frames[1].count)"])
                        _ = try? socket.send([identity, Response.failure(Request.peekID(frames[1]) ?? 0, error).encoded()])
                        continue
                    }
                    if request.deadline != 0 && request.deadline < wallClockMs() {
                        _ = try? socket.send([identity, Response.failure(request.id, .timeout(
                            "the request's deadline passed before \(name) could start it")).encoded()])
                        continue
                    }
                    logger.trace("request", metadata: [
                        "request": "\(request.id)", "op": "\(request.operation.name)", "db": "\(request.database)",
                    ])
                    Task {
                        var response = await handler(request)
                        if case .failure(let error) = response.outcome {
                            logger.debug("request failed", metadata: [
                                "request": "\(request.id)", "op": "\(request.operation.name)", "error": "\(error)",
                            ])
                        }
                        response.id = request.id
                        self.reply(identity, response)
                    }
                }
            }
        }
        let waiter = stopped.withLock { $0.take() }
        withExtendedLifetime(socket) {}
        _ = consume socket
        waiter?.resume()
    }
}
