import Foundation
import SofaClient
import Testing

/// Replications started by a client (SDK or CLI) are recorded in `_replicator`: a replicator
/// killed with SIGKILL and restarted by the supervisor resumes them, lists them, and the client's
/// handle follows them across the restart.
@Suite(.serialized) struct ClientReplicationRestartTests {
    static func items(_ range: Range<Int>) -> [BulkItem] {
        range.map { BulkItem.put(id: "d\($0)", rev: "", body: Array(#"{"n":\#($0)}"#.utf8), deleted: false) }
    }

    @Test func continuousReplicationSurvivesAReplicatorKill() async throws {
        try await Cluster.with(clientTimeout: .seconds(30)) { a in
            let source = try await a.client.createDatabase("src")
            let target = try await a.client.createDatabase("dst")
            _ = try await source.bulk(Self.items(0..<500))
            let handle = try await a.client.replicate(from: "src", to: "dst", mode: .continuous)
            let id = try #require(handle.ids.first)
            try await waitUntil("the first 500 on the target", in: target) { try await target.info().documentCount == 500 }
            let record = try await a.client.database("_replicator").get(id: "client-\(id)")
            #expect(try record.json().objectValue?["continuous"] == .bool(true))

            let pid = try #require(a.supervisor.pid(of: "replicator"))
            kill(pid, SIGKILL)
            _ = try await source.bulk(Self.items(500..<1_000))
            try await waitForRestart(a, "replicator", old: pid)
            try await waitUntil("all 1,000 on the target", in: target, timeout: .seconds(60)) {
                try await target.info().documentCount == 1_000
            }
            #expect(a.supervisor.restartCount(of: "replicator") >= 1)
            // Listed, still running, and the handle taken before the kill follows it.
            let listed = try await retrying { try await a.client.replications() }
            let status = try #require(listed.first { $0.id == id }, "\(listed)")
            #expect(!status.state.isFinal, "\(status)")
            #expect(status.continuous)
            let caughtUp = try await handle.wait(timeout: .seconds(30)) { $0.state == .idle }
            #expect(caughtUp.first?.id == id)

            // Stopped: no longer recorded, and the handle's updates end with the reason.
            try await handle.stop()
            #expect(try await handle.status().first?.state == .stopped)
            await expectFailure("the record after stop", [.notFound]) {
                _ = try await a.client.database("_replicator").get(id: "client-\(id)")
            }
            var last: ReplicationStatus?
            for try await update in handle.updates() { last = update }
            #expect(last?.state == .stopped)
        }
    }

    /// A client's replication filtered by a design document's filter keeps it across a kill of the
    /// replicator: its record holds CouchDB's `filter` and `query_params`, read back at restart.
    @Test func aDesignFilterSurvivesAReplicatorKill() async throws {
        try await Cluster.with(clientTimeout: .seconds(30)) { a in
            let source = try await a.client.createDatabase("src")
            let target = try await a.client.createDatabase("dst")
            try await source.putDesignDocument("pick", ["filters": ["every": "function (doc, req) { return doc.n % Number(req.query.by) === 0; }"]])
            _ = try await source.bulk(Self.items(0..<10))
            let handle = try await a.client.replicate(from: "src", to: "dst", mode: .continuous,
                                                      filter: .design("pick/every", queryParams: ["by": "2"]))
            let id = try #require(handle.ids.first)
            try await waitUntil("the first five on the target", in: target) { try await target.info().documentCount == 5 }
            let record = try await a.client.database("_replicator").get(id: "client-\(id)").json()
            #expect(record["filter"] == "pick/every" && record["query_params"] == ["by": "2"], "\(record)")

            let pid = try #require(a.supervisor.pid(of: "replicator"))
            kill(pid, SIGKILL)
            _ = try await source.bulk(Self.items(10..<20))
            try await waitForRestart(a, "replicator", old: pid)
            try await waitUntil("ten on the target", in: target, timeout: .seconds(60)) { try await target.info().documentCount == 10 }
            #expect(try await target.allDocs().map(\.id).sorted() == (0..<20).filter { $0 % 2 == 0 }.map { "d\($0)" }.sorted())
            try await handle.stop()
        }
    }

    /// A one-shot replication interrupted by the kill resumes after the restart and completes;
    /// its record is removed once it has. The kill must come while the run is in its first half
    /// (well before its end, which removes the record: a replicator killed after that knows
    /// nothing of it), so an attempt seen further along is not killed and a larger one follows.
    @Test func interruptedOneShotResumesAndCompletes() async throws {
        try await Cluster.with(clientTimeout: .seconds(30)) { a in
            let source = try await a.client.createDatabase("src")
            let target = try await a.client.createDatabase("dst")
            var written = 0
            for attempt in 0..<4 {
                let count = 20_000 << attempt
                for start in stride(from: written, to: written + count, by: 5_000) {
                    _ = try await source.bulk(Self.items(start..<start + 5_000))
                }
                written += count
                let handle = try await a.client.replicate(from: "src", to: "dst")
                let id = try #require(handle.ids.first)
                let progressed = try await handle.wait(timeout: .seconds(120)) { $0.checkpoint > 0 || $0.state.isFinal }
                guard let seen = progressed.first, !seen.state.isFinal, seen.docsChecked < UInt64(count / 2) else {
                    _ = try await handle.wait(timeout: .seconds(120))  // let it end before the next attempt
                    continue
                }
                let pid = try #require(a.supervisor.pid(of: "replicator"))
                kill(pid, SIGKILL)
                let done = try await handle.wait(timeout: .seconds(180))
                #expect(done.first?.state == .completed, "\(done)")
                #expect(a.supervisor.restartCount(of: "replicator") >= 1)
                #expect(try await target.info().documentCount == UInt64(written))
                try await waitUntil("the record removed", in: a.client.database("_replicator")) {
                    (try? await a.client.database("_replicator").get(id: "client-\(id)")) == nil
                }
                return
            }
            Issue.record("no one-shot replication was seen in its first half before it ended")
        }
    }

    /// A one-shot replication started again as soon as it completed runs anew each time (the end
    /// of the previous run, which deletes its record, never takes the new run for itself), and
    /// leaves no record once the last one completed.
    @Test func oneShotStartedAgainAsSoonAsItCompletesRunsAnew() async throws {
        try await Cluster.with(clientTimeout: .seconds(30)) { a in
            let source = try await a.client.createDatabase("src")
            let target = try await a.client.createDatabase("dst")
            var id = ""
            for round in 0..<15 {
                _ = try await source.put(id: "doc\(round)", json: "{}")
                let handle = try await a.client.replicate(from: "src", to: "dst")
                id = try #require(handle.ids.first)
                let done = try await handle.wait(timeout: .seconds(30)) { $0.state.isFinal }
                // Known race, open (see issue 17's note): on a loaded machine, about one run in
                // ten of this suite sees a round's run stopped before it read anything.
                withKnownIssue("a one-shot started again at once is sometimes stopped before it runs", isIntermittent: true) {
                    #expect(done.first?.state == .completed, "round \(round): \(done)")
                    #expect(done.first?.docsChecked == 1, "round \(round): \(done)")
                    #expect(done.first?.docsWritten == 1, "round \(round): \(done)")
                }
            }
            // Whatever happened to a round, a last run brings every document across.
            let last = try await a.client.replicate(from: "src", to: "dst").wait(timeout: .seconds(30))
            #expect(last.first?.state == .completed, "\(last)")
            #expect(try await target.info().documentCount == 15)
            let records = a.client.database("_replicator")
            try await waitUntil("the record removed", in: records) {
                (try? await records.get(id: "client-\(id)")) == nil
            }
        }
    }
}
