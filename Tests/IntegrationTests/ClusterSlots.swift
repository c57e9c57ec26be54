import Foundation

/// How many test clusters run at once in this test process. The testing library starts every
/// suite together: unbounded, the whole suite had about fifty clusters (over a hundred service
/// processes, a load average of 64 on two cores) running at its start, and a test's deadline then
/// measured the machine's queue, not Sofa. A cluster waits here for a slot before it starts and
/// frees it when it has stopped; what a test times begins after that, inside its cluster.
/// Measured on two cores: 4 at once gave a load average of about 8 and the suite took 183 s;
/// 8 at once, about 17 and 199–206 s; unbounded, 64 and 236 s.
///
/// A task that already holds a slot (a test running two clusters, one inside the other) takes no
/// second one, so nested clusters cannot wait on each other. `SOFA_TEST_CLUSTERS` sets the width.
actor ClusterSlots {
    static let shared = ClusterSlots(width: ProcessInfo.processInfo.environment["SOFA_TEST_CLUSTERS"].flatMap(Int.init) ?? 4)

    @TaskLocal static var holding = false

    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(width: Int) { free = max(1, width) }

    /// Runs `body` holding a slot (taken here unless this task already holds one).
    static func withSlot<T>(_ body: () async throws -> T) async throws -> T {
        if holding { return try await body() }
        await shared.take()
        do {
            let result = try await $holding.withValue(true) { try await body() }
            await shared.give()
            return result
        } catch {
            await shared.give()
            throw error
        }
    }

    private func take() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func give() {
        if waiting.isEmpty {
            free += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
