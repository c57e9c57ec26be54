internal import ArgumentParser
internal import Foundation
internal import SofaClient
internal import SofaCluster

/// `sofa-bench replicate`: two temporary local clusters. Prints the bulk-import rate of the docs
/// into one cluster (the local write ceiling), the docs/s of a one-shot push of the same docs to
/// the other cluster, their ratio, and the latency from a write on one side to its arrival on the
/// other with a continuous replication (p50/p99).
struct BenchReplicate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replicate",
        abstract: "One-shot push docs/s vs. the bulk-import rate, and continuous write-to-arrival latency.")
    @Option(help: "Documents (about 300 bytes each).") var docs: Int = 100_000
    @Option(help: "Documents per bulk write of the import.") var batch: Int = 1_000
    @Option(help: "Writes timed for the continuous latency.") var samples: Int = 200
    @Option(help: "Import and push trials (interleaved); the figures are their medians.") var trials: Int = 3

    func run() async throws {
        try await reporting {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-bench-repl-\(getpid())")
            var clusters: [Supervisor] = []
            defer { try? FileManager.default.removeItem(at: root) }
            do {
                // The two clusters share one key (as a deployment of several clusters may): each one's
                // replicator is the other's own service.
                let keys = root.appendingPathComponent("keys").path
                for name in ["a", "b"] {
                    let supervisor = try Supervisor(.init(dataDirectory: root.appendingPathComponent(name),
                                                          gatewayPort: try freePort(), queryWorkers: 1, logLevel: "warning",
                                                          settings: [Setting.keysDir.variable: keys])) { _ in }
                    try await supervisor.start()
                    clusters.append(supervisor)
                }
                let figures = try await measure(clusters[0], clusters[1])
                for cluster in clusters { await cluster.stop() }
                printJSON(figures)
            } catch {
                for cluster in clusters { await cluster.stop() }
                throw error
            }
        }
    }

    func measure(_ a: Supervisor, _ b: Supervisor) async throws -> JSON {
        let clientA = try await a.connect(timeout: .seconds(120))
        let clientB = try await b.connect(timeout: .seconds(120))
        defer { clientA.close(); clientB.close() }
        let dbA = try await clientA.createDatabase("bench")
        let dbB = try await clientB.createDatabase("bench")
        // A body whose compact JSON is about 300 bytes.
        let padding = String(repeating: "x", count: 300 - #"{"n":000000,"pad":""}"#.utf8.count)
        func body(_ n: Int) -> [UInt8] { Array(#"{"n":\#(n),"pad":"\#(padding)"}"#.utf8) }

        // Each trial: the write ceiling, a bulk import into a new database of one cluster as
        // `sofa import` does it (batches of --batch, 4 in flight); then the one-shot push of the
        // same docs to a new database of the other. Medians of the trials are reported (this
        // machine's disk and CPU vary from second to second).
        var importRates: [Double] = []
        var pushRates: [Double] = []
        for trial in 0..<max(1, trials) {
            let source = trial == 0 ? dbA : try await clientA.createDatabase("bench-\(trial)")
            let importer = BulkImporter(store: source.collection(""), batchSize: batch, inFlight: 4)
            let report = try await importer.run((0..<docs).map { ($0 + 1, body($0)) },
                                                naming: ImportNaming(idField: nil, idPrefix: "d"))
            guard report.failed == 0 else {
                throw SofaError(.unexpectedError, "import failed: \(report.failures.first?.compactString ?? "")")
            }
            importRates.append(Double(report.imported) / report.seconds)
            let target = trial == 0 ? "bench" : "push-\(trial)"
            if trial > 0 { _ = try await clientB.createDatabase(target) }
            let pushStart = ContinuousClock.now
            let push = try await clientA.replicate(from: source.name, to: "\(b.gatewayEndpoint)/\(target)")
            let done = try await push.wait(timeout: .seconds(3600))
            pushRates.append(Double(docs) / seconds(ContinuousClock.now - pushStart))
            guard done.first?.state == .completed, done.first?.docsWritten == UInt64(docs) else {
                throw SofaError(.unexpectedError, "the push did not complete: \(done)")
            }
        }
        let importRate = median(importRates), pushRate = median(pushRates)

        // Continuous: from a write on A to its arrival on B.
        let live = try await clientA.replicate(from: "bench", to: "\(b.gatewayEndpoint)/bench", mode: .continuous,
                                               filter: .docIDs((0..<samples).map { "live\($0)" }))
        _ = try await live.wait(timeout: .seconds(60)) { $0.state == .idle }
        var latencies: [UInt64] = []
        var since = try await dbB.changes(since: 0, limit: 1, descending: true).lastSequence
        for i in 0..<samples {
            let id = "live\(i)"
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try await dbA.put(id: id, body: body(i))
            arrival: while true {
                let batch = try await dbB.changes(ChangesQuery(since: since, limit: 100, docIDs: [id], waitMs: 10_000))
                since = max(since, batch.lastSequence)
                if batch.changes.contains(where: { $0.id == id }) { break arrival }
                guard DispatchTime.now().uptimeNanoseconds - start < 30_000_000_000 else {
                    throw SofaError(.timeout, "\(id) did not arrive within 30 s")
                }
            }
            latencies.append(DispatchTime.now().uptimeNanoseconds - start)
        }
        try await live.stop()
        let p50 = percentile(latencies, 0.50) / 1000, p99 = percentile(latencies, 0.99) / 1000
        return .object(JSONObject([
            ("docs", .int(Int64(docs))),
            ("import_docs_per_s", .double((importRate * 10).rounded() / 10)),
            ("push_docs_per_s", .double((pushRate * 10).rounded() / 10)),
            ("push_to_import_ratio", .double((pushRate / importRate * 1000).rounded() / 1000)),
            ("import_trials_docs_per_s", .array(importRates.map { .int(Int64($0)) })),
            ("push_trials_docs_per_s", .array(pushRates.map { .int(Int64($0)) })),
            ("continuous_latency_p50_ms", .double((p50 * 100).rounded() / 100)),
            ("continuous_latency_p99_ms", .double((p99 * 100).rounded() / 100)),
            ("targets", .string("push ≥ 50% of import; p50 < 20 ms")),
        ]))
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
