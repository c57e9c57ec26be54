/// The broker's waiting jobs, one FIFO queue per client, served round-robin: `next` takes the
/// oldest job of the first client in turn that may have one now, and sends that client to the
/// back of the line. A pure value type, driven by `BrokerState`.
struct ClientQueues: Sendable {
    private var jobs: [[UInt8]: [BrokerState.Job]] = [:]
    /// Clients with waiting jobs, the one whose turn is next first.
    private var turn: [[UInt8]] = []

    var count: Int { jobs.values.reduce(0) { $0 + $1.count } }
    var isEmpty: Bool { turn.isEmpty }

    /// Queues a new job at the back of its client's queue.
    mutating func append(_ job: BrokerState.Job) {
        if jobs[job.client] == nil { turn.append(job.client) }
        jobs[job.client, default: []].append(job)
    }

    /// Puts jobs taken back from a worker at the front of their clients' queues, in their order,
    /// and those clients first in line.
    mutating func putBack(_ returned: [BrokerState.Job]) {
        for job in returned.reversed() {
            jobs[job.client, default: []].insert(job, at: 0)
            turn.removeAll { $0 == job.client }
            turn.insert(job.client, at: 0)
        }
    }

    /// The oldest job of the first client in turn that `allowed` lets have one more.
    mutating func next(where allowed: ([UInt8]) -> Bool) -> BrokerState.Job? {
        guard let index = turn.firstIndex(where: allowed) else { return nil }
        let client = turn.remove(at: index)
        guard var queue = jobs[client], !queue.isEmpty else {
            jobs[client] = nil
            return nil
        }
        let job = queue.removeFirst()
        if queue.isEmpty {
            jobs[client] = nil
        } else {
            jobs[client] = queue
            turn.append(client)
        }
        return job
    }

    /// Takes a waiting job out (its caller went away).
    mutating func remove(_ id: UInt64) -> BrokerState.Job? {
        for (client, var queue) in jobs {
            guard let index = queue.firstIndex(where: { $0.id == id }) else { continue }
            let job = queue.remove(at: index)
            drop(client, ifEmpty: queue)
            return job
        }
        return nil
    }

    /// Takes out every waiting job whose deadline is `now` or earlier.
    mutating func removeExpired(now: UInt64) -> [BrokerState.Job] {
        var expired: [BrokerState.Job] = []
        for (client, var queue) in jobs where queue.contains(where: { $0.deadline <= now }) {
            expired += queue.filter { $0.deadline <= now }
            queue.removeAll { $0.deadline <= now }
            drop(client, ifEmpty: queue)
        }
        return expired.sorted { $0.id < $1.id }
    }

    private mutating func drop(_ client: [UInt8], ifEmpty queue: [BrokerState.Job]) {
        if queue.isEmpty {
            jobs[client] = nil
            turn.removeAll { $0 == client }
        } else {
            jobs[client] = queue
        }
    }
}
