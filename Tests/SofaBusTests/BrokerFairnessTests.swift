import SofaBus
import SofaServer
import SofaCore
import SofaWire
import Testing

/// `BrokerState` shares workers between clients: a queue per client served round-robin, and a
/// limit on how many workers one client's jobs occupy. Pure, with a fake clock.
@Suite struct BrokerFairnessTests {
    typealias T = BrokerStateTests
    static let heavy: [UInt8] = [1, 0xEE]
    static let light: [UInt8] = [1, 0x11]
    static func workerID(_ n: Int) -> [UInt8] { [2, UInt8(n)] }

    /// `count` workers of capacity 1, all ready.
    static func cluster(_ count: Int, share: Int) -> BrokerState {
        var state = BrokerState(heartbeatMs: 100, liveness: 3, clientShare: share)
        for n in 0..<count { _ = state.received(T.ready("W\(n)", pid: UInt32(n)), from: workerID(n), now: 0) }
        return state
    }

    /// (workers, share percent, jobs one client may have at workers)
    static let limits: [(Int, Int, Int)] = [
        (1, 50, 1), (2, 50, 1), (4, 50, 2), (5, 50, 2), (8, 50, 4), (8, 25, 2), (3, 1, 1), (8, 100, .max),
    ]

    @Test(arguments: limits)
    func clientLimitIsAShareOfTheWorkersAndAtLeastOne(workers: Int, share: Int, limit: Int) {
        #expect(Self.cluster(workers, share: share).clientLimit == limit)
    }

    /// A client flooding the broker gets its share of the workers; the rest stay free for others,
    /// whose jobs run at once although the flood was queued first.
    @Test func aHeavyClientFillsOnlyItsShare() throws {
        var state = Self.cluster(4, share: 50)
        var sent: [UInt64] = []
        for id in UInt64(1)...6 { sent += try T.dispatched(state.submit(T.job(id, client: Self.heavy), now: 1)).map(\.1.id) }
        #expect(sent == [1, 2])
        #expect(state.queuedCount == 4)
        #expect(state.jobsAtWorkers(of: Self.heavy) == 2)

        let light = try T.dispatched(state.submit(T.job(100, client: Self.light), now: 2))
        #expect(light.map(\.1.id) == [100])
        #expect(try T.dispatched(state.submit(T.job(101, client: Self.light), now: 2)).map(\.1.id) == [101])
        // Both clients at their limit: the next light job waits too, and a worker freeing up goes
        // to whoever is in turn and within its share.
        #expect(try T.dispatched(state.submit(T.job(102, client: Self.light), now: 2)).isEmpty)
        let heavyWorker = try #require(state.workers.first { $0.value.jobs.first?.id == 1 }?.key)
        let next = try T.dispatched(state.received(T.reply(.ok(1)), from: heavyWorker, now: 3))
        #expect(next.map(\.1.id) == [3], "the heavy client's turn, within its share again")
    }

    /// Queues are served in turn: a client that queued many jobs first does not go before the
    /// one that queued later for more than one job at a time.
    @Test func clientsAreServedRoundRobin() throws {
        var state = Self.cluster(1, share: 100)
        let worker = Self.workerID(0)
        _ = state.submit(T.job(1, client: Self.heavy), now: 1)
        for id in UInt64(2)...4 { _ = state.submit(T.job(id, client: Self.heavy), now: 1) }
        for id in UInt64(10)...11 { _ = state.submit(T.job(id, client: Self.light), now: 1) }
        var order: [UInt64] = []
        var finished: UInt64 = 1
        for now in UInt64(2)...7 {
            let actions = state.received(T.reply(.ok(finished)), from: worker, now: now)
            guard let id = try T.dispatched(actions).first?.1.id else { break }
            order.append(id)
            finished = id
        }
        #expect(order == [2, 10, 3, 11, 4])
    }

    /// A job that timed out (or was cancelled) still runs on its worker: it still counts against
    /// its client's share until the worker lets go of it.
    @Test func abandonedJobsStillCountAgainstTheShare() throws {
        var state = Self.cluster(2, share: 50)
        #expect(try T.dispatched(state.submit(T.job(1, deadline: 50, client: Self.heavy), now: 1)).count == 1)
        #expect(T.completions(state.tick(now: 50)).map(\.0) == [1])
        #expect(try T.dispatched(state.submit(T.job(2, client: Self.heavy), now: 51)).isEmpty)
        let worker = try #require(state.workers.first { !$0.value.jobs.isEmpty }?.key)
        let freed = state.received(T.reply(.ok(1)), from: worker, now: 60)
        #expect(T.completions(freed).isEmpty)
        #expect(try T.dispatched(freed).map(\.1.id) == [2])
    }

    /// A waiting job that is cancelled or times out leaves its client's queue, and the other
    /// clients' turns are kept.
    @Test func cancelledAndExpiredJobsLeaveTheirClientsQueue() throws {
        var state = Self.cluster(1, share: 100)
        _ = state.submit(T.job(1, client: Self.heavy), now: 1)  // runs
        _ = state.submit(T.job(2, deadline: 20, client: Self.heavy), now: 1)
        _ = state.submit(T.job(3, client: Self.light), now: 1)
        _ = state.submit(T.job(4, client: Self.light), now: 1)
        #expect(T.completions(state.cancel(3)).map(\.0) == [3])
        #expect(T.completions(state.tick(now: 20)).map(\.0) == [2])
        #expect(state.queuedCount == 1)
        let next = state.received(T.reply(.ok(1)), from: Self.workerID(0), now: 21)
        #expect(try T.dispatched(next).map(\.1.id) == [4])
    }
}
