@testable import SofaBench
import SofaCore
import Testing

/// The figures a bench prints are made from whatever samples a phase gathered, however few: a
/// phase that made one call, or none, in its time (a loaded machine) gives figures, not a crash
/// of the process that measures (the test process, for the hostile-client suite).
@Suite struct FigureTests {
    @Test func percentilesOfNanosecondSamplesInMicroseconds() {
        let samples: [UInt64] = (1...100).map { UInt64($0) * 1_000 }
        #expect(percentile(samples.shuffled(), 0.5) == 51)
        #expect(percentile(samples, 0.99) == 100)
        #expect(percentile(samples, 1) == 100)
        #expect(percentile([1_234], 0.99) == 1.2)
        #expect(percentile([], 0.99) == 0)
        #expect(median([]) == 0)
    }

    @Test func hostileFiguresFromAPhaseOfOneCall() throws {
        var figures = HostileLoad.Figures()
        figures.unloaded = [2_000_000]  // one get, and no query, in the whole phase
        let json = figures.json
        #expect(json["unloaded_calls"] == 1)
        #expect(json["unloaded_get_p99_us"] == .double(2_000))
        #expect(json["unloaded_query_p99_us"] == .double(0))
        #expect(json["loaded_p99_us"] == .double(0))
    }
}
