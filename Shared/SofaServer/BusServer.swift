public import SofaBus
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
/// With `cancelOnDisconnect`, when a client's connection closes, the handler tasks of its
/// requests still running are cancelled (the socket monitor's DISCONNECTED names the
/// connection's descriptor, which each message carries too). With a `ReplyBudget`, what the
/// server holds for clients that do not read their replies is bounded in bytes (see there). With
/// `Forwarding.limits`, each client has only so many forwarded requests unanswered; the rest wait
/// at the server and go on, round-robin across clients, as answers come back (see
/// `ClientInFlight`): a client that asks for much at once cannot queue the others behind it.
public final class BusServer: Sendable {
    public typealias Handler = @Sendable (Request) async -> Response
    /// Takes a decoded request without a task, on the socket thread (it must not block): answers
    /// it through the function given (from any thread, once) and returns true; or returns false,
    /// leaving it to the handler.
    public typealias DirectHandler = @Sendable (Request, @escaping @Sendable (Response) -> Void) -> Bool

    /// Requests a server passes on without decoding them: those whose operation field is one of
    /// `operations` go to `handler` as `ForwardedRequest`s, which returns the encoded response
    /// (with the request's id).
    public struct Forwarding: Sendable {
        public var operations: Set<UInt32>
        /// Whether a request of one of `operations` goes on undecoded, given the operation's
        /// encoded payload (all do without it).
        public var accepts: (@Sendable (UInt32, UnsafeRawBufferPointer) -> Bool)?
        public var handler: @Sendable (ForwardedRequest) async -> EncodedMessage
        /// When set, used instead of `handler`, without a task: called on the socket thread with
        /// the request and how to answer it (from any thread, once). It must not block.
        public var direct: (@Sendable (ForwardedRequest, @escaping @Sendable (EncodedMessage) -> Void) -> Void)?
        /// When set, each client has at most `perClient` forwarded requests not yet answered; its
        /// further ones wait at the server, and go on, round-robin across clients, as answers
        /// come back (see `ClientInFlight`).
        public var limits: ForwardingLimits?
        /// Called (on the socket thread) with the descriptors of client connections that closed
        /// (with `cancelOnDisconnect`): work still running for their forwarded requests
        /// (`ForwardedRequest.connection`) can be stopped.
        public var disconnected: (@Sendable (Set<Int32>) -> Void)?
        /// Operations that `limits` do not count: their destination shares itself fairly between
        /// clients (queries: the broker's queue per client).
        public var queuedElsewhere: Set<UInt32> = []
        /// Decides, on the socket thread, whether a request may go on undecoded as its sender
        /// (`pass`), is refused (`refuse`), or must be decoded and handled as any other
        /// (`decode`: when deciding needs more than the envelope, or what only a task can load).
        public var gate: (@Sendable (ForwardedRequest, Peer) -> GateDecision)?
        /// Called on the socket thread before the server takes up the messages waiting on its
        /// socket, and after it has taken them all (`batchEnds`): `direct` may hold requests in
        /// between and answer them together then (reads in one transaction).
        public var batchBegins: (@Sendable () -> Void)?
        public var batchEnds: (@Sendable () -> Void)?
        /// When set, offered each request on the socket thread before `limits` count it: true
        /// when it took the request and answers it itself, from this thread (now, or when the
        /// batch ends), with the reply, or with nil to send it on after all (then counted and
        /// forwarded as any other). Work that never leaves the server (the gateway's own reads of
        /// the files) thus holds no place among a client's requests in flight to a service, and
        /// costs no turn in their queue.
        public var local: (@Sendable (ForwardedRequest, @escaping @Sendable (EncodedMessage?) -> Void) -> Bool)?

        public init(operations: Set<UInt32>, accepts: (@Sendable (UInt32, UnsafeRawBufferPointer) -> Bool)? = nil,
                    limits: ForwardingLimits? = nil, disconnected: (@Sendable (Set<Int32>) -> Void)? = nil,
                    direct: (@Sendable (ForwardedRequest, @escaping @Sendable (EncodedMessage) -> Void) -> Void)? = nil,
                    handler: @escaping @Sendable (ForwardedRequest) async -> EncodedMessage) {
            self.operations = operations
            self.accepts = accepts
            self.limits = limits
            self.disconnected = disconnected
            self.direct = direct
            self.handler = handler
        }
    }

    /// The ZeroMQ identity of the connection the request being handled came in on (empty outside
    /// a handler): who the client is, for sharing work fairly between clients.
    @TaskLocal public static var client: [UInt8] = []
    /// The connection the request being handled came in on (see `Peer`).
    @TaskLocal public static var peer = Peer(identity: [], connection: -1, key: "", address: "")

    /// One client connection as a request arrived on it: its ZeroMQ identity, its descriptor, the
    /// client's CURVE public key (Z85; "" on a socket without CURVE) and its address.
    public struct Peer: Sendable, Hashable {
        public var identity: [UInt8]
        public var connection: Int32
        public var key: String
        public var address: String

        public init(identity: [UInt8], connection: Int32, key: String, address: String) {
            self.identity = identity
            self.connection = connection
            self.key = key
            self.address = address
        }
    }

    public enum GateDecision: Sendable {
        case pass
        case refuse(SofaError)
        case decode
    }

    /// The endpoint actually bound (with the port chosen when asked for `*`).
    public let endpoint: String
    /// The socket's thread; posted: replies to send, as (client, reply, whether `budget` counts it).
    let loop: SocketLoop<Posted>
    /// The clients of services this server's own loop runs (`upstreams` of `bind`), in order.
    public let upstreamClients: [BusClient]
    /// The broker this server's own loop runs (`broker` of `bind`).
    public let broker: Broker?
    /// Bounds the bytes of replies held for each client and for all of them; nil: no bound.
    public let budget: ReplyBudget?
    /// Handler tasks running, by the descriptor of the connection their request came in on.
    let running = Mutex<(tasks: [Int32: [UInt64: Task<Void, Never>]], next: UInt64)>(([:], 0))
    /// Forwarded requests in flight and waiting, per client; nil: no limit.
    let fair: FairForwarder?
    let name: String
    /// The delays of size refusals, per client.
    let refusals = RefusalPacer()

    typealias Outgoing = (identity: [UInt8], message: EncodedMessage, counted: Bool)
    /// What the loop is handed: a reply to send, or a request for the `index`th upstream client.
    enum Posted: Sendable {
        case reply(Outgoing)
        case upstream(Int, (UInt64, EncodedMessage))
        case broker(Broker.Posted)
    }

    /// A service this server passes requests on to from its own thread (see `bind`).
    public struct Upstream: Sendable {
        public var endpoint: String
        public var peerName: String
        public init(_ endpoint: String, peerName: String) {
            self.endpoint = endpoint
            self.peerName = peerName
        }
    }

    private init(endpoint: String, name: String, loop: SocketLoop<Posted>, upstreamClients: [BusClient], broker: Broker?,
                 budget: ReplyBudget?, limits: ForwardingLimits?) {
        self.endpoint = endpoint
        self.name = name
        self.loop = loop
        self.upstreamClients = upstreamClients
        self.broker = broker
        self.budget = budget
        self.fair = limits.map(FairForwarder.init)
    }

    /// Forwarded requests of `client` not yet answered, and the bytes of its requests waiting
    /// their turn (zeros without forwarding limits).
    public func forwarding(of client: [UInt8]) -> (inFlight: Int, waitingBytes: Int) {
        fair?.counts(of: client) ?? (0, 0)
    }

    /// Forwarded requests not yet answered, and requests waiting their turn, of every client.
    public var forwardingTotals: (inFlight: Int, waiting: Int) { fair?.totals ?? (0, 0) }

    public static func bind(
        _ endpoint: String, name: String, domain: String = Curve.internalDomain,
        maxRequestBytes: Int = BusLimits.defaultMaxRequestBytes, cancelOnDisconnect: Bool = false,
        replyBudget: ReplyBudget? = nil, forwarding: Forwarding? = nil, maxBulkItems: Int = .max,
        upstreams: [Upstream] = [], broker brokerOptions: Broker.Options? = nil, logger: Logger, direct: DirectHandler? = nil,
        handler: @escaping Handler
    ) async throws(SofaError) -> BusServer {
        try await SocketLoop.start(name: "bus-server-\(name)") { loop throws(SofaError) in
            let socket = try ZMQSocket(type: ZMQ_ROUTER)
            try socket.set(ZMQ_SNDHWM, 100_000)
            try socket.set(ZMQ_RCVHWM, 100_000)
            // A hard cap far above the answered limit: beyond it ZeroMQ drops the peer.
            try socket.set64(ZMQ_MAXMSGSIZE, Int64(maxRequestBytes) * 4 + 4096)
            try socket.bindSecured(endpoint, domain: domain)
            // The broker, when asked: a query and its answer cross no other thread of this
            // process. Bound before the clients below connect, so that a taken address fails the
            // start while no client has a connection to drop (a client let go of without its
            // loop's `finish` leaves its socket monitor running).
            let broker = try brokerOptions.map { (options) throws(SofaError) in
                try Broker.hosted(options, loop: loop, logger: logger, post: { loop.post(Posted.broker($0)) })
            }
            // The services' clients run on this loop too: a request passed on from here, and its
            // answer passed back, cross no other thread either.
            var hosted: [HostedBusClient] = []
            for (index, upstream) in upstreams.enumerated() {
                hosted.append(try HostedBusClient(upstream.endpoint, peerName: upstream.peerName, loop: loop,
                                                  post: { loop.post(Posted.upstream(index, $0)) }))
            }
            let server = BusServer(endpoint: socket.lastEndpoint(), name: name, loop: loop, upstreamClients: hosted.map(\.client),
                                   broker: broker?.0, budget: replyBudget, limits: forwarding?.limits)
            return (server, ServerDriver(server: server, socket: socket, upstreams: hosted, broker: broker?.1,
                                         maxRequestBytes: maxRequestBytes,
                                         maxBulkItems: maxBulkItems, countsClients: domain == Curve.clientDomain && Curve.applies(to: endpoint),
                                         cancelOnDisconnect: cancelOnDisconnect,
                                         forwarding: forwarding, logger: logger, direct: direct, handler: handler))
        }
    }

    /// The thread of this server's socket, for a lifecycle service to follow.
    public var socketLoop: any SocketLoopControl { loop }

    /// Stops serving and waits until the socket is closed (so the endpoint can be bound again).
    /// Replies already queued are sent first.
    public func close() async {
        await loop.close()
    }

    func reply(_ identity: [UInt8], _ response: Response) {
        reply(identity, response.encodedMessage(), id: response.id)
    }

    /// Queues a reply to request `id` of client `identity`; one over the client's budget is
    /// dropped and an error sent instead (or nothing, past the slack for errors).
    func reply(_ identity: [UInt8], _ message: EncodedMessage, id: UInt64) {
        guard let budget else { return queue(identity, message, counted: false) }
        guard let error = budget.reserve(message.count, for: identity) else { return queue(identity, message, counted: true) }
        refuse(identity, id: id, error)
    }

    /// Answers request `id` of `identity` with `error`, counted as an error reply.
    func refuse(_ identity: [UInt8], id: UInt64, _ error: SofaError) {
        let answer = Response.failure(id, error).encodedMessage()
        if budget?.reserveError(answer.count, for: identity) ?? true { queue(identity, answer, counted: budget != nil) }
    }

    func queue(_ identity: [UInt8], _ message: EncodedMessage, counted: Bool) {
        guard !loop.post(.reply((identity, message, counted))) else { return }
        // Closed: the reply is dropped with its client's connection; its bytes are counted out.
        if counted { budget?.release(message.count, for: identity) }
    }

    /// Runs `work` as a task tracked under the peer's connection until it ends, with `client`
    /// and `peer` set to the connection's.
    func track(_ peer: Peer, _ work: @escaping @Sendable () async -> Void) {
        let fd = peer.connection
        running.withLock { running in
            let key = running.next
            running.next += 1
            running.tasks[fd, default: [:]][key] = Task {
                await BusServer.$peer.withValue(peer) { await BusServer.$client.withValue(peer.identity) { await work() } }
                self.running.withLock { running in
                    running.tasks[fd]?[key] = nil
                    if running.tasks[fd]?.isEmpty == true { running.tasks[fd] = nil }
                }
            }
        }
    }

    /// Forwards `request` of `client`; when `counted` in flight (for that cost), counts it out
    /// once answered and starts the waiting requests that may go then.
    func start(_ request: ForwardedRequest, of client: [UInt8], fd: Int32, _ forwarding: Forwarding, counted cost: Int?) {
        let answer: @Sendable (EncodedMessage) -> Void
        if let cost, let fair {
            // Exactly once, whatever the path: answer, error, timeout (a client gone still gets its
            // answers from the service, which ZeroMQ drops).
            let once = Once()
            answer = { message in
                // Counted out before the answer goes, so the client's next request finds room.
                let drain = once.first() && fair.finish(client, cost: cost, answerBytes: message.count)
                self.reply(client, message, id: request.id)
                if drain { self.drainWaiting(forwarding) }
            }
        } else {
            answer = { self.reply(client, $0, id: request.id) }
        }
        if let direct = forwarding.direct {
            direct(request, answer)
        } else {
            track(Peer(identity: client, connection: fd, key: "", address: "")) { answer(await forwarding.handler(request)) }
        }
    }

    /// Starts the waiting requests that may go now, until none may (on whichever thread counted
    /// out the request that made room; one thread at a time). A request whose deadline passed, or
    /// whose client is over its reply budget, is answered instead, without going on.
    func drainWaiting(_ forwarding: Forwarding) {
        guard let fair else { return }
        while let (client, request, connection, cost) = fair.next() {
            if let refusal = budget?.refusal(for: client) {
                refuse(client, id: request.id, refusal)
            } else if request.deadline != 0 && request.deadline < wallClockMs() {
                refuse(client, id: request.id, .timeout("the request's deadline passed while it waited its turn at \(name) "
                    + "(this client had \(fair.limits.perClient) requests in flight, SOFA_CLIENT_IN_FLIGHT)"))
            } else {
                start(request, of: client, fd: connection, forwarding, counted: cost)
                continue
            }
            _ = fair.finish(client, cost: cost, answerBytes: 0)  // counted in by `next`; this thread is the one draining
        }
    }

}
