/// Fair forwarding: how many of each client's requests a server has passed on to a service and
/// not yet seen answered, and the client's further requests that wait their turn. A pure value
/// type, driven by `FairForwarder` (which does the forwarding and answering).
///
/// * A client with fewer than `perClient` requests in flight, none waiting (and, when `total` is
///   set, fewer than `total` in flight across clients) has its request forwarded at once.
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
        /// Forward it now: it is counted in flight.
        case forward
        /// It waits its turn.
        case wait
        /// Refused: the client already has `waitingBytes` bytes of requests waiting.
        case refuse(waitingBytes: Int)
    }

    let perClient: Int
    let waitingBytes: Int
    /// The most requests in flight across clients; nil: no limit.
    let total: Int?
    private(set) var inFlight: [[UInt8]: Int] = [:]
    private(set) var inFlightTotal = 0
    private var waiting: [[UInt8]: (queue: [Waiting], head: Int, bytes: Int)] = [:]
    /// Clients with waiting requests, the one whose turn is next first.
    private var turn: [[UInt8]] = []

    init(perClient: Int, waitingBytes: Int, total: Int? = nil) {
        self.perClient = max(1, perClient)
        self.waitingBytes = max(0, waitingBytes)
        self.total = total.map { max(1, $0) }
    }

    /// Requests waiting, of every client.
    var waitingCount: Int { waiting.values.reduce(0) { $0 + $1.queue.count - $1.head } }
    func waitingBytes(of client: [UInt8]) -> Int { waiting[client]?.bytes ?? 0 }
    /// Whether `next` would hand out a request now.
    var hasStartable: Bool { turn.contains(where: mayStart) }

    private func mayStart(_ client: [UInt8]) -> Bool {
        (inFlight[client] ?? 0) < perClient && (total.map { inFlightTotal < $0 } ?? true)
    }

    mutating func admit(_ client: [UInt8], _ item: Item, bytes: Int, connection: Int32, deadline: UInt64) -> Admission {
        if waiting[client] == nil, mayStart(client) {
            inFlight[client, default: 0] += 1
            inFlightTotal += 1
            return .forward
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

    /// A forwarded request of `client` was answered (or failed, or timed out).
    mutating func finish(_ client: [UInt8]) {
        guard let count = inFlight[client] else { return assertionFailure("a request counted out twice") }
        inFlight[client] = count > 1 ? count - 1 : nil
        inFlightTotal -= 1
    }

    /// The next waiting request to forward, counted in flight; nil when none may go now.
    mutating func next() -> (client: [UInt8], waiting: Waiting)? {
        guard let index = turn.firstIndex(where: mayStart) else { return nil }
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
        inFlight[client, default: 0] += 1
        inFlightTotal += 1
        return (client, first)
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
