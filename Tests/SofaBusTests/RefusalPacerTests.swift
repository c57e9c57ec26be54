import SofaBus
@testable import SofaServer
import Testing

/// `RefusalPacer`: a client's size refusals are held longer and longer while it keeps sending
/// what it is refused, up to a cap; other clients and a client that stopped start again at 100 ms.
@Suite struct RefusalPacerTests {
    @Test func delaysDoublePerClientUpToTheCapAndAreForgottenAfterAQuietSpell() {
        let pacer = RefusalPacer()
        let start = ContinuousClock.now
        let first = Duration.milliseconds(BusLimits.refusalDelayMs)
        let delays = (0..<10).map { n in pacer.delay(for: [1], now: start + .milliseconds(n * 100)) }
        #expect(delays == [first, first * 2, first * 4, first * 8, first * 16, first * 32, .seconds(5), .seconds(5), .seconds(5), .seconds(5)])
        // Another client is not held for the first one's refusals.
        #expect(pacer.delay(for: [2], now: start + .seconds(1)) == first)
        // After a quiet spell as long as the pacer's memory, the first client starts again.
        #expect(pacer.delay(for: [1], now: start + .seconds(1) + RefusalPacer.memory) == first)
        #expect(pacer.delay(for: [1], now: start + .seconds(2) + RefusalPacer.memory) == first * 2)
    }

    @Test func theClientsRememberedAreBounded() {
        let pacer = RefusalPacer()
        let start = ContinuousClock.now
        for n in 0..<RefusalPacer.maxClients { _ = pacer.delay(for: withUnsafeBytes(of: UInt32(n)) { Array($0) }, now: start) }
        // Full: those quiet for the pacer's memory are forgotten to make room (here, all of them).
        #expect(pacer.delay(for: withUnsafeBytes(of: UInt32(0)) { Array($0) }, now: start + RefusalPacer.memory)
                == .milliseconds(BusLimits.refusalDelayMs))
        #expect(pacer.count == 1)
    }
}
