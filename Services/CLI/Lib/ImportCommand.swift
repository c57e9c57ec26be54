internal import ArgumentParser
internal import SofaClient
internal import Foundation
internal import SofaCluster

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
