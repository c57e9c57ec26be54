import SofaCore
import SofaWire
@testable import SofaReplicator
import Testing

/// Runs of one replication ID: a replication started again after it ended is a new run, and what
/// belongs to the earlier run (its task's late updates, a stop aimed at it) leaves the new one alone.
@Suite struct ReplicationRegistryTests {
    static func initial(_ id: String) -> ReplicationStatus {
        ReplicationStatus(id: id, source: "a", target: "b", continuous: false, state: .starting, docIDs: [],
                          filter: "", conflicts: .auto, collection: "")
    }

    @Test func aReplicationStartedAgainAfterItEndedIsANewRun() async throws {
        let registry = ReplicationRegistry()
        let first = await registry.start(Self.initial("r")) { _ in }
        let run1 = try #require(await registry.run(of: "r"))
        await registry.update("r", run: run1) {
            $0.docsWritten = 7
            $0.state = .completed
        }
        // Started again while it runs: the same run. After it ended: a new one, from zero.
        let again = await registry.start(Self.initial("r")) { _ in }
        let run2 = try #require(await registry.run(of: "r"))
        #expect(run2 != run1)
        #expect(again.state == .starting)
        #expect(again.docsWritten == 0)
        #expect(again.version > first.version + 1, "newer than the completed status")
        #expect(await registry.start(Self.initial("r")) { _ in }.version == again.version)
        #expect(await registry.run(of: "r") == run2)

        // The first run's late update and a stop aimed at it change nothing.
        await registry.update("r", run: run1) { $0.docsWritten += 5 }
        #expect(try await registry.stop("r", run: run1).state == .starting)
        #expect(await registry.status("r")?.docsWritten == 0)
        #expect(await registry.status("r")?.state == .starting)

        await registry.update("r", run: run2) { $0.docsWritten = 1 }
        #expect(await registry.status("r")?.docsWritten == 1)
        #expect(try await registry.stop("r", run: run2).state == .stopped)
    }
}
