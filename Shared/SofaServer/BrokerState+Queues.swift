internal import DequeModule

/// The broker's waiting jobs, one FIFO queue per client, served round-robin: `next` takes the
/// oldest job of the first client in turn that may have one now, and sends that client to the
/// back of the line. A pure value type, driven by `BrokerState`.
///
/// Queues are changed where they are stored (through the dictionary's index), never copied out
/// and written back: a copy of a client's queue taken out and changed copies every job in it
/// (measured on the gateway with 64 lookups in flight from one client: taking a job copied the
/// 48 that waited behind it).
struct ClientQueues: Sendable {
    /// Never holds an empty queue.
    private var jobs: [[UInt8]: Deque<BrokerState.Job>] = [:]
    /// Clients with waiting jobs, the one whose turn is next first.
    private var turn: Deque<[UInt8]> = []

    private(set) var count = 0
    var isEmpty: Bool { turn.isEmpty }

    /// Queues a new job at the back of its client's queue.
    mutating func append(_ job: BrokerState.Job) {
        count += 1
        if let index = jobs.index(forKey: job.client) {
            jobs.values[index].append(job)
        } else {
            jobs[job.client] = [job]
            turn.append(job.client)
        }
    }

    /// Puts jobs taken back from a worker at the front of their clients' queues, in their order,
    /// and those clients first in line.
    mutating func putBack(_ returned: [BrokerState.Job]) {
        for job in returned.reversed() {
            count += 1
            jobs[job.client, default: []].prepend(job)
            turn.removeAll { $0 == job.client }
            turn.prepend(job.client)
        }
    }

    /// The oldest job of the first client in turn that `allowed` lets have one more.
    mutating func next(where allowed: ([UInt8]) -> Bool) -> BrokerState.Job? {
        guard let position = turn.firstIndex(where: allowed) else { return nil }
        let client = turn.remove(at: position)
        guard let index = jobs.index(forKey: client), !jobs.values[index].isEmpty else {
            jobs[client] = nil
            return nil
        }
        let job = jobs.values[index].removeFirst()
        count -= 1
        if jobs.values[index].isEmpty {
            jobs.remove(at: index)
        } else {
            turn.append(client)
        }
        return job
    }

    /// Takes a waiting job out (its caller went away).
    mutating func remove(_ id: UInt64) -> BrokerState.Job? {
        for index in Array(jobs.indices) {
            guard let position = jobs.values[index].firstIndex(where: { $0.id == id }) else { continue }
            let job = jobs.values[index].remove(at: position)
            count -= 1
            if jobs.values[index].isEmpty {
                let client = jobs.keys[index]
                jobs.remove(at: index)
                turn.removeAll { $0 == client }
            }
            return job
        }
        return nil
    }

    /// Takes out every waiting job whose deadline is `now` or earlier.
    mutating func removeExpired(now: UInt64) -> [BrokerState.Job] {
        var expired: [BrokerState.Job] = []
        var emptied: [[UInt8]] = []
        for index in Array(jobs.indices) where jobs.values[index].contains(where: { $0.deadline <= now }) {
            expired += jobs.values[index].filter { $0.deadline <= now }
            jobs.values[index].removeAll { $0.deadline <= now }
            if jobs.values[index].isEmpty { emptied.append(jobs.keys[index]) }
        }
        for client in emptied {
            jobs[client] = nil
            turn.removeAll { $0 == client }
        }
        count -= expired.count
        return expired.sorted { $0.id < $1.id }
    }
}
