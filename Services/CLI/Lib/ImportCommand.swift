internal import ArgumentParser
internal import SofaClient
internal import Foundation
internal import SofaCluster

/// `sofa import DB FILE`: JSON lines or a JSON array, one document per line or element, written
/// in bulk transactions of `--batch` documents with a few batches in flight.
struct Import: AsyncParsableCommand {
    enum OnConflict: String, ExpressibleByArgument, CaseIterable { case fail, skip }

    static let configuration = CommandConfiguration(
        abstract: "Import documents from JSON lines or a JSON array; prints {\"imported\",\"created\",\"updated\",\"skipped\",\"failed\",…}.",
        discussion: """
            A document's ID is its own _id when it has one, else the 1-based line (or element) \
            number zero-padded to 7 digits (0000001, …); --id-field takes it from another field, \
            --id-prefix numbers every document with a prefix before the number. A _rev in a \
            document is dropped. A document whose ID exists fails with a conflict (--on-conflict \
            fail, the default), is left as it is (--on-conflict skip), or is updated from its \
            current revision (--upsert); so importing a file again with --upsert or \
            --on-conflict skip succeeds. Each failed document is reported on stderr; the exit \
            status is 1 when any failed. On a terminal, stderr shows the progress.
            """)
    @Argument var db: String
    @Argument(help: "The file, or - for stdin.") var file: String
    @Option(name: .customLong("id-field"), help: "Take each document's ID from this top-level field.") var idField: String?
    @Option(name: .customLong("id-prefix"), help: "Number every document, with this before the number, as its ID.") var idPrefix: String?
    @Flag(help: "Update documents that exist, from their current revision.") var upsert = false
    @Option(name: .customLong("on-conflict"), help: "For a document that exists: fail (reported) or skip (left as it is).")
    var onConflict: OnConflict?
    @Option(help: "Documents per bulk transaction.") var batch: Int = 1000
    @Option(name: .customLong("in-flight"), help: "Batches sent before waiting for the oldest.") var inFlight: Int = 4
    @OptionGroup var target: CollectionOption
    @OptionGroup var options: GatewayOptions

    func validate() throws {
        if idField != nil && idPrefix != nil { throw ValidationError("give --id-field or --id-prefix, not both") }
        if upsert && onConflict != nil { throw ValidationError("--upsert updates the documents that exist: give no --on-conflict with it") }
        if batch < 1 { throw ValidationError("--batch must be at least 1") }
        if inFlight < 1 { throw ValidationError("--in-flight must be at least 1") }
    }

    var conflictMode: ImportConflictMode {
        upsert ? .update : onConflict == .skip ? .skip : .fail
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
            let progress = ProgressLine("import", total: UInt64(documents.count))
            let importer = BulkImporter(store: target.store(client, db), batchSize: batch, inFlight: inFlight)
            let report = try await progress.around {
                try await importer.run(documents, naming: naming, onConflict: conflictMode) { progress.update(done: UInt64($0)) }
            }
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
