/// Fair forwarding: how many of each client's requests a server has passed on to a service and
/// not yet seen answered, and the client's further requests that wait their turn. A pure value
/// type, driven by `FairForwarder` (which does the forwarding and answering).
///
/// * A client with fewer than `perClient` requests in flight, none waiting (and, when `total` is
///   set, fewer than `total` in flight across clients) has its request forwarded at once.
/// * With `bytesPerClient`, a client's requests in flight also stay within that many bytes
///   (one always may go): each costs its own bytes plus those of the client's last answer (its
///   best guess of the next; before the first answer, `bytesPerClient`: a new client has one
///   request out until it is answered). A client asking for small documents has `perClient`
///   out; one asking for large ones, one.
/// * Otherwise the request waits in the client's queue, if the client's waiting requests stay
///   within `waitingBytes` (a client with nothing waiting may always queue one); else it is
///   refused.
/// * Each request forwarded is counted out exactly once (`finish`); then `next` hands out the
///   oldest waiting request of the first client in turn that may have one more in flight, and
///   sends that client to the back of the line (round-robin across clients).
/// * Waiting requests can be taken out unforwarded: those of a connection that closed, those
///   whose deadline passed.
///
/// Example, `perClient` 2: A sends a1 a2 a3, B sends b1 → a1, a2, b1 forwarded, a3 waits;
/// a1 answered → `next` gives a3.
struct ClientInFlight<Item> {
    struct Waiting {
        var item: Item
        var bytes: Int
        /// The connection (descriptor) the request came in on.
        var connection: Int32
        /// Wall-clock ms; 0: none.
        var deadline: UInt64
    }

    enum Admission: Equatable {
        /// Forward it now: it is counted in flight, for `cost` bytes (to give back to `finish`).
        case forward(cost: Int)
        /// It waits its turn.
        case wait
        /// Refused: the client already has `waitingBytes` bytes of requests waiting.
        case refuse(waitingBytes: Int)
    }

    let perClient: Int
    let waitingBytes: Int
    /// The most bytes (requests plus expected answers) a client has in flight; nil: no limit.
    let bytesPerClient: Int?
    /// The most requests in flight across clients; nil: no limit.
    let total: Int?
    private(set) var inFlight: [[UInt8]: Int] = [:]
    private(set) var inFlightTotal = 0
    /// Per client with requests in flight or waiting: the bytes in flight, and the size of its
    /// last answer (nil before the first).
    private var bytes: [[UInt8]: (inFlight: Int, lastAnswer: Int?)] = [:]
    private var waiting: [[UInt8]: (queue: [Waiting], head: Int, bytes: Int)] = [:]
    /// Clients with waiting requests, the one whose turn is next first.
    private var turn: [[UInt8]] = []

    init(perClient: Int, waitingBytes: Int, bytesPerClient: Int? = nil, total: Int? = nil) {
        self.perClient = max(1, perClient)
        self.waitingBytes = max(0, waitingBytes)
        self.bytesPerClient = bytesPerClient.map { max(1, $0) }
        self.total = total.map { max(1, $0) }
    }

    /// Requests waiting, of every client.
    var waitingCount: Int { waiting.values.reduce(0) { $0 + $1.queue.count - $1.head } }
    func waitingBytes(of client: [UInt8]) -> Int { waiting[client]?.bytes ?? 0 }
    /// Whether `next` would hand out a request now.
    var hasStartable: Bool { turn.contains { mayStart($0, bytes: nextBytes(of: $0)) } }

    /// The bytes of the request `client` would forward next (0: none waiting).
    private func nextBytes(of client: [UInt8]) -> Int { waiting[client].map { $0.queue[$0.head].bytes } ?? 0 }

    /// What a request of `requestBytes` from `client` counts in flight.
    func cost(_ client: [UInt8], requestBytes: Int) -> Int {
        guard let bytesPerClient else { return 0 }
        return requestBytes + (self.bytes[client]?.lastAnswer ?? bytesPerClient)
    }

    private func mayStart(_ client: [UInt8], bytes requestBytes: Int) -> Bool {
        let count = inFlight[client] ?? 0
        guard count < perClient, total.map({ inFlightTotal < $0 }) ?? true else { return false }
        guard count > 0, let bytesPerClient else { return true }
        return (bytes[client]?.inFlight ?? 0) + cost(client, requestBytes: requestBytes) <= bytesPerClient
    }

    private mutating func count(_ client: [UInt8], cost: Int) {
        inFlight[client, default: 0] += 1
        inFlightTotal += 1
        if bytesPerClient != nil { bytes[client, default: (0, nil)].inFlight += cost }
    }

    mutating func admit(_ client: [UInt8], _ item: Item, bytes: Int, connection: Int32, deadline: UInt64) -> Admission {
        if waiting[client] == nil, mayStart(client, bytes: bytes) {
            let cost = cost(client, requestBytes: bytes)
            count(client, cost: cost)
            return .forward(cost: cost)
        }
        let queued = waiting[client]?.bytes ?? 0
        if queued > 0, queued + bytes > waitingBytes { return .refuse(waitingBytes: queued) }
        if waiting[client] == nil {
            waiting[client] = ([], 0, 0)
            turn.append(client)
        }
        waiting[client]!.queue.append(Waiting(item: item, bytes: bytes, connection: connection, deadline: deadline))
        waiting[client]!.bytes += bytes
        return .wait
    }

    /// A forwarded request of `client`, counted for `cost`, was answered (or failed, or timed
    /// out) with `answerBytes`.
    mutating func finish(_ client: [UInt8], cost: Int = 0, answerBytes: Int = 0) {
        guard let count = inFlight[client] else { return assertionFailure("a request counted out twice") }
        inFlight[client] = count > 1 ? count - 1 : nil
        inFlightTotal -= 1
        guard bytesPerClient != nil else { return }
        if count == 1, waiting[client] == nil {
            bytes[client] = nil  // nothing left of this client: forget it (a new client starts with one out)
        } else {
            bytes[client, default: (0, nil)].inFlight -= cost
            bytes[client]?.lastAnswer = answerBytes
        }
    }

    /// The next waiting request to forward, counted in flight (for `cost`); nil when none may go now.
    mutating func next() -> (client: [UInt8], waiting: Waiting, cost: Int)? {
        guard let index = turn.firstIndex(where: { mayStart($0, bytes: nextBytes(of: $0)) }) else { return nil }
        let client = turn.remove(at: index)
        guard var entry = waiting[client] else { return nil }
        let first = entry.queue[entry.head]
        entry.head += 1
        entry.bytes -= first.bytes
        if entry.head == entry.queue.count {
            waiting[client] = nil
        } else {
            if entry.head >= 64, entry.head * 2 >= entry.queue.count {
                entry.queue.removeFirst(entry.head)
                entry.head = 0
            }
            waiting[client] = entry
            turn.append(client)
        }
        let cost = cost(client, requestBytes: first.bytes)
        count(client, cost: cost)
        return (client, first, cost)
    }

    /// Takes out the waiting requests that `matches` selects (in their order within each client).
    mutating func removeWaiting(where matches: (Waiting) -> Bool) -> [(client: [UInt8], waiting: Waiting)] {
        var removed: [(client: [UInt8], waiting: Waiting)] = []
        for (client, entry) in waiting {
            let live = entry.queue[entry.head...]
            guard live.contains(where: matches) else { continue }
            var kept: [Waiting] = []
            for request in live {
                if matches(request) { removed.append((client, request)) } else { kept.append(request) }
            }
            if kept.isEmpty {
                waiting[client] = nil
                turn.removeAll { $0 == client }
                if inFlight[client] == nil { bytes[client] = nil }
            } else {
                waiting[client] = (kept, 0, kept.reduce(0) { $0 + $1.bytes })
            }
        }
        return removed
    }

    /// Takes out the waiting requests of connections that closed: their clients are gone.
    mutating func removeWaiting(connections: Set<Int32>) -> [(client: [UInt8], waiting: Waiting)] {
        removeWaiting { connections.contains($0.connection) }
    }

    /// Takes out the waiting requests whose deadline is `now` (wall-clock ms) or earlier.
    mutating func removeExpired(now: UInt64) -> [(client: [UInt8], waiting: Waiting)] {
        removeWaiting { $0.deadline != 0 && $0.deadline <= now }
    }
}
