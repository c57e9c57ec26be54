import SofaBus
import SofaServer
import SofaCore
import Testing

/// `ReplyBudget`'s rules, driven by hand: what is held per client and in total decides which
/// replies are kept, which are dropped for an error, and which requests are refused.
@Suite struct ReplyBudgetTests {
    static let reader: [UInt8] = [1]
    static let hoarder: [UInt8] = [2]
    static let other: [UInt8] = [3]

    /// (held by the client before, reply size, kept) with 100 bytes per client and 1,000 in total.
    static let perClient: [(Int, Int, Bool)] = [
        (0, 10, true), (0, 100, true), (0, 5000, true),  // a client holding nothing gets any reply
        (50, 50, true), (50, 51, false), (100, 1, false), (99, 1, true),
    ]

    @Test(arguments: perClient)
    func aClientHoldsAtMostItsBudget(held: Int, size: Int, kept: Bool) {
        let budget = ReplyBudget(perClient: 100, total: 1000)
        if held > 0 { #expect(budget.reserve(held, for: Self.hoarder) == nil) }
        let error = budget.reserve(size, for: Self.hoarder)
        #expect((error == nil) == kept)
        #expect(budget.held(by: Self.hoarder) == held + (kept ? size : 0))
        if let error {
            #expect(error.is(.busy))
            #expect(error.message.contains("SOFA_CLIENT_REPLY_BYTES"))
            #expect(error.message.contains("\(size) bytes was dropped"))
        }
    }

    /// Bytes released (ZeroMQ let go of the reply) make room again; a client over its budget is
    /// refused new requests until then.
    @Test func releasedBytesMakeRoomAndLiftTheRefusal() {
        let budget = ReplyBudget(perClient: 100, total: 1000)
        #expect(budget.reserve(60, for: Self.hoarder) == nil)
        #expect(budget.refusal(for: Self.hoarder) == nil)
        #expect(budget.reserve(40, for: Self.hoarder) == nil)
        let refused = budget.refusal(for: Self.hoarder)
        #expect(refused?.is(.busy) == true)
        #expect(refused?.message.contains("at most 100") == true)
        #expect(budget.refusal(for: Self.reader) == nil, "other clients are not refused")
        budget.release(60, for: Self.hoarder)
        #expect(budget.refusal(for: Self.hoarder) == nil)
        budget.release(40, for: Self.hoarder)
        #expect(budget.held(by: Self.hoarder) == 0)
        #expect(budget.heldInTotal == 0)
    }

    /// A client that dropped a reply for its budget is refused the next request whose reply, as
    /// large as the one dropped, would not fit either: no work is done for a reply that would be
    /// dropped. Small requests still go while they fit, and all once the client holds nothing.
    @Test func aRequestWhoseReplyWouldNotFitIsRefusedBeforeAnyWork() {
        let budget = ReplyBudget(perClient: 100, total: 1000)
        #expect(budget.reserve(60, for: Self.hoarder) == nil)
        #expect(budget.refusal(for: Self.hoarder) == nil, "nothing dropped yet: no expectation")
        #expect(budget.reserve(50, for: Self.hoarder) != nil, "60 + 50 is over 100: dropped")
        #expect(budget.refusal(for: Self.hoarder)?.message.contains("SOFA_CLIENT_REPLY_BYTES") == true)
        budget.release(20, for: Self.hoarder)
        #expect(budget.refusal(for: Self.hoarder) == nil, "40 held: a reply of 50 fits again")
        #expect(budget.reserve(45, for: Self.hoarder) == nil)
        #expect(budget.refusal(for: Self.hoarder) != nil, "85 held, 50 expected")
        budget.release(85, for: Self.hoarder)
        #expect(budget.refusal(for: Self.hoarder) == nil)
        #expect(budget.reserve(500, for: Self.hoarder) == nil, "a client holding nothing gets any reply")
    }

    /// Past the total, only clients within their fair share of it are served: a client that reads
    /// (holding little) still gets its replies, big ones too; the hoarders do not.
    @Test func pastTheTotalOnlyClientsWithinTheirShareAreServed() {
        let budget = ReplyBudget(perClient: 1000, total: 1000)
        #expect(budget.reserve(600, for: Self.hoarder) == nil)
        #expect(budget.reserve(390, for: Self.other) == nil)
        // 990 held: 20 more bytes go over the total. The hoarder would hold more than its share
        // (1000 / 2) and is dropped; the other client stays within it.
        let dropped = budget.reserve(20, for: Self.hoarder)
        #expect(dropped?.message.contains("SOFA_TOTAL_REPLY_BYTES") == true)
        #expect(budget.reserve(20, for: Self.other) == nil)
        // The reader holds nothing: its share is 1000 / 3.
        #expect(budget.reserve(300, for: Self.reader) == nil)
        #expect(budget.reserve(100, for: Self.reader) != nil)
        #expect(budget.refusal(for: Self.hoarder)?.message.contains("SOFA_TOTAL_REPLY_BYTES") == true)
        #expect(budget.refusal(for: Self.reader) == nil)
    }

    /// Error answers fit up to the slack beyond the budget; past it, nothing is kept.
    @Test func errorsAreKeptUpToTheSlack() {
        let budget = ReplyBudget(perClient: 100, total: 1000)
        #expect(budget.reserve(100, for: Self.hoarder) == nil)
        #expect(budget.reserveError(ReplyBudget.errorSlack, for: Self.hoarder))
        #expect(!budget.reserveError(1, for: Self.hoarder))
        #expect(budget.held(by: Self.hoarder) == 100 + ReplyBudget.errorSlack)
    }
}
