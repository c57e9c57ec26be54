public import SofaCore
public import SofaWire

/// The broker's protocol logic, with no I/O: which worker is idle, which job runs where, who is
/// dead. The `Broker` shell feeds it events (a job submitted, a frame from a worker, a clock
/// tick) and carries out the actions it returns (send a frame, complete a job).
///
/// Rules:
/// * A worker joins with READY and is then idle. It takes one job at a time.
/// * A job goes to the idle worker that has waited longest; with none idle it waits in a queue.
/// * Any frame from a worker proves it alive. Every `heartbeatMs` the broker sends a HEARTBEAT to
///   each worker; a worker silent for `heartbeatMs * liveness` is dead and forgotten.
/// * A dead worker's job is retried once on another worker; a job that already failed over once
///   completes with `.unavailable`.
/// * A job past its deadline completes with `.timeout`, queued or running.
/// * A cancelled job (its caller went away) completes with `.cancelled`; a running one's worker
///   gets CANCEL.
/// * A frame from an unknown worker (e.g. after the broker restarted) is answered with
///   DISCONNECT, which tells the worker to announce itself again.
public struct BrokerState: Sendable {
    public struct Job: Sendable {
        public var id: UInt64
        public var request: Request
        public var deadline: UInt64  // monotonic ms
        public var attempts = 0

        public init(id: UInt64, request: Request, deadline: UInt64) {
            self.id = id
            self.request = request
            self.deadline = deadline
        }
    }

    public struct Worker: Sendable {
        public var identity: [UInt8]
        public var instance: String
        public var pid: UInt32
        public var lastSeen: UInt64
        public var job: Job?
    }

    public enum Action: Sendable, Equatable {
        case send(identity: [UInt8], frame: WorkerFrame)
        case complete(jobID: UInt64, response: Response)
    }

    public let heartbeatMs: UInt64
    public let liveness: UInt64
    public private(set) var workers: [[UInt8]: Worker] = [:]
    private var idle: [[UInt8]] = []
    private var queue: [Job] = []
    private var lastHeartbeat: UInt64 = 0

    public init(heartbeatMs: UInt64 = 500, liveness: UInt64 = 3) {
        self.heartbeatMs = heartbeatMs
        self.liveness = liveness
    }

    public var busyCount: Int { workers.values.filter { $0.job != nil }.count }
    public var queuedCount: Int { queue.count }

    public mutating func submit(_ job: Job) -> [Action] {
        queue.append(job)
        return dispatch()
    }

    public mutating func received(_ frame: WorkerFrame, from identity: [UInt8], now: UInt64) -> [Action] {
        if frame.kind == .ready {
            if let old = workers[identity], let job = old.job {
                // The same socket announced itself again: it lost what it was doing.
                queue.insert(job, at: 0)
            }
            workers[identity] = Worker(identity: identity, instance: frame.instance, pid: frame.pid, lastSeen: now)
            idle.removeAll { $0 == identity }
            idle.append(identity)
            return dispatch()
        }
        guard var worker = workers[identity] else {
            return frame.kind == .disconnect ? [] : [.send(identity: identity, frame: WorkerFrame(kind: .disconnect))]
        }
        worker.lastSeen = now
        workers[identity] = worker
        switch frame.kind {
        case .reply:
            var actions: [Action] = []
            if let job = worker.job, job.id != 0 {
                let response: Response
                if var decoded = try? Response.decode(frame.payload) {
                    decoded.id = job.id
                    response = decoded
                } else {
                    response = .failure(job.id, SofaError(.malformedMessage, "worker \(worker.instance) sent a malformed reply"))
                }
                actions.append(.complete(jobID: job.id, response: response))
            }
            worker.job = nil
            workers[identity] = worker
            idle.append(identity)
            return actions + dispatch()
        case .disconnect:
            return remove(identity, reason: "worker \(worker.instance) left")
        case .heartbeat, .ready, .request, .cancel:
            return []
        }
    }

    /// The job's caller went away: a queued job is dropped; a running one is left to its worker,
    /// which is told to stop it (CANCEL) and becomes idle when it replies. Either way the job
    /// completes now with `.cancelled`.
    public mutating func cancel(_ jobID: UInt64) -> [Action] {
        let cancelled = Action.complete(jobID: jobID, response: .failure(jobID, SofaError(.cancelled, "the request was cancelled")))
        if let index = queue.firstIndex(where: { $0.id == jobID }) {
            queue.remove(at: index)
            return [cancelled]
        }
        guard jobID != 0, let (identity, worker) = workers.first(where: { $0.value.job?.id == jobID }) else { return [] }
        var updated = worker
        updated.job?.id = 0  // its late reply is dropped
        updated.job?.deadline = .max
        workers[identity] = updated
        return [cancelled, .send(identity: identity, frame: WorkerFrame(kind: .cancel, requestID: jobID))]
    }

    public mutating func tick(now: UInt64) -> [Action] {
        var actions: [Action] = []
        let deadline = heartbeatMs * liveness
        for (identity, worker) in workers where now &- worker.lastSeen > deadline {
            actions += remove(identity, reason: "worker \(worker.instance) (pid \(worker.pid)) stopped answering")
        }
        // Jobs past their deadline, queued or running.
        let expired = queue.filter { $0.deadline <= now }
        queue.removeAll { $0.deadline <= now }
        for job in expired {
            actions.append(.complete(jobID: job.id, response: .failure(job.id, .timeout("no query worker finished the request before its deadline"))))
        }
        for (identity, worker) in workers {
            if let job = worker.job, job.deadline <= now {
                var updated = worker
                // The worker keeps working on it; its late reply is dropped and it becomes idle then.
                updated.job?.request.deadline = 0
                updated.job?.deadline = .max
                updated.job?.id = 0
                workers[identity] = updated
                actions.append(.complete(jobID: job.id, response: .failure(job.id, .timeout("the query worker did not answer before the deadline"))))
            }
        }
        if now &- lastHeartbeat >= heartbeatMs {
            lastHeartbeat = now
            for identity in workers.keys {
                actions.append(.send(identity: identity, frame: WorkerFrame(kind: .heartbeat)))
            }
        }
        return actions.filter {
            if case .complete(let id, _) = $0 { return id != 0 }
            return true
        }
    }

    private mutating func remove(_ identity: [UInt8], reason: String) -> [Action] {
        guard let worker = workers.removeValue(forKey: identity) else { return [] }
        idle.removeAll { $0 == identity }
        guard var job = worker.job, job.id != 0 else { return dispatch() }
        job.attempts += 1
        if job.attempts >= 2 {
            return [.complete(jobID: job.id, response: .failure(job.id, .unavailable("\(reason) with the request; it failed on a second worker too")))]
                + dispatch()
        }
        queue.insert(job, at: 0)
        return dispatch()
    }

    private mutating func dispatch() -> [Action] {
        var actions: [Action] = []
        while !queue.isEmpty, !idle.isEmpty {
            let identity = idle.removeFirst()
            guard var worker = workers[identity] else { continue }
            let job = queue.removeFirst()
            worker.job = job
            workers[identity] = worker
            var request = job.request
            request.id = job.id
            actions.append(.send(identity: identity, frame: WorkerFrame(kind: .request, payload: request.encoded())))
        }
        return actions
    }
}
