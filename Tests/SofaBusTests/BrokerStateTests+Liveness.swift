import SofaBus
import SofaServer
import SofaCore
import SofaWire
import Testing

/// Workers' liveness, deaths and deadlines: who is forgotten when, what happens to the jobs of a
/// worker that died, and jobs whose deadline passed, queued or running.
extension BrokerStateTests {
    @Test func idleWorkerThatWaitedLongestGoesFirst() throws {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(Self.ready("A"), from: Self.a, now: 0)
        _ = state.received(Self.ready("B"), from: Self.b, now: 1)
        #expect(try Self.dispatched(state.submit(Self.job(1))).map(\.0) == [Self.a])
        #expect(try Self.dispatched(state.submit(Self.job(2))).map(\.0) == [Self.b])
        // B finishes first, then A: B has waited longer.
        _ = state.received(Self.reply(.ok(0)), from: Self.b, now: 2)
        _ = state.received(Self.reply(.ok(0)), from: Self.a, now: 3)
        #expect(try Self.dispatched(state.submit(Self.job(3))).map(\.0) == [Self.b])
        #expect(try Self.dispatched(state.submit(Self.job(4))).map(\.0) == [Self.a])
    }

    /// (silent for ms, still known after tick) with heartbeatMs 100 × liveness 3.
    static let silence: [(UInt64, Bool)] = [(0, true), (299, true), (300, true), (301, false), (10_000, false)]

    @Test(arguments: silence)
    func silentWorkerIsForgotten(silentMs: UInt64, alive: Bool) {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(Self.ready("A"), from: Self.a, now: 1000)
        _ = state.tick(now: 1000 + silentMs)
        #expect((state.workers[Self.a] != nil) == alive)
    }

    @Test func anyFrameProvesAWorkerAlive() {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(Self.ready("A"), from: Self.a, now: 0)
        _ = state.received(Self.heartbeat(), from: Self.a, now: 250)
        _ = state.tick(now: 500)
        #expect(state.workers[Self.a] != nil)
        _ = state.tick(now: 551)
        #expect(state.workers[Self.a] == nil)
    }

    /// A worker that dies takes the job it was running with it: that job fails with
    /// `.unavailable`, saying it was not retried, and runs nowhere else (one poison query kills one
    /// worker, not every one). The jobs that only waited at the dead worker run elsewhere, in order.
    @Test func deadWorkersRunningJobFailsAndTheWaitingOnesAreRetried() throws {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(WorkerFrame(kind: .ready, instance: "A", pid: 1, service: "query", capacity: 3), from: Self.a, now: 0)
        for id in UInt64(9)...11 { #expect(try Self.dispatched(state.submit(Self.job(id), now: 1)).map(\.0) == [Self.a]) }
        _ = state.received(Self.ready("B"), from: Self.b, now: 200)
        _ = state.received(Self.heartbeat(), from: Self.b, now: 300)

        // A has been silent for 301 ms: it is dead.
        let failover = state.tick(now: 301)
        #expect(state.workers[Self.a] == nil)
        let done = Self.completions(failover)
        #expect(done.map(\.0) == [9])
        if case .failure(let error)? = done.first?.1.outcome {
            #expect(error.is(.unavailable))
            #expect(error.message.contains("while running this request"))
            #expect(error.message.contains("not retried"))
        } else {
            Issue.record("expected an unavailable failure, got \(String(describing: done.first?.1))")
        }
        // B (capacity 1) takes job 10; job 11 waits for it.
        #expect(try Self.dispatched(failover).map(\.1.id) == [10])
        #expect(state.queuedCount == 1)

        // B dies running job 10: it fails too; job 11, never run, waits for a worker.
        let second = state.tick(now: 700)
        #expect(state.workers.isEmpty)
        #expect(Self.completions(second).map(\.0) == [10])
        #expect(state.queuedCount == 1)
        let rejoined = state.received(Self.ready("C"), from: Self.stranger, now: 710)
        #expect(try Self.dispatched(rejoined).map(\.1.id) == [11])
    }

    /// The job a dead worker was running had timed out already (it completed then): nothing
    /// completes again, and the job waiting behind it is retried.
    @Test func deadWorkerWithAnAbandonedRunningJobRetriesTheWaitingOne() throws {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(WorkerFrame(kind: .ready, instance: "A", pid: 1, service: "query", capacity: 2), from: Self.a, now: 0)
        _ = state.submit(Self.job(1, deadline: 100), now: 1)
        _ = state.submit(Self.job(2), now: 1)
        #expect(Self.completions(state.tick(now: 100)).map(\.0) == [1])
        _ = state.received(Self.ready("B"), from: Self.b, now: 350)
        let died = state.tick(now: 400)
        #expect(state.workers[Self.a] == nil)
        #expect(Self.completions(died).isEmpty)
        #expect(try Self.dispatched(died).map(\.1.id) == [2])
    }

    @Test func workerThatSaysDisconnectIsRemovedAndItsJobRetried() throws {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(Self.ready("A"), from: Self.a, now: 0)
        _ = state.submit(Self.job(4))
        _ = state.received(Self.ready("B"), from: Self.b, now: 0)
        let actions = state.received(WorkerFrame(kind: .disconnect, instance: "A"), from: Self.a, now: 10)
        #expect(state.workers[Self.a] == nil)
        #expect(try Self.dispatched(actions).map(\.0) == [Self.b])
        #expect(try Self.dispatched(actions).map(\.1.id) == [4])
    }

    @Test func workerAnnouncingItselfAgainLosesNothing() throws {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(Self.ready("A"), from: Self.a, now: 0)
        _ = state.submit(Self.job(8))
        // The same socket says READY while busy: it lost its job, which is sent again.
        let actions = state.received(Self.ready("A"), from: Self.a, now: 5)
        #expect(try Self.dispatched(actions).map(\.0) == [Self.a])
        #expect(try Self.dispatched(actions).map(\.1.id) == [8])
        #expect(state.workers.count == 1)
        #expect(state.busyCount == 1)
    }

    @Test func queuedJobPastItsDeadlineTimesOut() {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.submit(Self.job(1, deadline: 500))
        _ = state.submit(Self.job(2, deadline: 900))
        #expect(Self.completions(state.tick(now: 499)).isEmpty)
        let done = Self.completions(state.tick(now: 500))
        #expect(done.map(\.0) == [1])
        if case .failure(let error)? = done.first?.1.outcome { #expect(error.is(.timeout)) } else {
            Issue.record("expected a timeout")
        }
        #expect(done.first?.1.id == 1)
        #expect(state.queuedCount == 1)
    }

    @Test func runningJobPastItsDeadlineTimesOut() {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(Self.ready("A"), from: Self.a, now: 0)
        _ = state.submit(Self.job(1, deadline: 200))
        _ = state.received(Self.heartbeat(), from: Self.a, now: 150)
        #expect(Self.completions(state.tick(now: 199)).isEmpty)
        let done = Self.completions(state.tick(now: 200))
        #expect(done.map(\.0) == [1])
        if case .failure(let error)? = done.first?.1.outcome { #expect(error.is(.timeout)) } else {
            Issue.record("expected a timeout")
        }
        // Completed once only.
        _ = state.received(Self.heartbeat(), from: Self.a, now: 250)
        #expect(Self.completions(state.tick(now: 300)).isEmpty)
        // The worker is still busy with it (it cannot be interrupted).
        #expect(state.busyCount == 1)
    }

    /// BrokerState's rule: "The worker keeps working on it; its late reply is dropped and it
    /// becomes idle then." Dropped means: no completion for anyone.
    @Test func lateReplyAfterTimeoutIsDroppedAndFreesTheWorker() throws {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(Self.ready("A"), from: Self.a, now: 0)
        _ = state.submit(Self.job(1, deadline: 200))
        _ = state.tick(now: 200)
        _ = state.submit(Self.job(2))  // waits: A is still busy with job 1
        #expect(state.queuedCount == 1)

        let actions = state.received(Self.reply(.ok(1)), from: Self.a, now: 250)
        #expect(Self.completions(actions).isEmpty, "a late reply must not complete anything: \(Self.completions(actions).map(\.0))")
        #expect(try Self.dispatched(actions).map(\.1.id) == [2])
    }

    @Test func workerDyingWithATimedOutJobCompletesNothing() {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(Self.ready("A"), from: Self.a, now: 0)
        _ = state.submit(Self.job(1, deadline: 100))
        _ = state.tick(now: 100)  // job 1 times out, A keeps it
        let actions = state.tick(now: 400)  // A is dead
        #expect(state.workers.isEmpty)
        #expect(Self.completions(actions).isEmpty)
        #expect(state.queuedCount == 0)
    }

    static let strangerFrames: [(WorkerFrame.Kind, Bool)] = [
        (.heartbeat, true), (.reply, true), (.request, true), (.disconnect, false),
    ]

    @Test(arguments: strangerFrames)
    func frameFromAnUnknownWorkerGetsDisconnect(kind: WorkerFrame.Kind, answered: Bool) {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(Self.ready("A"), from: Self.a, now: 0)
        let actions = state.received(WorkerFrame(kind: kind, payload: Response.ok(1).encoded()), from: Self.stranger, now: 1)
        let expected: [BrokerState.Action] = answered
            ? [.send(identity: Self.stranger, frame: WorkerFrame(kind: .disconnect))] : []
        #expect(actions == expected)
        #expect(state.workers.keys.sorted { $0.lexicographicallyPrecedes($1) } == [Self.a])
    }

    @Test func tickSendsHeartbeatsEveryHeartbeatMs() {
        var state = BrokerState(heartbeatMs: 100, liveness: 3)
        _ = state.received(Self.ready("A"), from: Self.a, now: 1000)
        _ = state.received(Self.ready("B"), from: Self.b, now: 1000)
        // (now, whether this tick heartbeats); workers keep heartbeating so none dies.
        let ticks: [(UInt64, Bool)] = [(1000, true), (1050, false), (1099, false), (1100, true), (1110, false),
                                       (1199, false), (1200, true), (1450, true), (1500, false), (1550, true)]
        for (now, beats) in ticks {
            _ = state.received(Self.heartbeat(), from: Self.a, now: now)
            _ = state.received(Self.heartbeat(), from: Self.b, now: now)
            let sent = Self.heartbeatsSent(state.tick(now: now))
            #expect(sent == (beats ? [Self.a, Self.b] : []), "tick at \(now)")
        }
    }
}
