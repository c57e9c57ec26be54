internal import SofaFiles
internal import ArgumentParser
internal import Foundation
internal import SofaClient
internal import SofaCore
internal import SofaQL
internal import SofaCluster

extension Bench {
    /// `sofa-bench query`: indexed point lookups and unindexed scans through the cluster, with 1
    /// and 2 query workers, next to the same compiled SQL run directly on the database file.
    struct Query: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Indexed point-lookup queries/s and unindexed scan time, 1 and 2 workers, vs. SQLite directly.",
            discussion: """
                Imports --docs documents of about 300 bytes into a temporary cluster, creates a value \
                index on `n`, then measures: point lookups `SELECT name FROM _ WHERE n = $n` (random \
                n, --in-flight outstanding, then again with --saturating-in-flight outstanding, which \
                keeps both cores busy) as queries/s; and an unindexed scan `SELECT COUNT(*) FROM _ \
                WHERE email LIKE $p` (--scans of them, all submitted at once), first with 1 query \
                worker, then with the cluster restarted on the same data with 2. The benchmark then \
                compiles the same queries and runs them on a read-only connection to the database \
                file in this process: the SQLite baseline of the ratios. Last, the same number of \
                messages of a lookup's size go through a bare ZeroMQ chain of the cluster's shape \
                (client → broker on loopback TCP → worker on ipc:// and back, doing nothing): \
                `bare_chain_*`, the most a lookup through a gateway and a worker could reach on this \
                machine. Each lookup figure, and the baselines, is the median of --rounds \
                measurements (each round's figure follows, in `_trials`); the CPU each process spent \
                per lookup covers the --in-flight rounds.
                """)
        @Option(help: "Documents to import.") var docs: Int = 100_000
        @Option(help: "Point-lookup queries per measurement.") var lookups: Int = 5000
        @Option(help: "Measurements of each lookup figure and of the SQLite baseline (their median is the figure).")
        var rounds: Int = 3
        @Option(name: .customLong("in-flight"), help: "Point lookups outstanding at once.") var inFlight: Int = 16
        @Option(name: .customLong("saturating-in-flight"),
                help: "Point lookups outstanding at once for the second figure, which keeps both cores busy (0: none).")
        var saturatingInFlight: Int = 64
        @Option(help: "Unindexed scans per measurement (submitted together).") var scans: Int = 4
        @Flag(inversion: .prefixedNo,
              help: "Run the lookups' tasks on the connection's thread (SofaClient.executor), not the cooperative pool.")
        var onConnectionThread = true

        static let lookupQuery = "SELECT name FROM _ WHERE n = $n"
        static let scanQuery = "SELECT COUNT(*) FROM _ WHERE email LIKE $p"
        static let scanPattern = "%99@example.com"

        func run() async throws {
            try await reporting {
                let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-bench-query-\(getpid())")
                try? FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: scratch) }
                let data = scratch.appendingPathComponent("cluster")
                var figures = JSONObject()
                figures["docs"] = .int(Int64(docs))

                let one = try await withCluster(data, workers: 1) { client, processes in
                    let db = try await client.createDatabase("bench")
                    let started = ContinuousClock.now
                    let importer = BulkImporter(store: db.collection(""), batchSize: 1000, inFlight: 4)
                    let report = try await importer.run(BenchDocuments.make(count: docs).enumerated().map { ($0.offset + 1, $0.element) },
                                                        naming: ImportNaming(idField: nil, idPrefix: "bench-"))
                    guard report.failed == 0 else { throw SofaError(.unexpectedError, "\(report.failed) imports failed") }
                    figures["import_s"] = .double(round2(seconds(ContinuousClock.now - started)))
                    try await db.createIndex("byN", kind: .value, expressions: [[".n"]])
                    let plan = try await db.explain(n1ql: Self.lookupQuery)
                    guard plan.contains("byN") else { throw SofaError(.unexpectedError, "the lookup does not use the index:\n\(plan)") }
                    return try await measure(db, processes: processes)
                }
                let two = try await withCluster(data, workers: 2) { client, processes in
                    try await measure(client.database("bench"), processes: processes)
                }
                let direct = try await onThread { try directFigures(data) }
                let chain = try await onThread { try chainFigures(scratch) }

                figures["lookups_per_s_1_worker"] = .double(one.lookupsPerSecond.rounded())
                figures["lookups_per_s_2_workers"] = .double(two.lookupsPerSecond.rounded())
                figures["lookups_per_s_sqlite"] = .double(direct.lookupsPerSecond.rounded())
                figures["rounds"] = .int(Int64(max(1, rounds)))
                figures["lookups_per_s_1_worker_trials"] = .array(one.lookupTrials.map { .double($0.rounded()) })
                figures["lookups_per_s_2_workers_trials"] = .array(two.lookupTrials.map { .double($0.rounded()) })
                figures["lookups_per_s_sqlite_trials"] = .array(direct.lookupTrials.map { .double($0.rounded()) })
                figures["on_connection_thread"] = .bool(onConnectionThread)
                figures["lookup_ratio_1_worker"] = .double(round2(one.lookupsPerSecond / direct.lookupsPerSecond))
                figures["lookup_ratio_2_workers"] = .double(round2(two.lookupsPerSecond / direct.lookupsPerSecond))
                // The same traffic through a bare ZeroMQ chain of the cluster's shape, doing nothing:
                // the most any lookup figure through a gateway and a worker could reach here.
                figures["bare_chain_per_s"] = .double(chain.lookupsPerSecond.rounded())
                figures["bare_chain_per_s_trials"] = .array(chain.lookupTrials.map { .double($0.rounded()) })
                figures["bare_chain_ratio"] = .double(round2(chain.lookupsPerSecond / direct.lookupsPerSecond))
                // Where a lookup's time goes: each process's CPU per lookup, with --in-flight outstanding.
                for (name, micros) in one.cpuPerLookup { figures["cpu_us_per_lookup_1_worker_\(name)"] = .double(round2(micros)) }
                for (name, micros) in two.cpuPerLookup { figures["cpu_us_per_lookup_2_workers_\(name)"] = .double(round2(micros)) }
                if saturatingInFlight > 0 {
                    // With --in-flight lookups the cluster waits on its own hand-offs more than it
                    // works (both cores are not busy): this figure shows what the processes do
                    // when they are, and whether a second worker then adds anything.
                    figures["saturating_in_flight"] = .int(Int64(saturatingInFlight))
                    figures["lookups_per_s_1_worker_saturating"] = .double(one.saturatingLookupsPerSecond.rounded())
                    figures["lookups_per_s_2_workers_saturating"] = .double(two.saturatingLookupsPerSecond.rounded())
                    figures["lookups_per_s_1_worker_saturating_trials"] = .array(one.saturatingTrials.map { .double($0.rounded()) })
                    figures["lookups_per_s_2_workers_saturating_trials"] = .array(two.saturatingTrials.map { .double($0.rounded()) })
                    figures["lookup_ratio_1_worker_saturating"] = .double(round2(one.saturatingLookupsPerSecond / direct.lookupsPerSecond))
                    figures["bare_chain_per_s_saturating"] = .double(chain.saturatingLookupsPerSecond.rounded())
                    figures["bare_chain_ratio_saturating"] = .double(round2(chain.saturatingLookupsPerSecond / direct.lookupsPerSecond))
                    figures["lookup_speedup_2_workers_saturating"] = .double(round2(two.saturatingLookupsPerSecond / one.saturatingLookupsPerSecond))
                }
                figures["scan_ms_single_1_worker"] = .double(round2(one.singleScan * 1000))
                figures["scan_ms_single_sqlite"] = .double(round2(direct.singleScan * 1000))
                figures["scan_ratio_single"] = .double(round2(direct.singleScan / one.singleScan))
                figures["scans"] = .int(Int64(scans))
                figures["scans_s_1_worker"] = .double(round2(one.concurrentScans))
                figures["scans_s_2_workers"] = .double(round2(two.concurrentScans))
                figures["scans_s_sqlite_serial"] = .double(round2(direct.singleScan * Double(scans)))
                figures["scan_speedup_2_workers"] = .double(round2(one.concurrentScans / two.concurrentScans))
                printJSON(.object(figures))
            }
        }

        struct Figures: Sendable {
            var lookupsPerSecond: Double
            /// The same with `saturatingInFlight` lookups outstanding (0 when not measured).
            var saturatingLookupsPerSecond: Double = 0
            /// Seconds for one scan.
            var singleScan: Double
            /// Seconds for `scans` scans submitted together.
            var concurrentScans: Double
            /// Microseconds of CPU per lookup (with `inFlight` outstanding) of the client (this
            /// process), the gateway and the query workers together.
            var cpuPerLookup: [(String, Double)] = []
            /// Each round's lookups/s (`lookupsPerSecond` and `saturatingLookupsPerSecond` are their medians).
            var lookupTrials: [Double] = []
            var saturatingTrials: [Double] = []
        }

        /// The pids of the processes a lookup crosses: this client's, the gateway's and the workers'.
        struct Processes: Sendable {
            var gateway: Int32?
            var workers: [Int32]
        }

        func withCluster<T>(_ data: URL, workers: Int, _ body: (SofaClient, Processes) async throws -> T) async throws -> T {
            // One client measures the workers' scaling: it may use every worker (the fair share
            // between clients, SOFA_QUERY_CLIENT_SHARE, would give it half).
            let supervisor = try Supervisor(.init(dataDirectory: data, gatewayPort: try freePort(), queryWorkers: workers,
                                                  logLevel: "warning",
                                                  settings: ["SOFA_QUERY_CLIENT_SHARE": "100"])) { _ in }
            try await supervisor.start()
            do {
                let client = try await supervisor.connect(timeout: .seconds(120))
                defer { client.close() }
                let processes = Processes(gateway: supervisor.pid(of: "gateway"),
                                          workers: (1...workers).compactMap { supervisor.pid(of: "query-\($0)") })
                let result = try await body(client, processes)
                await supervisor.stop()
                return result
            } catch {
                await supervisor.stop()
                throw error
            }
        }

        func measure(_ db: Database, processes: Processes) async throws -> Figures {
            // Prepared once, as an application would, then run with each lookup's parameter (this
            // also warms the worker's connection and compile cache).
            let lookup = try await db.prepare(n1ql: Self.lookupQuery)
            _ = try await lookup.run(["n": 1])
            let executor = onConnectionThread ? db.client.executor : nil
            let cpu = { () -> [(String, Double?)] in
                [("client", processCPUSeconds(getpid())), ("gateway", processes.gateway.flatMap(processCPUSeconds)),
                 ("workers", processes.workers.isEmpty ? nil : processes.workers.compactMap(processCPUSeconds).reduce(0, +))]
            }
            let before = cpu()
            var lookupRates: [Double] = []
            for _ in 0..<max(1, rounds) { lookupRates.append(try await lookupsPerSecond(lookup, lanes: max(1, inFlight), on: executor)) }
            let used = zip(before, cpu()).compactMap { start, end -> (String, Double)? in
                guard let first = start.1, let last = end.1 else { return nil }
                return (start.0, (last - first) / Double(lookups * lookupRates.count) * 1e6)
            }
            var saturatingRates: [Double] = []
            if saturatingInFlight > 0 {
                for _ in 0..<max(1, rounds) {
                    saturatingRates.append(try await lookupsPerSecond(lookup, lanes: saturatingInFlight, on: executor))
                }
            }

            let scanStart = ContinuousClock.now
            let expected = try await db.query(n1ql: Self.scanQuery, parameters: ["p": .string(Self.scanPattern)]).rows
            let single = seconds(ContinuousClock.now - scanStart)
            let together = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<max(1, scans) {
                    group.addTask {
                        let rows = try await db.query(n1ql: Self.scanQuery, parameters: ["p": .string(Self.scanPattern)]).rows
                        guard rows == expected else { throw SofaError(.unexpectedError, "scans disagree") }
                    }
                }
                try await group.waitForAll()
            }
            return Figures(lookupsPerSecond: median(lookupRates), saturatingLookupsPerSecond: median(saturatingRates),
                           singleScan: single, concurrentScans: seconds(ContinuousClock.now - together), cpuPerLookup: used,
                           lookupTrials: lookupRates, saturatingTrials: saturatingRates)
        }

        /// `lookups` point lookups of random documents with `lanes` of them outstanding at once,
        /// their tasks on `executor` (nil: the cooperative pool).
        func lookupsPerSecond(_ lookup: PreparedQuery, lanes: Int, on executor: (any TaskExecutor)?) async throws -> Double {
            let total = lookups, count = docs
            let started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<lanes {
                    group.addTask(executorPreference: executor) {
                        var generator = SplitMix(UInt64.random(in: 1...UInt64.max))  // no system call per lookup
                        for _ in stride(from: lane, to: total, by: lanes) {
                            let n = Int64.random(in: 0..<Int64(count), using: &generator)
                            let rows = try await lookup.run(["n": .int(n)]).rows
                            guard rows.count == 1 else { throw SofaError(.unexpectedError, "lookup of \(n) found \(rows.count) rows") }
                        }
                    }
                }
                try await group.waitForAll()
            }
            return Double(total) / seconds(ContinuousClock.now - started)
        }

        /// Messages of a lookup's size through the bare chain (`BareChain`), with --in-flight and
        /// --saturating-in-flight outstanding, --lookups of them per round.
        func chainFigures(_ scratch: URL) throws -> Figures {
            let measure = { (inFlight: Int) throws -> [Double] in
                try (0..<max(1, rounds)).map { _ in
                    try BareChain.messagesPerSecond(inFlight: inFlight, count: lookups, size: 100, scratch: scratch)
                }
            }
            let rates = try measure(max(1, inFlight))
            let saturating = saturatingInFlight > 0 ? try measure(saturatingInFlight) : []
            return Figures(lookupsPerSecond: median(rates), saturatingLookupsPerSecond: median(saturating), singleScan: 0,
                           concurrentScans: 0, lookupTrials: rates, saturatingTrials: saturating)
        }

        /// The same compiled SQL on a read-only connection in this process.
        func directFigures(_ data: URL) throws -> Figures {
            let file = StorageLayout.databaseFile(of: "bench", in: data)
            let confined = try Confined.make(on: DispatchQueue(label: "sofa.bench.query")) { (queue) throws(SofaError) in
                try SQLiteConnection(path: file.path, queue: queue, options: .queryWorker)
            }
            return try confined.sync { (connection) throws -> Figures in
                let schema = try connection.schema()
                let lookup = try QueryCompiler.compile(try N1QL.parse(Self.lookupQuery), schema: schema)
                let scan = try QueryCompiler.compile(try N1QL.parse(Self.scanQuery), schema: schema)
                var generator = SplitMix(UInt64.random(in: 1...UInt64.max))  // no system call per lookup
                var rates: [Double] = []
                for _ in 0..<max(1, rounds) {
                    var found = 0
                    let started = ContinuousClock.now
                    for _ in 0..<lookups {
                        let n = Int64.random(in: 0..<Int64(docs), using: &generator)
                        try connection.run(lookup, parameters: ["n": .int(n)]) { _ in found += 1 }
                    }
                    rates.append(Double(lookups) / seconds(ContinuousClock.now - started))
                    guard found == lookups else { throw SofaError(.unexpectedError, "direct lookups found \(found) of \(lookups)") }
                }
                let scanStart = ContinuousClock.now
                try connection.run(scan, parameters: ["p": .string(Self.scanPattern)]) { _ in }
                return Figures(lookupsPerSecond: median(rates), singleScan: seconds(ContinuousClock.now - scanStart), concurrentScans: 0,
                               lookupTrials: rates)
            }
        }
    }
}

private func round2(_ x: Double) -> Double { (x * 100).rounded() / 100 }
