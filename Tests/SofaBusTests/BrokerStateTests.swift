import SofaBus
import SofaServer
import SofaCore
import SofaWire
import Testing

/// `BrokerState` is pure: these tests drive it with frames and a fake monotonic clock (`now`, in
/// ms), with no sockets and no real time.
@Suite struct BrokerStateTests {
    static let a: [UInt8] = [0, 0xA]
    static let b: [UInt8] = [0, 0xB]
    static let stranger: [UInt8] = [0, 0xF]

    static func ready(_ instance: String, pid: UInt32 = 100) -> WorkerFrame {
        WorkerFrame(kind: .ready, instance: instance, pid: pid, service: "query")
    }

    static func heartbeat() -> WorkerFrame { WorkerFrame(kind: .heartbeat) }

    /// The request of job `id` (each job's is its own).
    static func request(_ id: UInt64) -> Request {
        Request(id: 999, database: "db", operation: .echo(payload: [UInt8(truncatingIfNeeded: id)], delayMs: 0, service: "query"))
    }

    static func job(_ id: UInt64, deadline: UInt64 = 1_000_000, client: [UInt8] = []) -> BrokerState.Job {
        BrokerState.Job(id: id, request: request(id), deadline: deadline, client: client)
    }

    static func reply(_ response: Response) -> WorkerFrame {
        WorkerFrame(kind: .reply, payload: response.encoded())
    }

    /// The requests sent to workers, decoded: (worker identity, request).
    static func dispatched(_ actions: [BrokerState.Action]) throws -> [([UInt8], Request)] {
        try actions.compactMap { action in
            guard case .send(let identity, let frame) = action, frame.kind == .request else { return nil }
            return (identity, try Request.decode(frame.payload))
        }
    }

    /// The jobs completed, each with its outcome as a response with the job's id.
    static func completions(_ actions: [BrokerState.Action]) -> [(UInt64, Response)] {
        actions.compactMap { action -> (UInt64, Response)? in
            guard case .complete(let id, let outcome) = action else { return nil }
            return (id, outcome.response(id: id))
        }
    }

    static func heartbeatsSent(_ actions: [BrokerState.Action]) -> Set<[UInt8]> {
        Set(actions.compactMap { action in
            guard case .send(let identity, let frame) = action, frame.kind == .heartbeat else { return nil }
            return identity
        })
    }

    /// The request a worker must receive for `job`: the job's request with the job's id.
    static func expectedRequest(_ job: BrokerState.Job) -> Request {
        var request = request(job.id)
        request.id = job.id
        return request
    }

    /// A cancelled queued job leaves the queue; a cancelled running one completes at once, its
    /// worker gets CANCEL with the job's id, and the worker's late reply is dropped and frees it.
    @Test func cancelledJobsCompleteAndTheirWorkerIsTold() throws {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(Self.ready("A"), from: Self.a, now: 0)
        #expect(try Self.dispatched(state.submit(Self.job(1))).map(\.0) == [Self.a])
        #expect(state.submit(Self.job(2)).isEmpty)
        #expect(state.queuedCount == 1)

        let queued = state.cancel(2)
        #expect(Self.completions(queued).map(\.0) == [2])
        if case .failure(let error)? = Self.completions(queued).first?.1.outcome {
            #expect(error.is(.cancelled))
        } else {
            Issue.record("a cancelled job completes with an error")
        }
        #expect(state.queuedCount == 0)

        let running = state.cancel(1)
        #expect(Self.completions(running).map(\.0) == [1])
        let cancels = running.compactMap { action -> ([UInt8], UInt64)? in
            guard case .send(let identity, let frame) = action, frame.kind == .cancel else { return nil }
            return (identity, frame.requestID)
        }
        #expect(cancels.map(\.0) == [Self.a])
        #expect(cancels.map(\.1) == [1])
        #expect(state.busyCount == 1)
        #expect(state.cancel(1).isEmpty, "a job is cancelled once")

        // The late reply completes nothing and the worker takes the next job.
        let late = state.received(Self.reply(.failure(1, SofaError(.cancelled, "stopped"))), from: Self.a, now: 1)
        #expect(Self.completions(late).isEmpty)
        #expect(state.busyCount == 0)
        #expect(try Self.dispatched(state.submit(Self.job(3))).map(\.1.id) == [3])
    }

    /// A job waits at a worker only behind jobs of its own client: with every worker busy, a
    /// young job of another client does not take a newcomer's job (it might be a long query); the
    /// newcomer waits for the first worker to free. Its own client's next job may queue there.
    @Test func aClientNeverWaitsAtAWorkerBehindAnotherClient() throws {
        let hog: [UInt8] = [1], other: [UInt8] = [2]
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(WorkerFrame(kind: .ready, instance: "A", pid: 1, service: "query", capacity: 4), from: Self.a, now: 0)
        _ = state.received(WorkerFrame(kind: .ready, instance: "B", pid: 2, service: "query", capacity: 4), from: Self.b, now: 0)
        #expect(try Self.dispatched(state.submit(Self.job(1, client: hog), now: 1)).map(\.0) == [Self.a])
        #expect(try Self.dispatched(state.submit(Self.job(2, client: hog), now: 1)).map(\.0) == [Self.b])
        // Both workers hold a young job of the hog: another client's job waits in the queue.
        #expect(try Self.dispatched(state.submit(Self.job(3, client: other), now: 2)).isEmpty)
        #expect(state.queuedCount == 1)
        // The hog's own next job may queue behind its own.
        #expect(try Self.dispatched(state.submit(Self.job(4, client: hog), now: 2)).count == 1)
        // B frees: the other client's job goes there, not behind the hog's on A.
        let freed = state.received(Self.reply(.ok(2, .none)), from: Self.b, now: 3)
        let sent = try Self.dispatched(freed)
        #expect(sent.map(\.0) == [Self.b])
        #expect(sent.map(\.1.id) == [3])
    }

    /// A worker announcing a capacity gets that many jobs at once, the least busy worker first;
    /// replies complete the job they name, in any order; a worker whose oldest job has run longer
    /// than the prefetch window gets no more until something frees.
    @Test func workersWithCapacityTakeSeveralJobs() throws {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(WorkerFrame(kind: .ready, instance: "A", pid: 1, service: "query", capacity: 3), from: Self.a, now: 0)
        _ = state.received(WorkerFrame(kind: .ready, instance: "B", pid: 2, service: "query", capacity: 3), from: Self.b, now: 0)
        var sentTo: [[UInt8]] = []
        for id in UInt64(1)...4 { sentTo += try Self.dispatched(state.submit(Self.job(id), now: 1)).map(\.0) }
        #expect(sentTo == [Self.a, Self.b, Self.a, Self.b], "the least busy worker first")
        #expect(state.workers[Self.a]?.jobs.map(\.id) == [1, 3])

        // Job 3 answers before job 1: job 3 completes, job 1 still runs.
        let done = state.received(Self.reply(.ok(3, .none)), from: Self.a, now: 2)
        #expect(Self.completions(done).map(\.0) == [3])
        #expect(state.workers[Self.a]?.jobs.map(\.id) == [1])

        // Later than the prefetch window, both workers' oldest jobs look long: job 5 waits.
        let late = 1 + BrokerState.prefetchMs
        #expect(try Self.dispatched(state.submit(Self.job(5), now: late)).isEmpty)
        #expect(state.queuedCount == 1)
        // B frees up entirely: job 5 goes there.
        _ = state.received(Self.reply(.ok(2, .none)), from: Self.b, now: late)
        let freed = state.received(Self.reply(.ok(4, .none)), from: Self.b, now: late)
        #expect(try Self.dispatched(freed).map(\.0) == [Self.b])

        // A dies while running job 1: job 1 fails (it may be what killed A) and is not retried.
        _ = state.received(Self.heartbeat(), from: Self.b, now: late + 900)
        let died = state.tick(now: late + 1000)
        #expect(state.workers[Self.a] == nil)
        #expect(Self.completions(died).map(\.0) == [1])
        #expect(state.queuedCount == 0)
        let after = state.received(Self.reply(.ok(5, .none)), from: Self.b, now: late + 1001)
        #expect(Self.completions(after).map(\.0) == [5])
        #expect(try Self.dispatched(after).isEmpty)
    }

    /// A worker declared dead while a job waited behind its running one, which joins again and
    /// gets a new job: the reply it then sends for the waiting job (which went to another worker)
    /// completes nothing, and the new job waits for its own reply.
    @Test func staleReplyOfAWorkerThatJoinedAgainIsDropped() throws {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(WorkerFrame(kind: .ready, instance: "A", pid: 1, service: "query", capacity: 2), from: Self.a, now: 0)
        #expect(try Self.dispatched(state.submit(Self.job(1), now: 1)).map(\.0) == [Self.a])
        #expect(try Self.dispatched(state.submit(Self.job(2), now: 1)).map(\.0) == [Self.a])
        _ = state.received(Self.ready("B"), from: Self.b, now: 2)

        // A is silent too long: job 1 (running) fails, job 2 (waiting) goes to B.
        _ = state.received(Self.heartbeat(), from: Self.b, now: 350)
        let failover = state.tick(now: 400)
        #expect(state.workers[Self.a] == nil)
        #expect(Self.completions(failover).map(\.0) == [1])
        #expect(try Self.dispatched(failover).map(\.0) == [Self.b])
        #expect(try Self.dispatched(failover).map(\.1.id) == [2])

        // A joins again and takes job 3.
        _ = state.received(Self.ready("A"), from: Self.a, now: 410)
        #expect(try Self.dispatched(state.submit(Self.job(3), now: 411)).map(\.0) == [Self.a])

        // A's late replies to jobs 1 and 2 are not job 3's answer.
        #expect(Self.completions(state.received(Self.reply(.ok(1, .none)), from: Self.a, now: 420)).isEmpty)
        #expect(Self.completions(state.received(Self.reply(.ok(2, .none)), from: Self.a, now: 420)).isEmpty)
        #expect(state.workers[Self.a]?.jobs.map(\.id) == [3])

        #expect(Self.completions(state.received(Self.reply(.ok(3, .none)), from: Self.a, now: 430)).map(\.0) == [3])
        #expect(Self.completions(state.received(Self.reply(.ok(2, .none)), from: Self.b, now: 430)).map(\.0) == [2])
        #expect(state.busyCount == 0)
    }

    /// A worker that reconnects on a fresh socket (same instance, same pid) is one worker, not
    /// two: the old socket is forgotten and the job it was running completes by the reply that
    /// now comes on the new socket. A new process under the same name waits for the old
    /// one's silence to be noticed.
    @Test func reconnectedWorkerKeepsItsJobs() throws {
        let a2: [UInt8] = [0, 0xA2]
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(Self.ready("A", pid: 100), from: Self.a, now: 0)
        #expect(try Self.dispatched(state.submit(Self.job(1), now: 1)).map(\.0) == [Self.a])

        let rejoined = state.received(Self.ready("A", pid: 100), from: a2, now: 50)
        #expect(try Self.dispatched(rejoined).isEmpty, "the running job is not sent again")
        #expect(state.workers.keys.sorted { $0.lexicographicallyPrecedes($1) } == [a2])
        #expect(state.workers[a2]?.jobs.map(\.id) == [1])
        #expect(try Self.dispatched(state.submit(Self.job(2), now: 60)).isEmpty, "a worker of capacity 1 is busy")

        let done = state.received(Self.reply(.ok(1, .none)), from: a2, now: 70)
        #expect(Self.completions(done).map(\.0) == [1])
        #expect(try Self.dispatched(done).map(\.0) == [a2])

        // Another process named A: both are known until the first one's silence is noticed.
        let other: [UInt8] = [0, 0xA3]
        _ = state.received(Self.ready("A", pid: 200), from: other, now: 80)
        #expect(state.workers.count == 2)
        _ = state.received(Self.heartbeat(), from: other, now: 400)
        _ = state.tick(now: 400)
        #expect(state.workers.keys.sorted { $0.lexicographicallyPrecedes($1) } == [other])
    }

    /// A reply naming no job (id 0: the worker could not read the request) is its lone job's.
    @Test func replyNamingNoJobIsTheLoneJobs() throws {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(Self.ready("A"), from: Self.a, now: 0)
        _ = state.submit(Self.job(7), now: 1)
        let failed = state.received(Self.reply(.failure(0, SofaError(.malformedMessage, "unreadable"))), from: Self.a, now: 2)
        #expect(Self.completions(failed).map(\.0) == [7])
        #expect(state.busyCount == 0)
    }

    @Test func readyWorkerTakesSubmittedJob() throws {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        #expect(state.received(Self.ready("A", pid: 42), from: Self.a, now: 0).isEmpty)
        #expect(state.workers[Self.a]?.instance == "A")
        #expect(state.workers[Self.a]?.pid == 42)

        let job = Self.job(7)
        let sent = try Self.dispatched(state.submit(job))
        #expect(sent.count == 1)
        #expect(sent.first?.0 == Self.a)
        #expect(sent.first?.1 == Self.expectedRequest(job))
        #expect(sent.first?.1.id == 7)
        #expect(state.busyCount == 1)
        #expect(state.queuedCount == 0)
    }

    @Test func jobQueuesUntilAWorkerIsReady() throws {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        let first = Self.job(1), second = Self.job(2)
        #expect(state.submit(first).isEmpty)
        #expect(state.submit(second).isEmpty)
        #expect(state.queuedCount == 2)

        // One worker takes one job at a time, in submission order.
        let sent = try Self.dispatched(state.received(Self.ready("A"), from: Self.a, now: 0))
        #expect(sent.map(\.0) == [Self.a])
        #expect(sent.map(\.1) == [Self.expectedRequest(first)])
        #expect(state.queuedCount == 1)

        let next = try Self.dispatched(state.received(Self.ready("B"), from: Self.b, now: 0))
        #expect(next.map(\.0) == [Self.b])
        #expect(next.map(\.1) == [Self.expectedRequest(second)])
        #expect(state.queuedCount == 0)
        #expect(state.busyCount == 2)
    }

    @Test func replyCompletesTheJobAndFreesTheWorker() throws {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(Self.ready("A"), from: Self.a, now: 0)
        _ = state.submit(Self.job(5))
        _ = state.submit(Self.job(6))  // queued behind job 5

        // A reply naming a job the worker does not hold completes nothing.
        let unknown = state.received(Self.reply(.ok(12345, .echo(payload: [5], instance: "A"))), from: Self.a, now: 5)
        #expect(Self.completions(unknown).isEmpty)
        #expect(state.workers[Self.a]?.jobs.map(\.id) == [5])

        let actions = state.received(Self.reply(.ok(5, .echo(payload: [5], instance: "A"))), from: Self.a, now: 10)
        let done = Self.completions(actions)
        #expect(done.count == 1)
        #expect(done.first?.0 == 5)
        #expect(done.first?.1 == .ok(5, .echo(payload: [5], instance: "A")))
        // Now idle, the worker gets the queued job at once.
        #expect(try Self.dispatched(actions).map(\.1.id) == [6])

        // One naming no job (id 0) is the lone job's; the broker gives it the job's id.
        let last = Self.completions(state.received(Self.reply(.failure(0, .conflict("no"))), from: Self.a, now: 20))
        #expect(last.map(\.0) == [6])
        #expect(last.first?.1 == .failure(6, .conflict("no")))
        #expect(state.busyCount == 0)
        #expect(state.queuedCount == 0)
    }

    @Test func malformedReplyCompletesWithMalformedMessage() {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(Self.ready("A"), from: Self.a, now: 0)
        _ = state.submit(Self.job(3))
        let done = Self.completions(state.received(WorkerFrame(kind: .reply, payload: [0xFF, 0xFF, 0xFF]),
                                                   from: Self.a, now: 1))
        #expect(done.map(\.0) == [3])
        #expect(done.first?.1.id == 3)
        #expect((try? done.first?.1.outcome.get()) == nil)
        if case .failure(let error)? = done.first?.1.outcome { #expect(error.is(.malformedMessage)) }
        #expect(state.busyCount == 0)
    }
}
