internal import ArgumentParser
internal import CSQLite
internal import Foundation
internal import SofaClient
internal import SofaStorage
internal import SofaCluster

extension Bench {
    /// `sofa-bench write`: bulk import through the service vs. the same rows written straight
    /// into SQLite, and single-document put round trips.
    struct Write: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Bulk import docs/s through the gateway vs. straight into SQLite, and put round-trip p50/p99.",
            discussion: """
                Writes --docs documents of about 300 bytes through the gateway in bulk batches of \
                --batch (--in-flight batches outstanding), then the same documents into a SQLite \
                table of storage's schema (WAL, synchronous=FULL, one transaction per batch) with \
                the rows prepared beforehand (pure SQLite inserts: the baseline of the ratio), \
                --trials times each, interleaved (their medians are the figures); then the direct \
                writes once more with each revision ID computed as storage does (parse, canonical \
                JSON, SHA-1), and the storage engine in this process; then \
                single-document put round trips with 1 and 16 concurrent clients. Uses the cluster \
                at --gateway if one answers there; otherwise starts a temporary one.
                """)
        @OptionGroup var options: GatewayOptions
        @Option(help: "Documents to import.") var docs: Int = 100_000
        @Option(help: "Documents per bulk transaction.") var batch: Int = 1000
        @Option(name: .customLong("in-flight"), help: "Bulk batches outstanding.") var inFlight: Int = 4
        @Option(help: "Single-document puts per round-trip measurement.") var puts: Int = 2000
        @Option(help: "Concurrent clients of the second round-trip measurement.") var clients: Int = 16
        @Option(help: "Bulk-import and direct-SQLite trials (interleaved); the figures are their medians.") var trials: Int = 3
        @Flag(help: "Start the cluster with CURVE off (SOFA_CURVE=off): the comparison figure of encryption's cost only.")
        var curveOff = false

        func run() async throws {
            try await reporting {
                var supervisor: Supervisor?
                let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-bench-write-\(getpid())")
                try? FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: scratch) }
                let endpoint: ClusterAccess
                if let running = try? await options.access.connect(timeout: .seconds(1)) {
                    running.close()
                    endpoint = options.access
                } else {
                    let started = try Supervisor(.init(dataDirectory: scratch.appendingPathComponent("cluster"),
                                                       gatewayPort: try freePort(), queryWorkers: 1, logLevel: "warning",
                                                       settings: curveOff ? [Setting.curve.variable: "off"] : [:])) { _ in }
                    try await started.start()
                    supervisor = started
                    endpoint = started.access
                }
                do {
                    let figures = try await measure(endpoint, scratch: scratch)
                    await supervisor?.stop()
                    printJSON(figures)
                } catch {
                    await supervisor?.stop()
                    throw error
                }
            }
        }

        func measure(_ endpoint: ClusterAccess, scratch: URL) async throws -> JSON {
            let client = try await endpoint.connect(timeout: .seconds(60))
            defer { client.close() }
            let name = "bench-write-\(getpid())"
            let db = try await client.createDatabase(name)
            do {
                let figures = try await measure(client, db, endpoint: endpoint, scratch: scratch)
                try? await client.deleteDatabase(name)
                return figures
            } catch {
                try? await client.deleteDatabase(name)
                throw error
            }
        }

        /// Bulk writes straight into a `StorageEngine` in this process, batches of `batchSize`,
        /// `inFlight` at a time, bodies parsed as storage parses them.
        static func engineRate(_ documents: [[UInt8]], scratch: URL, batchSize: Int, inFlight: Int) async throws -> Double {
            let folder = scratch.appendingPathComponent("engine")
            let engine = try StorageEngine(dataDirectory: folder)
            defer {
                engine.close()
                try? FileManager.default.removeItem(at: folder)
            }
            try await engine.createDatabase("bench")
            let db = try await engine.database("bench")
            let batches = stride(from: 0, to: documents.count, by: batchSize).map { start in
                (start, Array(documents[start..<min(start + batchSize, documents.count)]))
            }
            let started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<max(1, inFlight) {
                    group.addTask {
                        for (start, batch) in batches[lane...].enumerated().filter({ $0.offset % max(1, inFlight) == 0 }).map(\.element) {
                            var operations: [BulkOperation] = []
                            operations.reserveCapacity(batch.count)
                            for (offset, body) in batch.enumerated() {
                                operations.append(.write(DocumentWrite(id: "bench-\(start + offset + 1)", parent: nil as DocumentVersion?,
                                                                       body: try JSON.parse(body), deleted: false)))
                            }
                            _ = try await db.bulk(operations)
                        }
                    }
                }
                try await group.waitForAll()
            }
            return Double(documents.count) / seconds(ContinuousClock.now - started)
        }

        private func measure(_ client: SofaClient, _ db: Database, endpoint: ClusterAccess, scratch: URL) async throws -> JSON {
            let documents = BenchDocuments.make(count: docs)
            let path = scratch.appendingPathComponent("direct.sqlite3").path
            let batchSize = batch
            // Trials of both, interleaved, so that both see the machine as it is at the time;
            // the medians are reported.
            var gatewayRates: [Double] = []
            var directRates: [Double] = []
            for trial in 0..<max(1, trials) {
                // Through the gateway, into a new database each time.
                let store = trial == 0 ? db : try await client.createDatabase("\(db.name)-\(trial)")
                let importer = BulkImporter(store: store.collection(""), batchSize: batch, inFlight: inFlight)
                let report = try await importer.run(documents.enumerated().map { ($0.offset + 1, $0.element) },
                                                    naming: ImportNaming(idField: nil, idPrefix: "bench-"))
                if trial > 0 { try? await client.deleteDatabase(store.name) }
                guard report.failed == 0 else {
                    throw SofaError(.unexpectedError, "\(report.failed) bulk writes failed: \(report.failures.first?.compactString ?? "")")
                }
                gatewayRates.append(Double(report.imported) / report.seconds)
                // Straight into SQLite, on a thread of its own (blocking I/O stays off the cooperative pool).
                let directSeconds = try await onThread {
                    try DirectSQLiteWriter.write(documents, to: path, batchSize: batchSize, computeRevIDs: false)
                }
                directRates.append(Double(documents.count) / directSeconds)
            }
            let gatewayRate = median(gatewayRates), directRate = median(directRates)
            let withRevIDsSeconds = try await onThread {
                try DirectSQLiteWriter.write(documents, to: path, batchSize: batchSize, computeRevIDs: true)
            }
            let withRevIDsRate = Double(documents.count) / withRevIDsSeconds
            // The storage engine alone, in this process: what the service costs beyond it is transport.
            let engineRate = try await Self.engineRate(documents, scratch: scratch, batchSize: batch, inFlight: inFlight)
            // Single-document put round trips.
            let single = try await putLatencies(endpoint: endpoint, database: db.name, clients: 1, prefix: "rtt1-")
            let concurrent = try await putLatencies(endpoint: endpoint, database: db.name, clients: clients, prefix: "rttN-")
            return .object(JSONObject([
                ("docs", .int(Int64(documents.count))),
                ("doc_bytes", .int(Int64(documents.reduce(0) { $0 + $1.count } / max(1, documents.count)))),
                ("batch", .int(Int64(batch))), ("in_flight", .int(Int64(inFlight))),
                ("gateway_bulk_docs_per_s", .int(Int64(gatewayRate))),
                ("sqlite_direct_docs_per_s", .int(Int64(directRate))),
                ("ratio", .double((gatewayRate / directRate * 100).rounded() / 100)),
                ("gateway_bulk_trials_docs_per_s", .array(gatewayRates.map { .int(Int64($0)) })),
                ("sqlite_direct_trials_docs_per_s", .array(directRates.map { .int(Int64($0)) })),
                ("sqlite_direct_with_revids_docs_per_s", .int(Int64(withRevIDsRate))),
                ("ratio_with_revids", .double((gatewayRate / withRevIDsRate * 100).rounded() / 100)),
                ("storage_engine_in_process_docs_per_s", .int(Int64(engineRate))),
                ("put_1_client_p50_us", .double(percentile(single, 0.50))),
                ("put_1_client_p99_us", .double(percentile(single, 0.99))),
                ("put_\(clients)_clients_p50_us", .double(percentile(concurrent, 0.50))),
                ("put_\(clients)_clients_p99_us", .double(percentile(concurrent, 0.99))),
                ("puts_per_measurement", .int(Int64(puts))),
            ]))
        }

        /// `puts` single-document creates spread over `clients` connections, each one at a time.
        private func putLatencies(endpoint: ClusterAccess, database: String, clients: Int, prefix: String) async throws -> [UInt64] {
            var connections: [SofaClient] = []
            defer { connections.forEach { $0.close() } }
            for _ in 0..<clients { connections.append(try await endpoint.connect()) }
            let body = BenchDocuments.body(0)
            let perClient = max(1, puts / clients)
            return try await withThrowingTaskGroup(of: [UInt64].self) { group in
                for (lane, connection) in connections.enumerated() {
                    group.addTask {
                        let db = connection.database(database)
                        var samples: [UInt64] = []
                        samples.reserveCapacity(perClient)
                        for index in 0..<perClient {
                            let start = DispatchTime.now().uptimeNanoseconds
                            try await db.put(id: "\(prefix)\(lane)-\(index)", body: body)
                            samples.append(DispatchTime.now().uptimeNanoseconds - start)
                        }
                        return samples
                    }
                }
                var all: [UInt64] = []
                for try await samples in group { all += samples }
                return all
            }
        }
    }
}

/// The benchmark's documents: compact JSON objects of about 300 bytes, each a little different.
enum BenchDocuments {
    static func make(count: Int) -> [[UInt8]] { (0..<count).map(body) }

    static func body(_ index: Int) -> [UInt8] {
        let head = #"{"n":\#(index),"name":"user \#(index)","email":"user\#(index)@example.com","active":\#(index % 2 == 0),"tags":["a","b","c"],"pad":""#
        let padding = String(repeating: "abcdefghij", count: 30).prefix(max(0, 300 - head.utf8.count - 2))
        return Array((head + padding + #""}"#).utf8)
    }
}

/// Runs blocking work on a thread of its own and awaits its result.
func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do {
                continuation.resume(returning: try work())
            } catch {
                continuation.resume(throwing: error)
            }
        }
        thread.start()
    }
}

/// The direct-SQLite baseline: the rows storage would write for new documents, into a
/// `kv_default` table of storage's schema, with no process boundary.
enum DirectSQLiteWriter {
    /// Returns the seconds spent writing (table creation excluded). Without `computeRevIDs` the
    /// rows (ID, revID) are prepared before the clock starts: pure SQLite inserts.
    static func write(_ documents: [[UInt8]], to path: String, batchSize: Int,
                      computeRevIDs: Bool) throws(SofaError) -> Double {
        try? FileManager.default.removeItem(atPath: path)
        let db = try BenchSQLite(path: path)
        try db.execute("""
            PRAGMA journal_mode=WAL;
            PRAGMA synchronous=FULL;
            CREATE TABLE kvmeta (name TEXT PRIMARY KEY, lastSeq INTEGER DEFAULT 0, purgeCnt INTEGER DEFAULT 0) WITHOUT ROWID;
            CREATE TABLE kv_default (key TEXT PRIMARY KEY, sequence INTEGER, flags INTEGER DEFAULT 0,
                version BLOB, body BLOB, extra BLOB, expiration INTEGER);
            CREATE UNIQUE INDEX kv_default_seqs ON kv_default (sequence);
            CREATE INDEX kv_default_expiration ON kv_default (expiration) WHERE expiration IS NOT NULL;
            INSERT INTO kvmeta (name, lastSeq) VALUES ('default', 0);
            """)
        let insert = try db.prepare("""
            INSERT INTO kv_default (key, sequence, flags, version, body, extra, expiration)
            VALUES (?, ?, 0, ?, ?, NULL, NULL)
            """)
        let meta = try db.prepare("UPDATE kvmeta SET lastSeq = ? WHERE name = 'default'")
        let naming = ImportNaming(idField: nil, idPrefix: "bench-")
        var prepared: [(id: String, rev: [UInt8])] = []
        if !computeRevIDs {
            prepared.reserveCapacity(documents.count)
            for (index, body) in documents.enumerated() {
                prepared.append((try naming.id(number: index + 1, body: body),
                                 RevID.generate(parent: nil, deleted: false, body: try JSON.parse(body)).binary))
            }
        }
        let started = ContinuousClock.now
        var sequence: Int64 = 0
        for chunk in stride(from: 0, to: documents.count, by: batchSize) {
            try db.execute("BEGIN")
            for index in chunk..<min(chunk + batchSize, documents.count) {
                let body = documents[index]
                let row = computeRevIDs
                    ? (id: try naming.id(number: index + 1, body: body),
                       rev: RevID.generate(parent: nil, deleted: false, body: try JSON.parse(body)).binary)
                    : prepared[index]
                sequence += 1
                try insert.run([.text(row.id), .integer(sequence), .blob(row.rev), .blob(body)])
            }
            try meta.run([.integer(sequence)])
            try db.execute("COMMIT")
        }
        return seconds(ContinuousClock.now - started)
    }
}

/// A minimal SQLite connection for the benchmark: opened, used and closed by one thread.
private final class BenchSQLite {
    enum Value { case text(String), integer(Int64), blob([UInt8]) }

    final class Statement {
        let handle: OpaquePointer
        let connection: BenchSQLite
        let sql: String

        init(_ handle: OpaquePointer, _ connection: BenchSQLite, _ sql: String) {
            self.handle = handle
            self.connection = connection
            self.sql = sql
        }

        deinit { sqlite3_finalize(handle) }

        func run(_ values: [Value]) throws(SofaError) {
            sqlite3_reset(handle)
            for (offset, value) in values.enumerated() {
                let index = Int32(offset + 1)
                let rc: Int32
                switch value {
                case .text(let text): rc = sqlite3_bind_text(handle, index, text, -1, transient)
                case .integer(let number): rc = sqlite3_bind_int64(handle, index, number)
                case .blob(let bytes):
                    rc = bytes.withUnsafeBytes { sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count), transient) }
                }
                guard rc == SQLITE_OK else { throw connection.error(rc, sql) }
            }
            let rc = sqlite3_step(handle)
            guard rc == SQLITE_DONE else { throw connection.error(rc, sql) }
        }
    }

    let handle: OpaquePointer

    init(path: String) throws(SofaError) {
        var handle: OpaquePointer?
        let rc = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            throw SofaError(.sqlite, rc, "cannot open \(path): \(message)")
        }
        self.handle = handle
    }

    deinit { sqlite3_close(handle) }

    func execute(_ sql: String) throws(SofaError) {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, sql) }
    }

    func prepare(_ sql: String) throws(SofaError) -> Statement {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw error(rc, sql) }
        return Statement(statement, self, sql)
    }

    func error(_ rc: Int32, _ sql: String) -> SofaError {
        SofaError(.sqlite, rc, "\(String(cString: sqlite3_errmsg(handle))) (in: \(sql))")
    }
}

/// `sqlite3_destructor_type` SQLITE_TRANSIENT: SQLite copies bound bytes before the call returns.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
