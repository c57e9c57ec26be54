public import SofaCore
import SofaWire

/// How an imported document gets its ID.
public struct ImportNaming: Sendable {
    public var idField: String?
    public var idPrefix: String?

    public init(idField: String? = nil, idPrefix: String? = nil) {
        self.idField = idField
        self.idPrefix = idPrefix
    }

    public func id(number: Int, body: [UInt8]) throws(SofaError) -> String {
        guard let idField else {
            let digits = String(number)
            return (idPrefix ?? "") + String(repeating: "0", count: max(0, 7 - digits.count)) + digits
        }
        guard let object = try JSON.parse(body).objectValue else {
            throw SofaError(.badJSON, "a document must be a JSON object")
        }
        switch object[idField] {
        case .string(let text)?: return text
        case .int(let value)?: return String(value)
        case nil: throw SofaError(.badDocID, "no field '\(idField)' to take the ID from")
        case let other?: throw SofaError(.badDocID, "field '\(idField)' is \(other.compactString), not a string or an integer")
        }
    }
}

/// Writes documents in bulk batches, keeping up to `inFlight` batches outstanding so the gateway
/// and storage always have the next one queued while one commits.
public struct BulkImporter: Sendable {
    public struct Report: Sendable {
        public var imported = 0
        public var failed = 0
        public var seconds = 0.0
        public var failures: [JSON] = []

        public var summary: JSON {
            .object(JSONObject([
                ("imported", .int(Int64(imported))), ("failed", .int(Int64(failed))),
                ("seconds", .double((seconds * 1000).rounded() / 1000)),
                ("docs_per_s", .int(seconds > 0 ? Int64(Double(imported) / seconds) : 0)),
            ]))
        }
    }

    let store: Collection
    let batchSize: Int
    let inFlight: Int

    public init(store: Collection, batchSize: Int, inFlight: Int) {
        self.store = store
        self.batchSize = batchSize
        self.inFlight = inFlight
    }

    public func run(_ documents: [(number: Int, body: [UInt8])], naming: ImportNaming) async throws(SofaError) -> Report {
        var report = Report()
        var batches: [[(number: Int, item: BulkItem)]] = []
        var current: [(number: Int, item: BulkItem)] = []
        for document in documents {
            do {
                let id = try naming.id(number: document.number, body: document.body)
                current.append((document.number, .put(id: id, rev: "", body: document.body, deleted: false)))
            } catch {
                report.failed += 1
                report.failures.append(Self.failure(line: document.number, id: nil, error))
            }
            if current.count == batchSize {
                batches.append(current)
                current = []
            }
        }
        if !current.isEmpty { batches.append(current) }
        let started = ContinuousClock.now
        let store = self.store
        let outcomes: [Report]
        do {
            outcomes = try await withThrowingTaskGroup(of: Report.self) { group in
                var collected: [Report] = []
                var running = 0
                for batch in batches {
                    if running == inFlight, let done = try await group.next() {
                        collected.append(done)
                        running -= 1
                    }
                    group.addTask { try await Self.write(batch, to: store) }
                    running += 1
                }
                for try await done in group { collected.append(done) }
                return collected
            }
        } catch let error as SofaError {
            throw error
        } catch {
            throw SofaError(.unexpectedError, "import failed: \(error)")
        }
        let elapsed = ContinuousClock.now - started
        report.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        for outcome in outcomes {
            report.imported += outcome.imported
            report.failed += outcome.failed
            report.failures += outcome.failures
        }
        report.failures.sort { ($0["line"]?.intValue ?? 0) < ($1["line"]?.intValue ?? 0) }
        return report
    }

    private static func write(_ batch: [(number: Int, item: BulkItem)], to store: Collection) async throws(SofaError) -> Report {
        let results = try await store.bulk(batch.map(\.item))
        guard results.count == batch.count else {
            throw SofaError(.unexpectedError, "the gateway answered \(results.count) results for \(batch.count) writes")
        }
        var report = Report()
        for (entry, result) in zip(batch, results) {
            if let error = result.error {
                report.failed += 1
                report.failures.append(failure(line: entry.number, id: result.id, error))
            } else {
                report.imported += 1
            }
        }
        return report
    }

    private static func failure(line: Int, id: String?, _ error: SofaError) -> JSON {
        var object = JSONObject([("line", .int(Int64(line)))])
        if let id { object["id"] = .string(id) }
        object["error"] = .object(JSONObject([("domain", .string(error.domain.rawValue)), ("code", .int(Int64(error.code))),
                                              ("message", .string(error.message))]))
        return .object(object)
    }
}

