internal import ArgumentParser
internal import SofaClient
internal import Foundation

/// `sofa import DB FILE`: JSON lines or a JSON array, one document per line or element, written
/// in bulk transactions of `--batch` documents with a few batches in flight.
struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Import documents from JSON lines or a JSON array; prints {\"imported\",\"failed\",\"seconds\",\"docs_per_s\"}.",
        discussion: """
            IDs are the 1-based line (or element) number zero-padded to 7 digits (0000001, …), \
            unless --id-field takes them from a field of each document or --id-prefix puts a \
            prefix before the number. Each failed document is reported on stderr; the exit status \
            is 1 when any failed.
            """)
    @Argument var db: String
    @Argument(help: "The file, or - for stdin.") var file: String
    @Option(name: .customLong("id-field"), help: "Take each document's ID from this top-level field.") var idField: String?
    @Option(name: .customLong("id-prefix"), help: "Put this before the line number to make the ID.") var idPrefix: String?
    @Option(help: "Documents per bulk transaction.") var batch: Int = 1000
    @Option(name: .customLong("in-flight"), help: "Batches sent before waiting for the oldest.") var inFlight: Int = 4
    @OptionGroup var target: CollectionOption
    @OptionGroup var options: GatewayOptions

    func validate() throws {
        if idField != nil && idPrefix != nil { throw ValidationError("give --id-field or --id-prefix, not both") }
        if batch < 1 { throw ValidationError("--batch must be at least 1") }
        if inFlight < 1 { throw ValidationError("--in-flight must be at least 1") }
    }

    func run() async throws {
        var failed = 0
        try await reporting {
            let data: Data
            do {
                data = file == "-" ? FileHandle.standardInput.readDataToEndOfFile()
                    : try Data(contentsOf: URL(fileURLWithPath: file))
            } catch {
                throw SofaError(.cantOpenFile, "cannot read '\(file)': \(error.localizedDescription)")
            }
            let documents = try ImportSource.documents(in: Array(data))
            let client = try await options.connect()
            defer { client.close() }
            let naming = ImportNaming(idField: idField, idPrefix: idPrefix)
            let report = try await BulkImporter(store: target.store(client, db), batchSize: batch, inFlight: inFlight)
                .run(documents, naming: naming)
            for failure in report.failures.prefix(20) {
                FileHandle.standardError.write(Data((failure.compactString + "\n").utf8))
            }
            if report.failures.count > 20 {
                FileHandle.standardError.write(Data("sofa: … and \(report.failures.count - 20) more failures\n".utf8))
            }
            failed = report.failed
            printJSON(report.summary)
        }
        if failed > 0 { throw ExitCode(1) }
    }
}

/// The documents of an import file, each with its 1-based line or element number.
enum ImportSource {
    /// A file starting with `[` is one JSON array; otherwise each non-blank line is a document.
    static func documents(in bytes: [UInt8]) throws(SofaError) -> [(number: Int, body: [UInt8])] {
        let first = bytes.first { !isSpace($0) }
        if first == UInt8(ascii: "[") {
            guard let elements = try JSON.parse(bytes).arrayValue else {
                throw SofaError(.badJSON, "the import file is not a JSON array")
            }
            return elements.enumerated().map { ($0.offset + 1, $0.element.compactBytes()) }
        }
        var documents: [(number: Int, body: [UInt8])] = []
        var number = 0
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            var slice = line[...]
            while let last = slice.last, isSpace(last) { slice = slice.dropLast() }
            while let head = slice.first, isSpace(head) { slice = slice.dropFirst() }
            if !slice.isEmpty { documents.append((number, Array(slice))) }
        }
        return documents
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}

/// How an imported document gets its ID.
struct ImportNaming: Sendable {
    var idField: String?
    var idPrefix: String?

    func id(number: Int, body: [UInt8]) throws(SofaError) -> String {
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
struct BulkImporter: Sendable {
    struct Report: Sendable {
        var imported = 0
        var failed = 0
        var seconds = 0.0
        var failures: [JSON] = []

        var summary: JSON {
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

    func run(_ documents: [(number: Int, body: [UInt8])], naming: ImportNaming) async throws(SofaError) -> Report {
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
        report.seconds = seconds(ContinuousClock.now - started)
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

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}
