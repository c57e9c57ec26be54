internal import SofaBus
internal import SofaCore
internal import SofaWire
internal import Logging
internal import CZeroMQ
internal import Foundation

// A `BusServer`'s socket side: the driver its loop runs, and what it does with what arrives —
// requests taken up, replies sent, connections that close, requests refused or waiting too long.

extension BusServer {
    /// A PAIR socket receiving `socket`'s DISCONNECTED events; nil when the monitor cannot start
    /// (requests of a client that went away then run to their end).
    /// With `countingClients`, its ACCEPTED events too (`ClientConnections`).
    static func monitor(_ socket: ZMQSocket, countingClients: Bool = false) -> ZMQSocket? {
        let endpoint = "inproc://bus-server-monitor-\(UUID().uuidString)"
        let events = ZMQ_EVENT_DISCONNECTED | (countingClients ? ZMQ_EVENT_ACCEPTED : 0)
        guard zmq_socket_monitor(socket.handle, endpoint, events) == 0,
              let monitor = try? ZMQSocket(type: ZMQ_PAIR), (try? monitor.connect(endpoint)) != nil else { return nil }
        return monitor
    }

    /// Cancels the handler tasks of requests that came in on the connections that closed.
    /// (A client socket's monitor also counts the connections that opened, `ClientConnections`.)
    func disconnected(_ monitor: ZMQSocket, forwarding: Forwarding?, logger: Logger, countingClients: Bool) {
        var closed: [Int32] = []
        while case .message(let frames)? = try? monitor.receive() {
            // First frame: the event (16 bits) then its value (32 bits, the descriptor), host order.
            guard let head = frames.first, head.count >= 6 else { continue }
            let event = Int32(head[0]) | Int32(head[1]) << 8
            let descriptor = Int32(head[2]) | Int32(head[3]) << 8 | Int32(head[4]) << 16 | Int32(head[5]) << 24
            if event == ZMQ_EVENT_ACCEPTED, countingClients { ClientConnections.opened(descriptor) }
            guard event == ZMQ_EVENT_DISCONNECTED else { continue }
            closed.append(descriptor)
        }
        guard !closed.isEmpty else { return }
        if countingClients { ClientConnections.closed(closed) }
        forwarding?.disconnected?(Set(closed))
        if let dropped = fair?.dropWaiting(connections: Set(closed)), dropped > 0 {
            logger.debug("client went away: dropping its waiting requests", metadata: ["requests": "\(dropped)"])
        }
        let tasks = running.withLock { running in closed.flatMap { running.tasks.removeValue(forKey: $0)?.values ?? [:].values } }
        if !tasks.isEmpty { logger.debug("client went away: cancelling its requests", metadata: ["requests": "\(tasks.count)"]) }
        for task in tasks { task.cancel() }
    }

    /// Answers a request refused for a size limit after a delay (`RefusalPacer`: 100 ms, doubling
    /// for each such refusal of the same client that follows, up to 5 s): each such request is a
    /// flood of bytes to receive, and a client that sends them one after another (a loop retrying
    /// what it should not) is slowed instead of taking the machine's cores from the other
    /// clients. Requests within the limits are never delayed.
    func refuseSlowly(_ identity: [UInt8], _ refusal: Response) {
        let message = refusal.encodedMessage()
        let delay = refusals.delay(for: identity).components
        let milliseconds = Int(delay.seconds * 1000 + delay.attoseconds / 1_000_000_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) {
            self.queue(identity, message, counted: false)
        }
    }

    /// Sends the replies posted to the loop (on its thread): to a client that sends batches, the
    /// small replies it has in `outgoing` go as batches (`WireBatch`), the others one by one.
    func send(_ outgoing: [Outgoing], on socket: ZMQSocket, batching: BatchingPeers) {
        var groups: [(identity: [UInt8], replies: [Outgoing])] = []
        for reply in outgoing {
            if reply.message.count <= WireBatch.maxItemBytes, batching.any {
                if let index = groups.firstIndex(where: { $0.identity == reply.identity }) {
                    groups[index].replies.append(reply)
                    continue
                }
                if groups.count < BatchingPeers.maxGroups, batching.contains(reply.identity) {
                    groups.append((reply.identity, [reply]))
                    continue
                }
            }
            send(reply, on: socket)
        }
        for (identity, replies) in groups {
            for range in WireBatch.groups(replies.map(\.message.count)) { sendBatch(identity, replies[range], on: socket) }
        }
    }

    private func send(_ reply: Outgoing, on socket: ZMQSocket) {
        var released: (@Sendable () -> Void)?
        if reply.counted, let budget {
            let (count, identity) = (reply.message.count, reply.identity)
            released = { budget.release(count, for: identity) }
        }
        _ = try? socket.send([reply.identity], reply.message, released: released)
    }

    /// Replies to one client in one message (one alone as itself); their bytes are counted out
    /// of its budget when that message is let go of.
    private func sendBatch(_ identity: [UInt8], _ replies: ArraySlice<Outgoing>, on socket: ZMQSocket) {
        guard replies.count > 1 else { return replies.first.map { send($0, on: socket) } ?? () }
        let message = WireBatch.encoded(replies.map(\.message.bytes))
        var released: (@Sendable () -> Void)?
        let counted = replies.reduce(0) { $0 + ($1.counted ? $1.message.count : 0) }
        if counted > 0, let budget { released = { budget.release(counted, for: identity) } }
        _ = try? socket.send([identity], message, released: released)
    }

    /// Refuses the waiting forwarded requests whose deadline passed (on the loop's thread, now and then).
    func sweepWaiting() {
        guard let fair else { return }
        for (identity, request) in fair.removeExpired(now: wallClockMs()) {
            refuse(identity, id: request.id, .timeout("the request's deadline passed while it waited its turn at \(name) "
                + "(this client had \(fair.limits.perClient) requests in flight, SOFA_CLIENT_IN_FLIGHT)"))
        }
    }

    /// Takes up a request that may go on undecoded: passes it on (or lets it wait its turn), or
    /// refuses it; returns it decoded when the gate says it must be handled as any other.
    private func take(_ forwarded: ForwardedRequest, bytes: Int, peer: Peer, _ socket: ZMQSocket,
                      _ driver: ServerDriver) -> Request? {
        guard let forwarding = driver.forwarding else { return nil }
        let identity = peer.identity
        switch forwarding.gate?(forwarded, peer) ?? .pass {
        case .pass:
            break
        case .refuse(let error):
            refuse(identity, id: forwarded.id, error)
            return nil
        case .decode:
            let bytes = forwarded.bytes(id: forwarded.id, deadline: forwarded.deadline)
            // (Its bulk size was checked as it was peeked.)
            let decoded = Result { () throws(SofaError) in try Request.decode(bytes) }
            switch decoded {
            case .success(let request): return request
            case .failure(let error):
                refuse(identity, id: forwarded.id, error)
                return nil
            }
        }
        if let refusal = budget?.refusal(for: identity) {
            refuse(identity, id: forwarded.id, refusal)
        } else if forwarded.deadline != 0 && forwarded.deadline < wallClockMs() {
            _ = try? socket.send([identity, Response.failure(forwarded.id, .timeout(
                "the request's deadline passed before \(name) could start it")).encoded()])
        } else if let local = forwarding.local, local(forwarded, { answer in
            if let answer {
                self.reply(identity, answer, id: forwarded.id)
            } else {
                self.admit(forwarded, of: identity, bytes: bytes, connection: peer.connection, forwarding)
            }
        }) {
            return nil  // answered here (`Forwarding.local`)
        } else {
            admit(forwarded, of: identity, bytes: bytes, connection: peer.connection, forwarding)
        }
        return nil
    }

    /// Forwards a request now, or lets it wait its turn among its client's (`ClientInFlight`),
    /// or refuses it when too much of that client's already waits.
    private func admit(_ forwarded: ForwardedRequest, of identity: [UInt8], bytes: Int, connection: Int32,
                       _ forwarding: Forwarding) {
        let queuedElsewhere = forwarding.queuedElsewhere.contains(forwarded.operationField)
        switch queuedElsewhere ? nil : fair?.admit(identity, forwarded, bytes: bytes, connection: connection) {
        case .forward(let cost)?:
            start(forwarded, of: identity, fd: connection, forwarding, counted: cost)
        case nil:
            start(forwarded, of: identity, fd: connection, forwarding, counted: nil)
        case .wait?:
            break
        case .refuse(let waiting)?:
            refuse(identity, id: forwarded.id, fair!.refusal(waitingBytes: waiting, server: name))
        }
    }

    /// Takes up every message waiting on the socket (on the loop's thread). A batch (`WireBatch`)
    /// is taken up call by call, as if each had come alone, and its client is answered with
    /// batches from then on.
    func receiveAll(_ socket: ZMQSocket, _ driver: ServerDriver) {
        let forwarding = driver.forwarding, maxRequestBytes = driver.maxRequestBytes, maxBulkItems = driver.maxBulkItems
        let logger = driver.logger
        // The request frame is decoded where ZeroMQ holds it: a big one is not copied first.
        let decodeOne = { (bytes: UnsafeRawBufferPointer) -> Frame in
            if let forwarding, let forwarded = ForwardedRequest.peek(bytes, operations: forwarding.operations,
                                                                                  accepts: forwarding.accepts) {
                return Frame(count: bytes.count, head: [], request: .success(.forwarded(forwarded)))
            }
            return Frame(count: bytes.count, head: Array(bytes.prefix(16)),
                         request: Result { () throws(SofaError) in .decoded(try Request.decode(bytes, maxBulkItems: maxBulkItems)) })
        }
        let decode = { (bytes: UnsafeRawBufferPointer) -> Frames in
            switch WireBatch.contents(bytes) {
            case .single: return .single(decodeOne(bytes))
            case .items(let items): return .batch(items.map(decodeOne))
            case .malformed(let reason): return .single(Frame(count: bytes.count, head: [],
                                                              request: .failure(SofaError(.malformedMessage, reason))))
            }
        }
        forwarding?.batchBegins?()
        defer { forwarding?.batchEnds?() }
        while let received = try? socket.receive(limit: maxRequestBytes, last: decode) {
            switch received {
            case .tooLarge(let frames, let size):
                guard let identity = frames.first else { continue }
                logger.warning("rejected an oversized message", metadata: ["bytes": "\(size)"])
                let id = frames.count > 1 ? Request.peekID(frames[1]) ?? 0 : 0
                refuseSlowly(identity, Response.failure(id, SofaError(
                    .messageTooLarge, "message of \(size) bytes is over the limit of \(maxRequestBytes)")))
            case .message(let head, let frames):
                guard head.count == 1, let identity = head.first else {
                    if let identity = head.first {
                        _ = try? socket.send([identity, Response.failure(0, SofaError(
                            .malformedMessage, "malformed message: expected one frame, got \(head.count)")).encoded()])
                    }
                    continue
                }
                let peer = Peer(identity: identity, connection: socket.lastSourceFD, key: socket.lastPeerKey,
                                address: socket.lastPeerAddress)
                switch frames {
                case .single(let frame):
                    takeUp(frame, from: peer, socket, driver)
                case .batch(let frames):
                    driver.batchingClients.add(identity)
                    for frame in frames { takeUp(frame, from: peer, socket, driver) }
                }
            }
        }
    }

    /// Takes up one call of `peer`: passes it on, answers it at once, or starts its handler.
    private func takeUp(_ frame: Frame, from peer: Peer, _ socket: ZMQSocket, _ driver: ServerDriver) {
        let identity = peer.identity, logger = driver.logger
        let request: Request
        switch frame.request {
        case .success(.decoded(let decoded)):
            request = decoded
        case .success(.forwarded(var forwarded)):
            forwarded.client = identity
            forwarded.connection = peer.connection
            guard let decoded = take(forwarded, bytes: frame.count, peer: peer, socket, driver) else { return }
            request = decoded
        case .failure(let error):
            logger.debug("rejected a malformed request", metadata: ["bytes": "\(frame.count)"])
            let refusal = Response.failure(Request.peekID(frame.head) ?? 0, error)
            if error.is(.messageTooLarge) {
                refuseSlowly(identity, refusal)  // a bulk over the item limit
            } else {
                _ = try? socket.send([identity, refusal.encoded()])
            }
            return
        }
        if let refusal = budget?.refusal(for: identity) {
            refuse(identity, id: request.id, refusal)
            return
        }
        if request.deadline != 0 && request.deadline < wallClockMs() {
            _ = try? socket.send([identity, Response.failure(request.id, .timeout(
                "the request's deadline passed before \(name) could start it")).encoded()])
            return
        }
        logger.trace("request", metadata: [
            "request": "\(request.id)", "op": "\(request.operation.name)", "db": "\(request.database)",
        ])
        if let direct = driver.direct, direct(request, { response in
            var response = response
            response.id = request.id
            self.reply(identity, response)
        }) {
            return
        }
        let handler = driver.handler
        track(peer) {
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

/// The socket side of a `BusServer`, on its loop's thread: takes requests up, hands them to the
/// handler or passes them on, sends the replies posted back, and runs the hosted clients of its
/// upstream services beside its own sockets.
final class ServerDriver: SocketLoopDriver {
    let server: BusServer
    let socket: ZMQSocket
    /// Receives the socket's DISCONNECTED events (with `cancelOnDisconnect`).
    let monitor: ZMQSocket?
    let upstreams: [HostedBusClient]
    let broker: BrokerDriver?
    /// The server's own sockets, then each upstream client's, then the broker's.
    let sockets: [ZMQSocket]
    let ownSockets: Int
    let pollTimeoutMs: Int
    let maxRequestBytes: Int
    let maxBulkItems: Int
    let forwarding: BusServer.Forwarding?
    let logger: Logger
    let direct: BusServer.DirectHandler?
    let handler: BusServer.Handler
    private var lastSweep = monotonicMs()
    private var lastBrokerTurn: UInt64 = 0

    /// Whether its monitor counts client connections (the clients' socket, `Curve.clientDomain`).
    let countsClients: Bool
    /// The clients that sent a batch: their replies go in batches too.
    let batchingClients = BatchingPeers()

    init(server: BusServer, socket: ZMQSocket, upstreams: [HostedBusClient], broker: BrokerDriver?, maxRequestBytes: Int,
         maxBulkItems: Int, countsClients: Bool,
         cancelOnDisconnect: Bool, forwarding: BusServer.Forwarding?, logger: Logger, direct: BusServer.DirectHandler?,
         handler: @escaping BusServer.Handler) {
        self.server = server
        self.socket = socket
        self.countsClients = countsClients
        let monitor = cancelOnDisconnect || countsClients ? BusServer.monitor(socket, countingClients: countsClients) : nil
        self.monitor = monitor
        let own = monitor.map { [socket, $0] } ?? [socket]
        self.ownSockets = own.count
        self.upstreams = upstreams
        self.broker = broker
        self.sockets = own + upstreams.flatMap(\.sockets) + (broker?.sockets ?? [])
        self.pollTimeoutMs = (upstreams.map(\.pollTimeoutMs) + [broker?.pollTimeoutMs ?? 500, 500]).min() ?? 500
        self.maxRequestBytes = maxRequestBytes
        self.maxBulkItems = maxBulkItems
        self.forwarding = forwarding
        self.logger = logger
        self.direct = direct
        self.handler = handler
    }

    func turn(posted: [BusServer.Posted], readable: [Bool]) {
        var replies: [BusServer.Outgoing] = []
        var requests = [[(UInt64, EncodedMessage)]](repeating: [], count: upstreams.count)
        var brokerWork: [Broker.Posted] = []
        for item in posted {
            switch item {
            case .reply(let outgoing): replies.append(outgoing)
            case .upstream(let index, let request): requests[index].append(request)
            case .broker(let work): brokerWork.append(work)
            }
        }
        // The upstream services first: requests passed on go out, and answers that came back are
        // posted as replies (sent at the next turn, which comes at once).
        var offset = ownSockets
        for (index, upstream) in upstreams.enumerated() {
            let count = upstream.sockets.count
            upstream.turn(posted: requests[index], readable: Array(readable[offset..<offset + count]))
            offset += count
        }
        // The broker's turn (its state machine, its clock, its snapshot) only when it has work, a
        // worker spoke, or its clock is due: not on every document request this loop carries.
        if let broker {
            let brokerReadable = Array(readable[offset..<offset + broker.sockets.count])
            let now = monotonicMs()
            if !brokerWork.isEmpty || brokerReadable.contains(true) || now &- lastBrokerTurn >= UInt64(broker.pollTimeoutMs) {
                lastBrokerTurn = now
                broker.turn(posted: brokerWork, readable: brokerReadable)
            }
        }
        if let monitor, readable[1] { server.disconnected(monitor, forwarding: forwarding, logger: logger, countingClients: countsClients) }
        server.send(replies, on: socket, batching: batchingClients)
        if monotonicMs() &- lastSweep >= 50 {
            lastSweep = monotonicMs()
            server.sweepWaiting()
        }
        if readable[0] { server.receiveAll(socket, self) }
    }

    func finish(posted: [BusServer.Posted]) {
        server.send(posted.compactMap { if case .reply(let outgoing) = $0 { outgoing } else { nil } }, on: socket,
                    batching: batchingClients)
        for upstream in upstreams { upstream.finish() }
        broker?.finish(posted: [])
        if monitor != nil {
            // Stop the monitor before its sockets close (ZeroMQ would block delivering to a PAIR nobody reads).
            zmq_socket_monitor(socket.handle, nil, 0)
        }
    }
}

private enum Incoming {
    case decoded(Request)
    case forwarded(ForwardedRequest)
}

/// The peers (by ZeroMQ identity) that take batches, on a socket loop's thread: a server's
/// clients that sent one, a broker's workers whose READY said so. Bounded: past `maxPeers` it
/// starts again empty, and a peer it forgot gets single messages until it says so again (a
/// client's next batch; a worker's next READY).
final class BatchingPeers {
    static let maxPeers = 65_536
    /// Peers a turn's messages are batched for at most (the others get theirs one by one).
    static let maxGroups = 16
    private var identities = Set<[UInt8]>()

    /// Whether any peer takes batches.
    var any: Bool { !identities.isEmpty }

    func add(_ identity: [UInt8]) {
        if identities.count >= Self.maxPeers, !identities.contains(identity) { identities.removeAll() }
        identities.insert(identity)
    }

    func contains(_ identity: [UInt8]) -> Bool { identities.contains(identity) }
}

/// A call as received: its size, its first bytes (to name its id in a refusal), and the request.
private struct Frame {
    var count: Int
    var head: [UInt8]
    var request: Result<Incoming, SofaError>
}

/// A message as received: one call, or a batch of them.
private enum Frames {
    case single(Frame)
    case batch([Frame])
}
