import SofaGateway
import SofaCore
import SofaWire
import Testing

@Suite struct ChangeWaitersTests {
    static func notice(_ database: String, _ collection: String, last: UInt64) -> CommitNotice {
        CommitNotice(database: database, collection: collection,
                     batch: ChangesBatch(changes: [Change(sequence: last, id: "d\(last)", rev: "1-aa")], lastSequence: last))
    }

    @Test(arguments: [("", "_default._default"), ("orders", "_default.orders"), ("shop.orders", "shop.orders")])
    func collectionNamesNormalize(_ given: String, _ expected: String) {
        #expect(ChangeWaiters.normalize(collection: given) == expected)
    }

    /// A waiter wakes on the first notice beyond its threshold for its own database and
    /// collection, not on others.
    @Test func noticeBeyondTheThresholdWakesTheWaiter() async {
        let waiters = ChangeWaiters()
        let clock = ContinuousClock()
        let start = clock.now
        async let woken: Void = waiters.wait(database: "app", collection: "", beyond: 5, timeout: .seconds(120))
        // Notices that must not wake it: another database, another collection, an old sequence.
        // Then the one that must. The waiter may register after some of these: either way it
        // must end long before its 120 s timeout, and only because of the last notice.
        waiters.notify(Self.notice("other", "_default._default", last: 9))
        waiters.notify(Self.notice("app", "_default.orders", last: 9))
        waiters.notify(Self.notice("app", "_default._default", last: 5))
        waiters.notify(Self.notice("app", "_default", last: 6))
        await woken
        #expect(clock.now - start < .seconds(100))  // i.e. not its 120 s timeout
    }

    @Test func aNoticeSeenBeforeWaitingAnswersAtOnce() async {
        let waiters = ChangeWaiters()
        waiters.notify(Self.notice("app", "", last: 3))
        let clock = ContinuousClock()
        let start = clock.now
        await waiters.wait(database: "app", collection: "_default._default", beyond: 2, timeout: .seconds(120))
        #expect(clock.now - start < .seconds(100))  // i.e. not its 120 s timeout
    }

    @Test func withoutANoticeTheWaitEndsAtItsTimeout() async {
        let waiters = ChangeWaiters()
        waiters.notify(Self.notice("app", "", last: 3))
        let clock = ContinuousClock()
        let start = clock.now
        await waiters.wait(database: "app", collection: "", beyond: 3, timeout: .milliseconds(200))
        let elapsed = clock.now - start
        #expect(elapsed >= .milliseconds(200))
        #expect(elapsed < .seconds(100))
    }
}
