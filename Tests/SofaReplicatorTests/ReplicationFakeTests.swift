import Logging
import SofaCore
import SofaWire
@testable import SofaReplicator
import Testing

/// `Replication` driven against two databases in memory (`FakePeer`): what it copies, where it
/// resumes, how it settles conflicts, copies blobs, retries and fails — without a cluster.
@Suite struct ReplicationFakeTests {
    static func plan(_ source: String = "src", _ target: String = "dst", conflicts: ConflictPolicy = .auto) -> ReplicationPlan {
        ReplicationPlan(id: "r-\(source)-\(target)", source: ReplicationEndpoint(gateway: nil, database: source),
                        target: ReplicationEndpoint(gateway: nil, database: target), continuous: false, docIDs: [],
                        conflicts: conflicts)
    }

    /// Runs a one-shot replication to its end, waiting on its status changes (alone it takes
    /// milliseconds; the deadline is for a machine the rest of the suite swamps).
    static func run(_ plan: ReplicationPlan, _ peers: FakePeers) async throws -> ReplicationStatus {
        let registry = ReplicationRegistry()
        let initial = ReplicationStatus(id: plan.id, source: plan.source.description, target: plan.target.description,
                                        continuous: false, state: .starting, conflicts: plan.conflicts)
        var status = await registry.start(initial) { run in
            await Replication(plan: plan, run: run, connections: peers, registry: registry,
                              logger: Logger(label: "sofa.test.replication")).run()
        }
        let deadline = ContinuousClock.now + .seconds(180)
        while !status.state.isFinal && ContinuousClock.now < deadline {
            await registry.waitForChange(plan.id, after: status.version, timeout: .seconds(5))
            status = try #require(await registry.status(plan.id))
        }
        return status
    }

    @Test func copiesEveryRevisionAndResumesFromTheCheckpointBothSidesRecorded() async throws {
        let source = FakePeer("src"), target = FakePeer("dst")
        source.save("a", ["1-aa"], #"{"n":1}"#)
        source.save("b", ["2-bb", "1-b1"], #"{"n":2}"#)
        source.save("c", ["2-cc", "1-c1"], deleted: true)
        let peers = FakePeers(source, target)
        let status = try await Self.run(Self.plan(), peers)
        #expect(status.state == .completed, "\(status.lastError)")
        #expect(status.docsWritten == 3)
        for (id, rev) in [("a", "1-aa"), ("b", "2-bb"), ("b", "1-b1"), ("c", "2-cc")] { #expect(target.has(id, rev), "\(id) \(rev)") }
        #expect(target.body("b", "2-bb") == #"{"n":2}"#)
        #expect(target.openLeafRevs("c") == ["2-cc"])
        let last = try await source.info().lastSequence
        let checkpoint = #"{"sequence":\#(last)}"#
        #expect(source.localBody(ReplicationID.checkpointDocument(Self.plan().id)) == checkpoint)
        #expect(target.localBody(ReplicationID.checkpointDocument(Self.plan().id)) == checkpoint)

        // Again: read from the checkpoint on, nothing written.
        source.save("d", ["1-dd"])
        let bulksBefore = target.calls("bulk")
        let again = try await Self.run(Self.plan(), peers)
        #expect(again.state == .completed)
        #expect(source.changesSince.dropFirst(source.changesSince.count - 2).first == last)
        #expect(target.has("d", "1-dd"))
        #expect(target.calls("bulk") == bulksBefore + 1)
        #expect(again.docsWritten == 1)
    }

    /// Both sides edited the same revision: `auto` keeps the deterministic winner (the higher
    /// revision of the same generation) open on the target and closes the other; `manual` and
    /// `couchdb` keep both, `couchdb` asking the target for CouchDB's choice of the current one.
    @Test(arguments: ConflictPolicy.allCases)
    func aConflictIsSettledByThePolicy(_ policy: ConflictPolicy) async throws {
        let source = FakePeer("src"), target = FakePeer("dst")
        source.save("doc", ["2-cccc", "1-aaaa"], #"{"side":"source"}"#)
        target.save("doc", ["2-bbbb", "1-aaaa"], #"{"side":"target"}"#)
        let status = try await Self.run(Self.plan(conflicts: policy), FakePeers(source, target))
        #expect(status.state == .completed, "\(status.lastError)")
        if policy == .auto {
            #expect(target.openLeafRevs("doc") == ["2-cccc"])
            #expect(status.conflictsResolved == 1)
        } else {
            #expect(target.openLeafRevs("doc") == ["2-bbbb", "2-cccc"])
            #expect(status.conflictsResolved == 0)
        }
        #expect(target.insertedWinnerByRevID("doc", "2-cccc") == (policy == .couchdb))
    }

    @Test func blobsGoBeforeTheRevisionsThatReferenceThem() async throws {
        let source = FakePeer("src"), target = FakePeer("dst")
        let key = "sha1-QneWo5IYIQ0ZrbCG0hXPGC6jy7E="
        source.putBlobDirectly(key, Array("a blob".utf8))
        source.save("photo", ["1-ph"], #"{"f":{"@type":"blob","digest":"\#(key)","length":6}}"#)
        let status = try await Self.run(Self.plan(), FakePeers(source, target))
        #expect(status.state == .completed, "\(status.lastError)")
        #expect(target.blob(key) == Array("a blob".utf8))
        #expect(target.has("photo", "1-ph"))
        #expect(status.blobsTransferred == 1)
    }

    /// A peer that times out is retried with backoff until the replication completes.
    @Test func transientFailuresAreRetried() async throws {
        let source = FakePeer("src"), target = FakePeer("dst")
        for index in 0..<5 { source.save("d\(index)", ["1-d\(index)"]) }
        target.failNext("bulk", times: 2, with: SofaError(.timeout, "the target did not answer"))
        let status = try await Self.run(Self.plan(), FakePeers(source, target))
        #expect(status.state == .completed, "\(status.lastError)")
        #expect(target.calls("bulk") == 3)
        for index in 0..<5 { #expect(target.has("d\(index)", "1-d\(index)")) }
    }

    /// What can never work fails at once, with the reason: a missing database, different
    /// versioning modes.
    @Test func aReplicationThatCannotWorkFailsAtOnce() async throws {
        let source = FakePeer("src")
        let missing = try await Self.run(Self.plan("src", "nowhere"), FakePeers(source))
        #expect(missing.state == .failed)
        #expect(missing.lastError.contains("nowhere"), "\(missing.lastError)")

        let vectors = FakePeer("vv", versioning: .versionVectors)
        let mixed = try await Self.run(Self.plan("src", "vv"), FakePeers(source, vectors))
        #expect(mixed.state == .failed)
        #expect(mixed.lastError.contains("different versioning modes"), "\(mixed.lastError)")
        #expect(vectors.calls("bulk") == 0)
    }
}
