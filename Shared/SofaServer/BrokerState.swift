import SofaBus
public import SofaCore
public import SofaWire

/// The broker's protocol logic, with no I/O: which worker has room, which job runs where, who is
/// dead. The `Broker` shell feeds it events (a job submitted, a frame from a worker, a clock
/// tick) and carries out the actions it returns (send a frame, complete a job).
///
/// Rules:
/// * A worker joins with READY, saying how many jobs it takes at once (its capacity, at least
///   1), so a worker always has its next job at hand instead of waiting a round trip for it.
/// * A job goes to a worker with no job, the one that has waited longest; with none free, to a
///   worker with room whose jobs are all of the same client, if its oldest job is younger than
///   `prefetchMs` (one running longer is likely a long query, and what waits behind it should go
///   to whichever worker frees first), and if it holds fewer than `shallowDepth` jobs or all it
///   holds are expected to end within `prefetchMs`; else it waits in a queue. A client's job
///   never waits at a worker behind another client's: a client that sends long queries slows
///   itself alone.
/// * Short jobs that come together stay together: a job of a kind (`ForwardedRequest.workKind`)
///   whose recent runs took under `convoyMs` goes to a worker already holding that client's
///   young jobs, rather than to a free one, while all it holds are expected to end within
///   `convoyMs` too. Measured with 16 point lookups in flight and two workers: spread over both,
///   each worker woke for half the lookups, and every process spent more per lookup (gateway 27
///   against 17 µs, client 16 against 11, workers 33 against 19). A kind not seen yet, or a slow
///   one (a scan), is spread as before, so slow jobs that come together still run side by side.
/// * A reply completes the job whose id it carries; one naming a job its worker does not hold
///   (sent before the worker was declared dead and joined again) is dropped.
/// * Any frame from a worker proves it alive. Every `heartbeatMs` the broker sends a HEARTBEAT to
///   each worker; a worker silent for `heartbeatMs * liveness` is dead and forgotten.
/// * A worker runs its jobs one after the other, in the order it got them: its oldest job is the
///   one running. When a worker dies (falls silent), that job completes with `.unavailable` and is
///   not retried: it may be what killed the worker, and another run could kill another one. The
///   jobs only waiting behind it go back to the front of their clients' queues. A worker that
///   leaves (DISCONNECT) did not die of its work: all its jobs are retried.
/// * Jobs carry the client they came from. Each client has its own queue; the queues are served
///   round-robin, and a client holds at most `clientShare` percent of the workers (at least one)
///   with its jobs, running, waiting at a worker, or abandoned but still running. A share of 100
///   or more sets no limit. So a client sending long queries fills its own share, not the cluster.
/// * A job past its deadline completes with `.timeout`, queued or running.
/// * A cancelled job (its caller went away) completes with `.cancelled`; a running one's worker
///   gets CANCEL.
/// * A running job completed early (deadline, cancel) keeps its slot until the worker replies;
///   that late reply is dropped.
/// * A frame from an unknown worker (e.g. after the broker restarted) is answered with
///   DISCONNECT, which tells the worker to announce itself again.
/// * READY from a new socket with the instance name and pid of a known worker is that worker
///   reconnected (it stopped hearing the broker): the old socket is forgotten and the worker
///   keeps its running jobs, whose replies now come on the new one. (Instance names are unique
///   per worker; the default one holds the host name and pid.)
public struct BrokerState: Sendable {
    public struct Job: Sendable {
        public var id: UInt64
        /// The request, encoded as it came (a router passes queries on undecoded): the worker gets
        /// it with the job's id and `wireDeadline`.
        public var request: ForwardedRequest
        /// The deadline the worker is given (wall-clock ms, the wire's unit; 0: none).
        public var wireDeadline: UInt64
        public var deadline: UInt64  // monotonic ms
        /// Who sent it (the gateway's peer identity of the client's connection; empty: unknown).
        public var client: [UInt8]
        /// How many times it was taken back from a worker that died or left before running it.
        public var attempts = 0
        /// Completed already (deadline, cancel) while its worker still runs it.
        public var abandoned = false
        /// When it was sent to its worker (monotonic ms).
        public var sentAt: UInt64 = 0
        /// What kind of work it is (`ForwardedRequest.workKind`): jobs of one kind take about as
        /// long as each other.
        public var kind: Int
        /// How long it was expected to take when it was sent (ms; `BrokerState.unknownMs` when
        /// its kind had not run yet).
        var expectedMs: Double = 0

        public init(id: UInt64, request: ForwardedRequest, wireDeadline: UInt64, deadline: UInt64, client: [UInt8] = []) {
            self.id = id
            self.request = request
            self.wireDeadline = wireDeadline
            self.deadline = deadline
            self.client = client
            self.kind = request.workKind
        }

        /// A job for a decoded request (its own deadline goes to the worker).
        public init(id: UInt64, request: Request, deadline: UInt64, client: [UInt8] = []) {
            self.init(id: id, request: ForwardedRequest(request), wireDeadline: request.deadline, deadline: deadline,
                      client: client)
        }
    }

    public struct Worker: Sendable {
        public var identity: [UInt8]
        public var instance: String
        public var pid: UInt32
        public var lastSeen: UInt64
        /// Jobs it takes at once.
        public var capacity: Int
        /// Its jobs, in the order they were sent.
        public var jobs: [Job] = []
        /// Its oldest job.
        public var job: Job? { jobs.first }
        /// When it last replied (monotonic ms): its next job started then, or when it was sent.
        var lastReply: UInt64 = 0
        /// The time its jobs are expected to take together (ms; see `Job.expectedMs`).
        var expectedMs: Double = 0
        var hasRoom: Bool { jobs.count < capacity }
    }

    public enum Action: Sendable, Equatable {
        case send(identity: [UInt8], frame: WorkerFrame)
        case complete(jobID: UInt64, outcome: Outcome)
    }

    /// How a job ended: its worker's response, encoded as the worker sent it (its id is the
    /// job's), or an error of the broker's own (deadline, cancel, a dead worker).
    public enum Outcome: Sendable, Equatable {
        case answered([UInt8])
        case failed(SofaError)

        /// As a decoded response with `id`.
        public func response(id: UInt64) -> Response {
            switch self {
            case .answered(let bytes):
                guard var response = try? Response.decode(bytes) else {
                    return .failure(id, SofaError(.malformedMessage, "a query worker sent a malformed reply"))
                }
                response.id = id
                return response
            case .failed(let error): return .failure(id, error)
            }
        }
    }

    public let heartbeatMs: UInt64
    public let liveness: UInt64
    /// The percent of the workers one client's jobs may occupy (at least one worker); 100 or
    /// more: no limit.
    public let clientShare: Int
    public private(set) var workers: [[UInt8]: Worker] = [:]
    /// Workers with room, the one waiting longest first.
    private var idle: [[UInt8]] = []
    /// The waiting jobs: one queue per client, served round-robin.
    var queues = ClientQueues()
    /// How long jobs of each kind took lately (ms, a moving average), by `Job.kind`.
    private var recentMs: [Int: Double] = [:]
    /// What a job of a kind not run yet is taken to need: long enough never to join a convoy.
    static let unknownMs: Double = 1_000_000
    /// Jobs expected to end within this (ms) together wait at one worker rather than wake another.
    public static let convoyMs: Double = 1
    private var lastHeartbeat: UInt64 = 0
    /// The latest clock reading seen (monotonic ms).
    private var now: UInt64 = 0
    public static let prefetchMs: UInt64 = 20
    /// Jobs a worker holds at most (within its capacity) unless all it holds are known to be
    /// short: past this many, it takes more only while they are expected to end within
    /// `prefetchMs` together. So a deep worker queue (`QueryService.capacity`) fills with point
    /// lookups, never with a client's minutes of slow queries ahead of another client's.
    public static let shallowDepth = 16

    public init(heartbeatMs: UInt64 = 500, liveness: UInt64 = 3, clientShare: Int = 100) {
        self.heartbeatMs = heartbeatMs
        self.liveness = liveness
        self.clientShare = max(1, clientShare)
    }

    public var busyCount: Int { workers.values.reduce(0) { $0 + ($1.jobs.isEmpty ? 0 : 1) } }
    /// Counts the workers joining and leaving: what a snapshot of the state must show at once.
    public private(set) var membership = 0
    public var queuedCount: Int { queues.count }

    /// How many jobs one client may have at workers now.
    public var clientLimit: Int {
        clientShare >= 100 ? .max : max(1, workers.count * clientShare / 100)
    }

    /// The jobs `client` has at workers (running, waiting there, or abandoned but still running).
    public func jobsAtWorkers(of client: [UInt8]) -> Int {
        workers.values.reduce(0) { $0 + $1.jobs.filter { $0.client == client }.count }
    }

    public mutating func submit(_ job: Job, now: UInt64? = nil) -> [Action] {
        if let now { self.now = max(self.now, now) }
        queues.append(job)
        return dispatch()
    }

    public mutating func received(_ frame: WorkerFrame, from identity: [UInt8], now: UInt64) -> [Action] {
        self.now = max(self.now, now)
        if frame.kind == .ready {
            membership += 1
            var carried: [Job] = []
            if let old = workers[identity] {
                // The same socket announced itself again: it lost what it was doing.
                queues.putBack(old.jobs.filter { !$0.abandoned })
            }
            if let (oldIdentity, old) = workers.first(where: {
                $0.key != identity && $0.value.instance == frame.instance && $0.value.pid == frame.pid
            }) {
                // The same process on a fresh socket (it stopped hearing the broker and
                // reconnected): its jobs still run there, and their replies come this way now.
                carried = old.jobs
                workers[oldIdentity] = nil
                idle.removeAll { $0 == oldIdentity }
            }
            var worker = Worker(identity: identity, instance: frame.instance, pid: frame.pid, lastSeen: now,
                                capacity: max(1, Int(frame.capacity)))
            worker.jobs = carried
            worker.expectedMs = carried.reduce(0) { $0 + $1.expectedMs }
            workers[identity] = worker
            idle.removeAll { $0 == identity }
            if worker.hasRoom { idle.append(identity) }
            return dispatch()
        }
        // Changed in place (through the dictionary's index): a worker copied out, changed and
        // written back copies its list of jobs on the next change. (Loops that change workers
        // walk a copy of the indexes: the live ones hold the dictionary, which a change would copy.)
        guard let slot = workers.index(forKey: identity) else {
            return frame.kind == .disconnect ? [] : [.send(identity: identity, frame: WorkerFrame(kind: .disconnect))]
        }
        workers.values[slot].lastSeen = now
        switch frame.kind {
        case .reply:
            // Only the reply's id is read: the response goes back to the client as the worker sent it.
            let repliedID = frame.payload.withUnsafeBytes { ForwardedResponse.peekID($0) }
            // The job the reply names. A reply that names no job (id 0: the worker could not read
            // the request) or that cannot be read can only be a lone job's. A reply naming a job
            // this worker no longer holds is stale (it was declared dead, its jobs went elsewhere,
            // and it joined again): it is dropped, never taken for the job the worker has now.
            let index: Int?
            if let repliedID, repliedID != 0 {
                index = workers.values[slot].jobs.firstIndex { $0.id == repliedID }
            } else {
                index = workers.values[slot].jobs.count == 1 ? 0 : nil
            }
            guard let index else { return [] }
            let job = workers.values[slot].jobs.remove(at: index)
            learn(job, worker: slot)
            if !idle.contains(identity) { idle.append(identity) }
            var actions: [Action] = []
            if !job.abandoned {
                let outcome: Outcome
                if let repliedID, repliedID == job.id {
                    outcome = .answered(frame.payload)
                } else if repliedID == 0, var decoded = try? Response.decode(frame.payload) {
                    // A lone job's reply without its id (the worker could not read the request).
                    decoded.id = job.id
                    outcome = .answered(decoded.encoded())
                } else {
                    outcome = .failed(SofaError(.malformedMessage, "worker \(workers.values[slot].instance) sent a malformed reply"))
                }
                actions.append(.complete(jobID: job.id, outcome: outcome))
            }
            dispatch(into: &actions)
            return actions
        case .disconnect:
            return remove(identity, reason: "worker \(workers.values[slot].instance) left", died: false)
        case .heartbeat, .ready, .request, .cancel:
            return []
        }
    }

    /// The job's caller went away: a queued job is dropped; a running one is left to its worker,
    /// which is told to stop it (CANCEL) and frees its slot when it replies. Either way the job
    /// completes now with `.cancelled`.
    public mutating func cancel(_ jobID: UInt64) -> [Action] {
        let cancelled = Action.complete(jobID: jobID, outcome: .failed(SofaError(.cancelled, "the request was cancelled")))
        if queues.remove(jobID) != nil { return [cancelled] }
        for slot in Array(workers.indices) {
            guard let index = workers.values[slot].jobs.firstIndex(where: { $0.id == jobID && !$0.abandoned }) else { continue }
            workers.values[slot].jobs[index].abandoned = true
            return [cancelled, .send(identity: workers.keys[slot], frame: WorkerFrame(kind: .cancel, requestID: jobID))]
        }
        return []
    }

    public mutating func tick(now: UInt64) -> [Action] {
        self.now = max(self.now, now)
        var actions: [Action] = []
        let deadline = heartbeatMs * liveness
        for (identity, worker) in workers where now &- worker.lastSeen > deadline {
            actions += remove(identity, reason: "the query worker \(worker.instance) (pid \(worker.pid)) stopped answering",
                              died: true)
        }
        // Jobs past their deadline, queued or running.
        for job in queues.removeExpired(now: now) {
            actions.append(.complete(jobID: job.id, outcome: .failed(.timeout("no query worker finished the request before its deadline"))))
        }
        for slot in Array(workers.indices) {
            for index in workers.values[slot].jobs.indices
            where !workers.values[slot].jobs[index].abandoned && workers.values[slot].jobs[index].deadline <= now {
                // The worker keeps working on it; its late reply is dropped and frees the slot.
                workers.values[slot].jobs[index].abandoned = true
                let id = workers.values[slot].jobs[index].id
                actions.append(.complete(jobID: id, outcome: .failed(.timeout("the query worker did not answer before the deadline"))))
            }
        }
        if now &- lastHeartbeat >= heartbeatMs {
            lastHeartbeat = now
            for identity in workers.keys {
                actions.append(.send(identity: identity, frame: WorkerFrame(kind: .heartbeat)))
            }
        }
        return actions
    }

    /// Forgets a worker. When it `died`, its oldest job (the one it was running) fails for good;
    /// the others, which only waited there, are retried first.
    private mutating func remove(_ identity: [UInt8], reason: String, died: Bool) -> [Action] {
        guard let worker = workers.removeValue(forKey: identity) else { return [] }
        membership += 1
        idle.removeAll { $0 == identity }
        var actions: [Action] = []
        var retried: [Job] = []
        for (index, var job) in worker.jobs.enumerated() where !job.abandoned {
            if died && index == 0 {
                actions.append(.complete(jobID: job.id, outcome: .failed(.unavailable(
                    "\(reason) while running this request, which may be what made it die: it was not retried"))))
            } else {
                job.attempts += 1
                retried.append(job)
            }
        }
        queues.putBack(retried)
        return actions + dispatch()
    }

    /// Hands queued jobs to workers with room: the least busy first, then the one waiting longest;
    /// the next job is the next client's in turn that is within its share.
    private mutating func dispatch() -> [Action] {
        var actions: [Action] = []
        dispatch(into: &actions)
        return actions
    }

    private mutating func dispatch(into actions: inout [Action]) {
        guard !queues.isEmpty else { return }
        let limit = clientLimit
        var atWorkers: [[UInt8]: Int] = [:]
        if limit != .max {
            for worker in workers.values {
                for job in worker.jobs { atWorkers[job.client, default: 0] += 1 }
            }
        }
        while !queues.isEmpty {
            idle.removeAll { workers[$0]?.hasRoom != true }
            if idle.isEmpty { break }
            // A worker with jobs takes one more only from the same client (a client waits behind
            // its own queries, never another's), and only while its oldest is young.
            let free = idle.indices.filter { workers[idle[$0]]?.jobs.isEmpty == true }
            var prefetching: [[UInt8]: [Int]] = [:]
            if free.isEmpty {
                for index in idle.indices {
                    guard let worker = workers[idle[index]], let oldest = worker.jobs.first, now &- oldest.sentAt < Self.prefetchMs,
                          worker.jobs.allSatisfy({ $0.client == oldest.client }) else { continue }
                    prefetching[oldest.client, default: []].append(index)
                }
            }
            guard var job = queues.next(where: { client in
                (limit == .max || atWorkers[client, default: 0] < limit) && (!free.isEmpty || prefetching[client] != nil)
            }) else { break }
            var candidates = free.isEmpty ? prefetching[job.client] ?? [] : free
            let expected = recentMs[job.kind] ?? Self.unknownMs
            if free.isEmpty {
                // Past `shallowDepth` jobs, a worker takes one more only if all it would hold are
                // expected to end within `prefetchMs` (this one too).
                candidates = candidates.filter { index in
                    guard let worker = workers[idle[index]] else { return false }
                    return worker.jobs.count < Self.shallowDepth || worker.expectedMs + expected < Double(Self.prefetchMs)
                }
            }
            if !free.isEmpty, expected < Self.convoyMs {
                let joining = convoy(of: job.client, adding: expected)
                if !joining.isEmpty { candidates = joining }
            }
            guard let pick = candidates.min(by: { (workers[idle[$0]]?.jobs.count ?? 0) < (workers[idle[$1]]?.jobs.count ?? 0) })
            else {
                queues.putBack([job])
                break
            }
            atWorkers[job.client, default: 0] += 1
            let identity = idle.remove(at: pick)
            guard let slot = workers.index(forKey: identity) else {
                queues.putBack([job])
                continue
            }
            job.sentAt = now
            job.expectedMs = expected
            let frame = WorkerFrame(kind: .request, payload: job.request.bytes(id: job.id, deadline: job.wireDeadline))
            workers.values[slot].jobs.append(job)
            workers.values[slot].expectedMs += expected
            if workers.values[slot].hasRoom { idle.append(identity) }
            actions.append(.send(identity: identity, frame: frame))
        }
    }

    /// The workers with room (as indexes of `idle`) that a job of `client` expected to take
    /// `expected` ms may join: they hold only that client's jobs, the oldest of them young, and
    /// all of them and this one are expected to end within `convoyMs`.
    private func convoy(of client: [UInt8], adding expected: Double) -> [Int] {
        idle.indices.filter { index in
            guard let worker = workers[idle[index]], let oldest = worker.jobs.first,
                  now &- oldest.sentAt < Self.prefetchMs, worker.expectedMs + expected < Self.convoyMs else { return false }
            return worker.jobs.allSatisfy { $0.client == client }
        }
    }

    /// A job has ended at the worker at `slot`: how long it took goes into its kind's average
    /// (the worker runs its jobs one after the other, so it started when it was sent or when the
    /// worker's previous reply came, whichever was later).
    private mutating func learn(_ job: Job, worker slot: Dictionary<[UInt8], Worker>.Index) {
        let took = Double(now &- max(job.sentAt, workers.values[slot].lastReply))
        workers.values[slot].lastReply = now
        workers.values[slot].expectedMs = workers.values[slot].jobs.isEmpty ? 0 : max(0, workers.values[slot].expectedMs - job.expectedMs)
        if recentMs.count >= 4096 && recentMs[job.kind] == nil { recentMs.removeAll() }
        recentMs[job.kind] = recentMs[job.kind].map { $0 * 0.75 + took * 0.25 } ?? took
    }
}
