import Foundation
import SofaCluster
import SofaClient
import SofaWire
import SofaCore
import Synchronization
import Testing

/// Killing processes under load: what was acknowledged survives, what was not fails clearly.
@Suite(.serialized) struct FaultTests {
    final class Ledger: Sendable {
        let acknowledged = Mutex<[String: String]>([:])
        let failures = Mutex<[(code: SofaError.Code?, seconds: Double)]>([])
        let killed = Mutex(false)
    }

    /// 1,000 documents written 8 at a time; storage is `kill -9`ed after the 300th
    /// acknowledgement. Calls during the outage fail with a clear error, promptly; the supervisor
    /// restarts storage; each writer retries until its document is in; and every acknowledged
    /// write is there afterwards with the acknowledged revision.
    @Test func acknowledgedWritesSurviveKillingStorage() async throws {
        try await Cluster.with(clientTimeout: .seconds(10)) { cluster in
            let db = try await cluster.client.createDatabase("crash")
            let storagePid = try #require(cluster.supervisor.pid(of: "storage"))
            let ledger = Ledger()
            let lanes = 8
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<lanes {
                    group.addTask {
                        for index in stride(from: lane, to: 1000, by: lanes) {
                            let id = String(format: "doc-%04d", index)
                            try await write(id, index: index, to: db, ledger: ledger, cluster: cluster, storagePid: storagePid)
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(ledger.killed.withLock { $0 })
            #expect(cluster.supervisor.restartCount(of: "storage") >= 1)
            #expect(cluster.supervisor.pid(of: "storage") != storagePid)
            let failures = ledger.failures.withLock { $0 }
            #expect(!failures.isEmpty, "no call happened during the outage")
            for failure in failures {
                #expect([.unavailable, .timeout, .shuttingDown].contains(failure.code), "unclear failure \(String(describing: failure.code))")
                #expect(failure.seconds < 30, "a call hung for \(failure.seconds) s")
            }
            let acknowledged = ledger.acknowledged.withLock { $0 }
            #expect(acknowledged.count == 1000)
            for (id, rev) in acknowledged {
                let doc = try await db.get(id: id)
                #expect(doc.rev == rev, "\(id) lost its acknowledged revision")
            }
        }
    }

    private func write(_ id: String, index: Int, to db: Database, ledger: Ledger, cluster: Cluster, storagePid: Int32) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let started = ContinuousClock.now
            do {
                let saved = try await db.put(id: id, json: #"{"n":\#(index)}"#)
                let count = ledger.acknowledged.withLock { acknowledged in
                    acknowledged[id] = saved.rev
                    return acknowledged.count
                }
                if count == 300 && !ledger.killed.withLock({ $0 }) {
                    ledger.killed.withLock { $0 = true }
                    kill(storagePid, SIGKILL)
                }
                return
            } catch where error.is(.conflict) {
                // An earlier attempt was applied although its answer was lost: it is in.
                let doc = try await db.get(id: id)
                ledger.acknowledged.withLock { $0[id] = doc.rev }
                return
            } catch {
                let seconds = Double((ContinuousClock.now - started).components.attoseconds) / 1e18
                    + Double((ContinuousClock.now - started).components.seconds)
                ledger.failures.withLock { $0.append((error.sofaCode, seconds)) }
                // Wait for storage to come back before trying again (the event, with a deadline).
                await waitForStorage(cluster, until: deadline)
            }
        }
        Issue.record("\(id) could not be written within a minute")
    }

    private func waitForStorage(_ cluster: Cluster, until deadline: ContinuousClock.Instant) async {
        while ContinuousClock.now < deadline {
            if (try? await cluster.client.health(service: "storage")) != nil { return }
            await Task.yield()
        }
    }

    /// A query worker is killed while it runs a request: the broker notices the missing
    /// heartbeats and fails that request, saying it was not retried (it may be what killed the
    /// worker; run again, it could kill the next one). The other worker keeps serving.
    @Test func requestRunningOnAKilledWorkerFailsAndIsNotRetried() async throws {
        try await Cluster.with(queryWorkers: 2, heartbeatMs: 200) { cluster in
            let client = cluster.client
            // Long enough for the status polls below to see it running on a loaded machine.
            let answer = Task { try await client.echo(Array("in flight".utf8), service: "query", delayMs: 5000) }
            let busy = try await Self.busyWorker(cluster)
            let other = try #require(cluster.supervisor.childNames.first { $0.hasPrefix("query-") && $0 != busy })
            let otherPID = cluster.supervisor.pid(of: other)
            kill(try #require(cluster.supervisor.pid(of: busy)), SIGKILL)
            switch await answer.result {
            case .success:
                Issue.record("the request of the killed worker was answered")
            case .failure(let error):
                let error = try #require(error as? SofaError)
                #expect(error.sofaCode == .unavailable, "\(error)")
                #expect(error.message.contains("not retried"), "\(error.message)")
            }
            let next = try await client.echo([1], service: "query")
            #expect(next.instance.hasPrefix("query-"))
            #expect(cluster.supervisor.pid(of: other) == otherPID)
            #expect(cluster.supervisor.restartCount(of: other) == 0)
        }
    }

    /// The query worker the broker routed a request to, from the cluster status.
    static func busyWorker(_ cluster: Cluster) async throws -> String {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let query = try await cluster.client.clusterStatus().first { $0.name == "query" }
            if let detail = query?.detail, let range = detail.range(of: "busy: ") {
                let busy = String(detail[range.upperBound...].prefix { $0 != ";" && $0 != "," })
                if !busy.isEmpty { return busy }
            }
        }
        throw SofaError(.timeout, "the broker never routed the request")
    }
}

extension FaultTests {
    /// A query worker killed in the middle of a long query: the query fails clearly and is not
    /// run again on the other worker, which answers the next query.
    @Test func queryOfAKilledWorkerFailsAndIsNotRetried() async throws {
        try await Cluster.with(queryWorkers: 2, heartbeatMs: 200, clientTimeout: .seconds(120)) { cluster in
            let client = cluster.client
            let db = try await client.createDatabase("slow")
            let items: [BulkItem] = (0..<2000).map { .put(id: "d\($0)", rev: "", body: Array(#"{"n":\#($0)}"#.utf8), deleted: false) }
            _ = try await db.bulk(items)
            // Millions of pairs: long enough to be caught running.
            let answer = Task { try await db.query(n1ql: "SELECT COUNT(*) FROM _ AS a JOIN _ AS b ON a.n < b.n") }
            let busy = try await Self.busyWorker(cluster)
            kill(try #require(cluster.supervisor.pid(of: busy)), SIGKILL)
            switch await answer.result {
            case .success:
                Issue.record("the query of the killed worker was answered")
            case .failure(let error):
                let error = try #require(error as? SofaError)
                #expect(error.sofaCode == .unavailable, "\(error)")
                #expect(error.message.contains("while running this request"), "\(error.message)")
            }
            #expect(try await db.query(n1ql: "SELECT COUNT(*) FROM _").rows == [[.int(2000)]])
        }
    }
}

extension FaultTests {
    /// A client that goes away mid-query: the gateway notices the closed connection, the broker
    /// tells the worker, and the worker stops the query, so the only worker is free for the next
    /// client long before the abandoned query could have ended or reached its deadline.
    @Test func queryOfAClientThatWentAwayIsCancelled() async throws {
        try await Cluster.with(queryWorkers: 1, heartbeatMs: 200, clientTimeout: .seconds(30)) { cluster in
            let db = try await cluster.client.createDatabase("abandoned")
            let items: [BulkItem] = (0..<2000).map { .put(id: "d\($0)", rev: "", body: Array(#"{"n":\#($0)}"#.utf8), deleted: false) }
            _ = try await db.bulk(items)
            let leaving = try await cluster.supervisor.connect(timeout: .seconds(600))
            // Eight billion triples: hours of work, with a deadline ten minutes away.
            let abandoned = Task {
                try await leaving.database("abandoned").query(n1ql: "SELECT COUNT(*) FROM _ AS a CROSS JOIN _ AS b CROSS JOIN _ AS c")
            }
            var busy = false
            let deadline = ContinuousClock.now + .seconds(30)
            while !busy && ContinuousClock.now < deadline {
                let query = try await cluster.client.clusterStatus().first { $0.name == "query" }
                if let detail = query?.detail, let range = detail.range(of: "busy: ") {
                    busy = !detail[range.upperBound...].prefix { $0 != ";" && $0 != "," }.isEmpty
                }
            }
            try #require(busy, "the broker never routed the query")
            leaving.close()
            await #expect(throws: SofaError.self) { try await abandoned.value }
            // The one worker answers the next query: the abandoned one was stopped.
            let started = ContinuousClock.now
            let result = try await db.query(n1ql: "SELECT COUNT(*) FROM _")
            #expect(result.rows == [[.int(2000)]])
            #expect(ContinuousClock.now - started < .seconds(30))
        }
    }
}

/// The gateway killed under load: calls fail clearly while it is down, the supervisor restarts
/// it, and the same client connection works again without being re-created.
@Suite(.serialized) struct GatewayFaultTests {
    @Test func clientsRideOutAGatewayCrash() async throws {
        try await Cluster.with(clientTimeout: .seconds(10)) { cluster in
            let client = cluster.client
            let db = try await client.createDatabase("gw")
            let before = try await db.put(id: "before", json: #"{"ok":true}"#)
            let pid = try #require(cluster.supervisor.pid(of: "gateway"))
            kill(pid, SIGKILL)
            // While it is down (or until it is back): every failure is a clear one, never a hang.
            let deadline = ContinuousClock.now + .seconds(60)
            var failures: [SofaError.Code?] = []
            var after: DocumentRevision?
            while after == nil && ContinuousClock.now < deadline {
                let started = ContinuousClock.now
                do throws(SofaError) {
                    after = try await db.put(id: "after", json: #"{"ok":true}"#)
                } catch where error.is(.conflict) {
                    after = DocumentRevision(id: "after", rev: try await db.get(id: "after").rev, sequence: 0)
                } catch {
                    failures.append(error.sofaCode)
                    #expect(ContinuousClock.now - started < .seconds(30), "a call hung")  // its timeout is 10 s
                    if (try? await client.health()) == nil { await Task.yield() }
                }
            }
            #expect(after != nil, "the gateway did not come back")
            #expect(cluster.supervisor.pid(of: "gateway") != pid)
            #expect(cluster.supervisor.restartCount(of: "gateway") >= 1)
            for code in failures {
                #expect([.unavailable, .timeout, .shuttingDown].contains(code), "unclear failure \(String(describing: code))")
            }
            #expect(try await db.get(id: "before").rev == before.rev)
        }
    }
}
