public import SofaCore
internal import SofaWire

/// What an import does with a document whose ID is taken already.
public enum ImportConflictMode: String, Sendable, CaseIterable {
    /// The document fails with `conflict`, reported with the others.
    case fail
    /// The existing document is left as it is; counted as skipped.
    case skip
    /// The existing document is updated: the imported body becomes its current revision's child.
    /// (A document written by another client between that read and the write still fails.)
    case update
}

/// Writes documents in bulk batches, keeping up to `inFlight` batches outstanding so the gateway
/// and storage always have the next one queued while one commits.
public struct BulkImporter: Sendable {
    public struct Report: Sendable {
        public var created = 0
        public var updated = 0
        public var skipped = 0
        public var failed = 0
        public var seconds = 0.0
        public var failures: [JSON] = []

        /// The documents written: created or updated.
        public var imported: Int { created + updated }

        public var summary: JSON {
            .object(JSONObject([
                ("imported", .int(Int64(imported))), ("created", .int(Int64(created))), ("updated", .int(Int64(updated))),
                ("skipped", .int(Int64(skipped))), ("failed", .int(Int64(failed))),
                ("seconds", .double((seconds * 1000).rounded() / 1000)),
                ("docs_per_s", .int(seconds > 0 ? Int64(Double(imported) / seconds) : 0)),
            ]))
        }

        mutating func add(_ other: Report) {
            created += other.created
            updated += other.updated
            skipped += other.skipped
            failed += other.failed
            failures += other.failures
        }

        /// Every document the report accounts for.
        var done: Int { created + updated + skipped + failed }
    }

    /// One document to write: its line (or element) number, ID and body.
    struct Entry: Sendable {
        var number: Int
        var id: String
        var body: [UInt8]
    }

    let store: Collection
    let batchSize: Int
    let inFlight: Int

    public init(store: Collection, batchSize: Int, inFlight: Int) {
        self.store = store
        self.batchSize = batchSize
        self.inFlight = inFlight
    }

    /// Writes `documents`; `onConflict` says what happens to those whose ID exists. `progress`
    /// is told how many documents are done (written, skipped or failed) as batches complete.
    public func run(_ documents: [(number: Int, body: [UInt8])], naming: ImportNaming,
                    onConflict: ImportConflictMode = .fail,
                    progress: (@Sendable (_ done: Int) -> Void)? = nil) async throws(SofaError) -> Report {
        var report = Report()
        var batches: [[Entry]] = []
        var current: [Entry] = []
        for document in documents {
            do {
                let (id, body) = try naming.prepare(number: document.number, body: document.body)
                current.append(Entry(number: document.number, id: id, body: body))
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
        var outcome = report
        do {
            outcome = try await withThrowingTaskGroup(of: Report.self) { group in
                var collected = report
                var running = 0
                for batch in batches {
                    if running == inFlight, let done = try await group.next() {
                        collected.add(done)
                        progress?(collected.done)
                        running -= 1
                    }
                    group.addTask { try await Self.write(batch, to: store, onConflict: onConflict) }
                    running += 1
                }
                for try await done in group {
                    collected.add(done)
                    progress?(collected.done)
                }
                return collected
            }
        } catch let error as SofaError {
            throw error
        } catch {
            throw SofaError(.unexpectedError, "import failed: \(error)")
        }
        outcome.seconds = Self.seconds(ContinuousClock.now - started)
        outcome.failures.sort { ($0["line"]?.intValue ?? 0) < ($1["line"]?.intValue ?? 0) }
        return outcome
    }

    private static func write(_ batch: [Entry], to store: Collection, onConflict: ImportConflictMode) async throws(SofaError) -> Report {
        // Upsert: the current revisions first, in one read (a key lookup each), so each document
        // takes one write whether it exists or not. A deleted one is created again.
        var revs: [String: String] = [:]
        if onConflict == .update {
            let current = try await store.changes(since: 0, limit: 0, includeDeleted: false, docIDs: batch.map(\.id))
            for change in current.changes where !change.rev.isEmpty { revs[change.id] = change.rev }
        }
        var report = Report()
        for (entry, result) in zip(batch, try await bulk(batch, revs: revs, to: store)) {
            if let error = result.error {
                if onConflict == .skip && error.is(.conflict) {
                    report.skipped += 1
                } else {
                    report.failed += 1
                    report.failures.append(failure(line: entry.number, id: result.id, error))
                }
            } else if revs[entry.id] != nil {
                report.updated += 1
            } else {
                report.created += 1
            }
        }
        return report
    }

    /// One bulk write of `entries`, each with its parent revision in `revs` (none: a new document).
    private static func bulk(_ entries: [Entry], revs: [String: String], to store: Collection) async throws(SofaError) -> [BulkItemResult] {
        let results = try await store.bulk(entries.map { .put(id: $0.id, rev: revs[$0.id] ?? "", body: $0.body, deleted: false) })
        guard results.count == entries.count else {
            throw SofaError(.unexpectedError, "the gateway answered \(results.count) results for \(entries.count) writes")
        }
        return results
    }

    private static func failure(line: Int, id: String?, _ error: SofaError) -> JSON {
        var object = JSONObject([("line", .int(Int64(line)))])
        if let id { object["id"] = .string(id) }
        object["error"] = .object(JSONObject([("domain", .string(error.domain.rawValue)), ("code", .int(Int64(error.code))),
                                              ("message", .string(error.message))]))
        return .object(object)
    }

    private static func seconds(_ elapsed: Duration) -> Double {
        Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
