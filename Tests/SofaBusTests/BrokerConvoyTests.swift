import SofaBus
import SofaServer
import SofaCore
import SofaWire
import Testing

/// `BrokerState` keeps short jobs that come together at one worker (`convoyMs`), and spreads
/// jobs of a kind not seen yet or known to be slow. Pure, with a fake clock (ms).
@Suite struct BrokerConvoyTests {
    static let a: [UInt8] = [3, 0xA]
    static let b: [UInt8] = [3, 0xB]
    static let client: [UInt8] = [4, 1]
    static let other: [UInt8] = [4, 2]

    /// Two workers that take 16 jobs each, both free.
    static func twoWorkers() -> BrokerState {
        var state = BrokerState(heartbeatMs: 100_000, liveness: 3)
        for (identity, name) in [(a, "A"), (b, "B")] {
            _ = state.received(WorkerFrame(kind: .ready, instance: name, pid: 1, service: "query", capacity: 16), from: identity, now: 0)
        }
        return state
    }

    /// Job `id`: a run of the query `text` with its own parameter (runs of one text are one kind).
    static func job(_ id: UInt64, _ text: String, client: [UInt8] = client) -> BrokerState.Job {
        BrokerState.Job(id: id, request: Request(id: 0, database: "db", operation: .query(QuerySpec(
            text: text, isN1QL: true, parameters: ["n": .int(Int64(id))]))), deadline: 10_000_000, client: client)
    }

    /// Submits `jobs` together at `now`: the worker each was sent to, in order.
    static func submit(_ jobs: [BrokerState.Job], to state: inout BrokerState, now: UInt64) throws -> [[UInt8]] {
        var sent: [[UInt8]] = []
        for job in jobs { sent += try BrokerStateTests.dispatched(state.submit(job, now: now)).map(\.0) }
        return sent
    }

    /// Each worker answers every job it holds, at `now`.
    static func answerAll(_ sent: [[UInt8]], ids: [UInt64], state: inout BrokerState, now: UInt64) {
        for (identity, id) in zip(sent, ids) {
            _ = state.received(BrokerStateTests.reply(.ok(id, .query(QueryRows(columns: [], rows: [])))), from: identity, now: now)
        }
    }

    /// Runs `text` once at `start`, answered `took` ms later: its kind is then known.
    static func teach(_ text: String, took: UInt64, id: UInt64, state: inout BrokerState, start: UInt64) throws {
        let sent = try submit([job(id, text)], to: &state, now: start)
        answerAll(sent, ids: [id], state: &state, now: start + took)
    }

    static let lookup = "SELECT name FROM _ WHERE n = $n"
    static let scan = "SELECT COUNT(*) FROM _ WHERE email LIKE $p"

    @Test func shortJobsThatComeTogetherStayAtOneWorker() throws {
        var state = Self.twoWorkers()
        try Self.teach(Self.lookup, took: 0, id: 1, state: &state, start: 10)
        let ids: [UInt64] = Array(2...17)
        let sent = try Self.submit(ids.map { Self.job($0, Self.lookup) }, to: &state, now: 20)
        #expect(sent.count == 16)
        #expect(Set(sent).count == 1)
        // The next group, once the first is answered, goes the same way (to one worker).
        Self.answerAll(sent, ids: ids, state: &state, now: 20)
        let next = try Self.submit((18...25).map { Self.job($0, Self.lookup) }, to: &state, now: 21)
        #expect(next.count == 8 && Set(next).count == 1)
    }

    @Test func jobsOfAKindNotSeenYetAreSpread() throws {
        var state = Self.twoWorkers()
        let sent = try Self.submit((1...4).map { Self.job($0, Self.lookup) }, to: &state, now: 10)
        #expect(Set(sent) == [Self.a, Self.b])
    }

    @Test func slowJobsThatComeTogetherAreSpread() throws {
        var state = Self.twoWorkers()
        try Self.teach(Self.scan, took: 200, id: 1, state: &state, start: 10)
        let sent = try Self.submit((2...5).map { Self.job($0, Self.scan) }, to: &state, now: 300)
        #expect(sent.filter { $0 == Self.a }.count == 2 && sent.filter { $0 == Self.b }.count == 2)
    }

    @Test func anotherClientsJobGoesToTheFreeWorker() throws {
        var state = Self.twoWorkers()
        try Self.teach(Self.lookup, took: 0, id: 1, state: &state, start: 10)
        let first = try Self.submit((2...5).map { Self.job($0, Self.lookup) }, to: &state, now: 20)
        #expect(Set(first).count == 1)
        let theirs = try Self.submit([Self.job(6, Self.lookup, client: Self.other)], to: &state, now: 20)
        #expect(theirs.count == 1 && theirs.first != first.first)
    }

    /// A convoy holds only what is expected to end within `convoyMs`: runs averaging 0.75 ms
    /// (1 ms, then 0) let no second job wait behind a first while a worker is free.
    @Test func aConvoyHoldsOnlyWhatEndsWithinItsBound() throws {
        var state = Self.twoWorkers()
        try Self.teach(Self.lookup, took: 1, id: 1, state: &state, start: 10)
        try Self.teach(Self.lookup, took: 0, id: 2, state: &state, start: 20)
        let sent = try Self.submit((3...4).map { Self.job($0, Self.lookup) }, to: &state, now: 30)
        #expect(Set(sent) == [Self.a, Self.b])
    }

    /// A job waiting at a worker behind its client's young ones is answered like any other: the
    /// reply names it, and the worker takes the next ones as it frees.
    @Test func jobsInAConvoyAreEachAnsweredTheirOwnReply() throws {
        var state = Self.twoWorkers()
        try Self.teach(Self.lookup, took: 0, id: 1, state: &state, start: 10)
        let ids: [UInt64] = [2, 3, 4]
        let sent = try Self.submit(ids.map { Self.job($0, Self.lookup) }, to: &state, now: 20)
        var answered: [UInt64] = []
        for (identity, id) in zip(sent, ids).reversed() {
            let actions = state.received(BrokerStateTests.reply(.ok(id, .query(QueryRows(columns: [], rows: [])))), from: identity, now: 21)
            answered += BrokerStateTests.completions(actions).map(\.0)
        }
        #expect(answered == [4, 3, 2])
        #expect(state.busyCount == 0)
    }

    /// A worker that takes 64 jobs at once holds more than `shallowDepth` of a client's jobs
    /// only while all it holds are known to be short: point lookups fill it, slow queries and
    /// queries not run yet stop at `shallowDepth` and wait at the broker.
    @Test func aDeepWorkerQueueHoldsOnlyShortJobs() throws {
        func oneDeepWorker() -> BrokerState {
            var state = BrokerState(heartbeatMs: 100_000, liveness: 3)
            _ = state.received(WorkerFrame(kind: .ready, instance: "A", pid: 1, service: "query", capacity: 64), from: Self.a, now: 0)
            return state
        }
        let depth = BrokerState.shallowDepth

        var unknown = oneDeepWorker()
        let sentUnknown = try Self.submit((1...40).map { Self.job($0, Self.lookup) }, to: &unknown, now: 10)
        #expect(sentUnknown.count == depth)
        #expect(unknown.queuedCount == 40 - depth)

        var short = oneDeepWorker()
        try Self.teach(Self.lookup, took: 0, id: 1, state: &short, start: 10)
        let sentShort = try Self.submit((2...41).map { Self.job($0, Self.lookup) }, to: &short, now: 20)
        #expect(sentShort.count == 40)
        #expect(short.queuedCount == 0)

        // Short jobs past `shallowDepth`, then one of a kind not run yet: it waits at the broker.
        let sentFirst = try Self.submit((42...61).map { Self.job($0, Self.lookup) }, to: &short, now: 21)
        #expect(sentFirst.count == 20)
        let unknownAfter = try Self.submit([Self.job(62, Self.scan)], to: &short, now: 21)
        #expect(unknownAfter.isEmpty)
        #expect(short.queuedCount == 1)

        var slow = oneDeepWorker()
        try Self.teach(Self.scan, took: 5, id: 1, state: &slow, start: 10)
        let sentSlow = try Self.submit((2...41).map { Self.job($0, Self.scan) }, to: &slow, now: 20)
        #expect(sentSlow.count == depth)
        #expect(slow.queuedCount == 40 - depth)
    }

    @Test func runsOfOnePreparedQueryAreOneKindAndOtherTextsAnother() {
        let one = Self.job(1, Self.lookup).kind, two = Self.job(2, Self.lookup).kind
        #expect(one == two)
        #expect(one != Self.job(3, Self.scan).kind)
        let explained = BrokerState.Job(id: 4, request: Request(id: 0, database: "db", operation: .query(QuerySpec(
            text: Self.lookup, isN1QL: true, explain: true))), deadline: 1)
        #expect(explained.kind != one)
        let otherDatabase = BrokerState.Job(id: 5, request: Request(id: 0, database: "db2", operation: .query(QuerySpec(
            text: Self.lookup, isN1QL: true))), deadline: 1)
        #expect(otherDatabase.kind != one)
    }
}
